//! The one mapping from domain errors to gRPC statuses.

use crate::service::ServiceError;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::error;

/// The `ErrorInfo` reason of a write that may have committed.
pub const COMMIT_INDETERMINATE: &str = "COMMIT_INDETERMINATE";

impl From<ServiceError> for Status {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::InvalidArgument { field, message } => {
                let mut details = ErrorDetails::new();
                details.add_bad_request_violation(field.clone(), message.clone());
                Status::with_error_details(
                    Code::InvalidArgument,
                    format!("{field}: {message}"),
                    details,
                )
            }
            ServiceError::InvalidEntries(problems) => {
                let mut details = ErrorDetails::new();
                for p in &problems {
                    details.add_bad_request_violation(
                        p.field.clone(),
                        format!("{:?}: {}", p.entry, p.hint),
                    );
                }
                let message = problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ");
                Status::with_error_details(Code::InvalidArgument, message, details)
            }
            ServiceError::Unauthenticated(m) => Status::unauthenticated(m),
            ServiceError::PermissionDenied(m) => Status::permission_denied(m),
            ServiceError::NotFound(m) => Status::not_found(m),
            e @ ServiceError::Conflict { .. } => Status::aborted(e.to_string()),
            ServiceError::FailedPrecondition(m) => Status::failed_precondition(m),
            ServiceError::Unavailable(m) => Status::unavailable(m),
            ServiceError::ResourceExhausted(m) => Status::resource_exhausted(m),
            // not UNAVAILABLE, which says retrying is safe, nor ABORTED, which says
            // nothing was written: UNKNOWN is the code for an outcome not known, and
            // the detail lets a client tell this case from any other
            ServiceError::Indeterminate(m) => {
                let mut details = ErrorDetails::new();
                details.set_error_info(COMMIT_INDETERMINATE, "toolgate.dev", []);
                Status::with_error_details(Code::Unknown, m, details)
            }
            ServiceError::Internal(detail) => {
                // the detail may name files or queries: log it, answer generically
                error!(error = %detail, "internal error");
                Status::internal("internal error: see the server log")
            }
        }
    }
}

impl From<super::limits::LimitHit> for Status {
    fn from(hit: super::limits::LimitHit) -> Self {
        use super::limits::LimitHit;
        match hit {
            LimitHit::Deadline { .. } => Status::deadline_exceeded(hit.to_string()),
            LimitHit::Concurrency { .. } | LimitHit::Streams { .. } => {
                Status::resource_exhausted(hit.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that may have committed is told apart from one that surely did not
    /// (UNAVAILABLE, safe to retry) and from a conflict (ABORTED).
    #[test]
    fn an_indeterminate_commit_is_unknown_with_its_reason() {
        let status = Status::from(ServiceError::Indeterminate("may have committed".into()));
        assert_eq!(status.code(), Code::Unknown);
        assert_eq!(status.message(), "may have committed");
        let info = status
            .get_details_error_info()
            .expect("an ErrorInfo detail");
        assert_eq!(info.reason, COMMIT_INDETERMINATE);
    }
}

//! The one mapping from domain errors to gRPC statuses.

use crate::service::ServiceError;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::error;

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

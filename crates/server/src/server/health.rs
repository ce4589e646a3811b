//! Health as the server reports it: every service the API defines, and the hub's
//! health followed onto the services it concerns.

use tokio_util::sync::CancellationToken;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// The package whose services health answers for.
const PACKAGE: &str = "toolgate.v1";

/// The services health reports on: "" (the server as a whole) and every service of
/// `toolgate.v1` in the descriptor set reflection serves, so a new service has a
/// status without a list to extend (`every_method_is_reachable_over_http` checks each
/// is registered).
pub(crate) fn service_names() -> Vec<String> {
    let pool = prost_reflect::DescriptorPool::decode(crate::proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set built into the binary decodes");
    std::iter::once(String::new())
        .chain(
            pool.services()
                .filter(|s| s.package_name() == PACKAGE)
                .map(|s| s.full_name().to_owned()),
        )
        .collect()
}

/// Sets every service's status, the server's included.
pub(crate) async fn set_all(health: &HealthReporter, status: ServingStatus) {
    for name in service_names() {
        health.set_service_status(name, status).await;
    }
}

/// Follows the hub's health: a store unfit for writes (or unreachable) takes the
/// server and the write services to NOT_SERVING; a stale team, whose committed
/// changes may not be applied here, or a policy not confirmed with a shared store
/// within `store.max_staleness_secs`, takes the server and `PolicyService`.
pub(crate) async fn report_health(
    mut hub: tokio::sync::watch::Receiver<crate::hub::HubHealth>,
    health: HealthReporter,
    stop: CancellationToken,
) {
    loop {
        let (store_ok, current) = {
            let h = hub.borrow_and_update();
            (h.writable(), h.current())
        };
        if stop.is_cancelled() {
            return;
        }
        let status = |ok: bool| {
            if ok {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            }
        };
        for (name, ok) in [
            ("", store_ok && current),
            ("toolgate.v1.AdminService", store_ok),
            ("toolgate.v1.UserSettingsService", store_ok),
            ("toolgate.v1.PolicyService", current),
        ] {
            health.set_service_status(name, status(ok)).await;
        }
        tokio::select! {
            changed = hub.changed() => if changed.is_err() { return },
            () = stop.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::{AdminServiceServer, Api, PolicyRouter, ServerInfoServiceServer};
    use tonic::server::NamedService;

    #[test]
    fn health_names_every_registered_service_and_the_server() {
        let names = service_names();
        assert_eq!(
            names.first().map(String::as_str),
            Some(""),
            "the server first"
        );
        for registered in [
            <AdminServiceServer<Api> as NamedService>::NAME,
            <PolicyRouter as NamedService>::NAME,
            <ServerInfoServiceServer<Api> as NamedService>::NAME,
        ] {
            assert!(
                names.iter().any(|n| n == registered),
                "{registered} missing from {names:?}"
            );
        }
        assert!(
            names.iter().skip(1).all(|n| n.starts_with("toolgate.v1.")),
            "only toolgate's services: {names:?}"
        );
    }
}

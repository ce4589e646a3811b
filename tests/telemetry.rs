//! Telemetry: the real binary exports a span per RPC to an OTLP collector, and a
//! SIGTERM stops it gracefully with the buffered spans flushed (the batch exporter
//! would otherwise wait seconds before sending them).

mod common;

use common::*;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::sync::mpsc;
use toolgate::proto::v1 as pb;

/// A minimal OTLP collector: hands over the name and attributes of every span.
struct Collector(mpsc::UnboundedSender<(String, String)>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let attrs = format!("{:?}", span.attributes);
                    let _ = self.0.send((span.name, attrs));
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

// multi-threaded: the collector must answer while this test blocks on the child
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_the_collector_and_sigterm_flushes_them() {
    let (tx, mut spans) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector_addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Collector(tx)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(&dir.path().join("data"));
    config.log.format = toolgate::config::LogFormat::Json;
    config.telemetry.otlp_endpoint = Some(format!("http://{collector_addr}"));
    let path = dir.path().join("toolgate.yaml");
    std::fs::write(&path, serde_norway::to_string(&config).unwrap()).unwrap();
    let (mut child, addr) = spawn_binary(&path);

    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut policy = PolicyServiceClient::with_interceptor(channel, Auth::new("alice-token"));
    policy
        .evaluate(pb::EvaluateRequest {
            team_id: TEAM.into(),
            user_id: "alice".into(),
            call: Some(mcp("github", "create_issue")),
            explain: false,
            agent: None,
        })
        .await
        .unwrap();

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "graceful stop exits 0, got {exit:?}");
    let (name, attrs) = tokio::time::timeout(std::time::Duration::from_secs(30), spans.recv())
        .await
        .expect("no span reached the collector within 30 s")
        .expect("a span was exported");
    assert_eq!(name, "rpc");
    assert!(
        attrs.contains("/toolgate.v1.PolicyService/Evaluate"),
        "{attrs}"
    );
}

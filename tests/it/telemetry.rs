//! Telemetry: the real binary exports a span per RPC to an OTLP collector (a child of
//! the caller's trace when the call carries a W3C `traceparent`, with the store's
//! operations as spans under it), and a SIGTERM stops it gracefully with the buffered
//! spans flushed (the batch exporter would otherwise wait seconds before sending them).

use crate::support;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use support::*;
use tokio::sync::mpsc;
use toolgate::proto::v1 as pb;

/// What the collector saw of a span.
#[derive(Debug)]
struct Seen {
    name: String,
    attrs: String,
    trace_id: String,
    span_id: String,
    parent: String,
}

/// A minimal OTLP collector: hands over every span.
struct Collector(mpsc::UnboundedSender<Seen>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let _ = self.0.send(Seen {
                        attrs: format!("{:?}", span.attributes),
                        name: span.name,
                        trace_id: hex::encode(&span.trace_id),
                        span_id: hex::encode(&span.span_id),
                        parent: hex::encode(&span.parent_span_id),
                    });
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
    // the caller's trace: the server's span joins it
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let mut request = tonic::Request::new(pb::EvaluateRequest {
        approval: None,
        team_id: TEAM.into(),
        user_id: "alice".into(),
        call: Some(mcp("github", "create_issue")),
        explain: false,
        agent: None,
        client: String::new(),
        tool_use_id: String::new(),
    });
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{caller_trace}-{caller_span}-01")
            .parse()
            .unwrap(),
    );
    policy.evaluate(request).await.unwrap();

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "graceful stop exits 0, got {exit:?}");
    let mut seen = Vec::new();
    let rpc = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            let span = spans.recv().await.expect("a span was exported");
            if span.name == "rpc" {
                return span;
            }
            seen.push(span);
        }
    })
    .await
    .expect("no rpc span reached the collector within 30 s");
    assert!(
        rpc.attrs.contains("/toolgate.v1.PolicyService/Evaluate"),
        "{rpc:?}"
    );
    assert_eq!(
        rpc.trace_id, caller_trace,
        "the call's span joins the caller's trace"
    );
    assert_eq!(rpc.parent, caller_span);
    // the store's reads for the call are spans under it (exported before it: they end first)
    while let Ok(span) = spans.try_recv() {
        seen.push(span);
    }
    assert!(
        seen.iter()
            .any(|s| s.name == "store" && s.parent == rpc.span_id && s.trace_id == caller_trace),
        "no store span under the rpc span: {seen:?}"
    );
}

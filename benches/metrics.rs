//! What recording one call costs with the metrics endpoint on: the RPC counter and
//! histogram through the per-method handles the server uses, against the label
//! lookup it used before (the method copied into a `String`, the series found by
//! hashing its labels), and one decision counted.
//!
//! `cargo bench -p toolgate-benches --bench metrics`

use criterion::Criterion;
use std::hint::black_box;
use std::time::Duration;
use toolgate::metrics::{self, RPC_DURATION, RPC_REQUESTS};
use toolgate::policy::{Outcome, Reason};

const PATH: &str = "/toolgate.v1.PolicyService/Evaluate";

fn main() {
    metrics::install(toolgate::grpc::served_paths()).expect("the recorder installs");
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("metrics");
    let elapsed = Duration::from_micros(120);
    g.bench_function("rpc_handles", |b| {
        b.iter(|| {
            if let Some(handles) = metrics::rpc(black_box(PATH)) {
                handles.record(tonic::Code::Ok, elapsed);
            }
        })
    });
    g.bench_function("rpc_label_lookup", |b| {
        b.iter(|| {
            let method = black_box(PATH).to_owned();
            ::metrics::counter!(RPC_REQUESTS, "method" => method.clone(), "code" => "OK")
                .increment(1);
            ::metrics::histogram!(RPC_DURATION, "method" => method).record(elapsed.as_secs_f64());
        })
    });
    g.bench_function("decision", |b| {
        b.iter(|| metrics::decision(black_box(Outcome::Allow), black_box(Reason::Allowlisted)))
    });
    g.finish();
    c.final_summary();
}

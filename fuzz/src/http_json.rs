//! A Connect call's JSON body as the HTTP layer reads it, without a server: the
//! first byte picks the method, the rest is the body. Never panics, never nests past
//! its limit, and what it reads writes back to JSON that reads to the same bytes.

use std::sync::LazyLock;
use toolgate::http::HttpLayer;

static LAYER: LazyLock<(HttpLayer, Vec<String>)> = LazyLock::new(|| {
    let layer = HttpLayer::new(&Default::default(), &Default::default())
        .expect("the descriptor set decodes");
    let mut paths: Vec<String> = layer.methods().into_iter().map(|(p, _)| p).collect();
    paths.sort();
    (layer, paths)
});

/// One input, as libFuzzer hands it over.
pub fn run(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let (layer, paths) = &*LAYER;
    let path = &paths[which as usize % paths.len()];
    let Ok(bytes) = layer.json_to_request(path, body) else {
        return;
    };
    let json = layer
        .request_to_json(path, &bytes)
        .expect("a request read from JSON writes back to JSON");
    let again = layer
        .json_to_request(path, &json)
        .expect("the JSON written reads back");
    let json_again = layer.request_to_json(path, &again).expect("writes again");
    assert_eq!(json, json_again, "{path}: JSON → protobuf → JSON is stable");
}

//! Generates the gRPC code from the repository's top-level `proto/` (buf's module
//! root, beside the workspace's `Cargo.toml`) with a vendored protoc, so a fresh
//! machine needs no system protobuf compiler.

use std::path::{Path, PathBuf};

/// The API's files, relative to the module root.
const FILES: [&str; 7] = [
    "toolgate/v1/settings.proto",
    "toolgate/v1/service.proto",
    "toolgate/v1/tokens.proto",
    "toolgate/v1/decisions.proto",
    "toolgate/v1/principal.proto",
    "toolgate/v1/approvals.proto",
    "toolgate/v1/pins.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest.join("../../proto");
    if !root.join("buf.yaml").is_file() {
        // this crate is built inside its repository only (`publish = false`)
        return Err(format!(
            "the API's .proto files are not at {}: toolgate-proto builds from the \
             repository's top-level proto/ directory; build it from a clone of the \
             whole repository",
            root.display()
        )
        .into());
    }
    println!("cargo:rerun-if-changed={}", root.display());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let include = protoc_bin_vendored::include_path()?;
    let files: Vec<PathBuf> = FILES.iter().map(|f| root.join(Path::new(f))).collect();
    tonic_prost_build::configure()
        // a request that does not decode is INVALID_ARGUMENT (src/codec.rs)
        .codec_path("crate::codec::Codec")
        .file_descriptor_set_path(out_dir.join("toolgate_descriptor.bin"))
        .compile_with_config(config, &files, &[root, include])?;
    Ok(())
}

//! Generates the gRPC code from `proto/` with a vendored protoc, so a fresh
//! machine needs no system protobuf compiler.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let include = protoc_bin_vendored::include_path()?;
    tonic_prost_build::configure()
        // a request that does not decode is INVALID_ARGUMENT (src/codec.rs)
        .codec_path("crate::codec::Codec")
        .file_descriptor_set_path(out_dir.join("toolgate_descriptor.bin"))
        .compile_with_config(
            config,
            &[
                PathBuf::from("proto/toolgate/v1/settings.proto"),
                PathBuf::from("proto/toolgate/v1/service.proto"),
                PathBuf::from("proto/toolgate/v1/tokens.proto"),
                PathBuf::from("proto/toolgate/v1/decisions.proto"),
                PathBuf::from("proto/toolgate/v1/principal.proto"),
                PathBuf::from("proto/toolgate/v1/approvals.proto"),
                PathBuf::from("proto/toolgate/v1/pins.proto"),
            ],
            &[PathBuf::from("proto"), include],
        )?;
    Ok(())
}

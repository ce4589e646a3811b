//! The protobuf codec of every toolgate service: prost's, except that a request
//! that does not decode (invalid UTF-8 in a string, a truncated field) is the
//! client's error, `INVALID_ARGUMENT`, where tonic-prost answers `INTERNAL`.

use prost::Message;
use std::marker::PhantomData;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};
use tonic_types::StatusExt;

/// Encodes `T`, decodes `U`; named by `build.rs` as the codec of the generated code.
#[derive(Debug, Clone, Copy)]
pub struct Codec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = tonic_prost::ProstEncoder<T>;
    type Decoder = RequestDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        tonic_prost::ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        RequestDecoder(PhantomData)
    }
}

/// Decodes `U`, a bad message being `INVALID_ARGUMENT`.
#[derive(Debug, Clone, Copy)]
pub struct RequestDecoder<U>(PhantomData<U>);

impl<U> Default for RequestDecoder<U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<U: Message + Default> Decoder for RequestDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(decode_error)
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// A message that does not decode: the client sent it, so `INVALID_ARGUMENT`, with
/// prost's account of where (it names the message and field, e.g.
/// `EvaluateRequest.team_id: invalid string value: data is not UTF-8 encoded`).
pub fn decode_error(e: prost::DecodeError) -> Status {
    let mut details = tonic_types::ErrorDetails::new();
    let message = e.to_string();
    details.add_bad_request_violation("request", message.clone());
    Status::with_error_details(
        tonic::Code::InvalidArgument,
        format!("{message}: send a valid protobuf message (strings must be UTF-8)"),
        details,
    )
}

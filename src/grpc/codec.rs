//! The protobuf codec of every toolgate service: prost's, except that a request
//! that does not decode (invalid UTF-8 in a string, a truncated field) is the
//! client's error, `INVALID_ARGUMENT`, where tonic-prost answers `INTERNAL`.

use prost::Message;
use std::marker::PhantomData;
use tonic::Status;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};

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
        U::decode(buf).map(Some).map_err(super::error::decode_error)
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

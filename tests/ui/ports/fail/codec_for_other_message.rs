// A codec for one message cannot carry another.
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan")]
pub struct Scan {
    pub ranges: Vec<f32>,
}

/// A codec that only knows `Scan`.
pub struct ScanCodec;

impl Codec<Scan> for ScanCodec {
    const NAME: &'static str = "scan";
    type Encoded = Scan;
    fn from_params(_: &CodecParams) -> Result<Self, CodecError> { Ok(ScanCodec) }
    fn params(&self) -> CodecParams { CodecParams::new() }
    fn fidelity(&self) -> Fidelity { Fidelity::LOSSLESS }
    fn encode(&self, scan: &Scan) -> Result<Scan, CodecError> { Ok(scan.clone()) }
    fn decode(&self, scan: &Scan) -> Result<Scan, CodecError> { Ok(scan.clone()) }
}

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Compressed<Image, ScanCodec>>,
}

fn main() {}

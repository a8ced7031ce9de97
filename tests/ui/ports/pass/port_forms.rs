// Every port form, with built-in and user-defined messages and codecs.
use serde::{Deserialize, Serialize};
use streamwire::msgs::{Jpeg, Zstd};
use streamwire::prelude::*;
use streamwire::{Direction, PayloadForm, PortType};

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan")]
pub struct Scan {
    pub ranges: Vec<u8>,
}

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
pub struct ScanBytes {
    pub bytes: Vec<u8>,
}

/// A user codec for a user message.
pub struct Identity;

impl Codec<Scan> for Identity {
    const NAME: &'static str = "identity";
    type Encoded = ScanBytes;
    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        params.expect_only(Self::NAME, &[])?;
        Ok(Identity)
    }
    fn params(&self) -> CodecParams {
        CodecParams::new()
    }
    fn fidelity(&self) -> Fidelity {
        Fidelity::LOSSLESS
    }
    fn encode(&self, scan: &Scan) -> Result<ScanBytes, CodecError> {
        Ok(ScanBytes { bytes: scan.ranges.clone() })
    }
    fn decode(&self, bytes: &ScanBytes) -> Result<Scan, CodecError> {
        Ok(Scan { ranges: bytes.bytes.clone() })
    }
}

impl DefaultCodec for Scan {
    type Codec = Identity;
}

#[derive(Module)]
pub struct Everything {
    pub raw_out: Out<Image>,
    pub compressible_out: Out<Compressed<Image>>,
    pub explicit_codec_out: Out<Compressed<Image, Jpeg>>,
    pub lossless_image_out: Out<Compressed<Image, Zstd>>,
    pub depth_out: Out<Compressed<DepthImage>>,
    pub scan_out: Out<Compressed<Scan>>,
    pub pixels_in: In<Image>,
    pub bytes_in: In<Compressed<Image>>,
    pub zstd_bytes_in: In<Compressed<Image, Zstd>>,
    pub depth_in: In<DepthImage>,
    pub depth_bytes_in: In<Compressed<DepthImage, Zstd>>,
    pub scan_bytes_in: In<Compressed<Scan, Identity>>,
    pub cloud_in: In<PointCloud>,
    pub odometry_in: In<Odometry>,
    pub compressed_image_in: In<CompressedImage>,
}

fn assert_port<P: PortType>(direction: Direction, codec: Option<&str>) {
    assert_eq!(P::DIRECTION, direction);
    let form = <P::Payload as streamwire::Payload>::FORM;
    assert_eq!(form.codec().map(|c| c.name()), codec);
    if let PayloadForm::Codec(c) = form {
        assert_eq!(c.message(), <P::Message as Message>::info());
    }
}

fn main() {
    use Direction::{Input, Output};
    assert_port::<Out<Image>>(Output, None);
    assert_port::<Out<Compressed<Image>>>(Output, Some("jpeg"));
    assert_port::<Out<Compressed<DepthImage>>>(Output, Some("zstd"));
    assert_port::<In<Compressed<Image, Zstd>>>(Input, Some("zstd"));
    assert_port::<In<Compressed<Scan>>>(Input, Some("identity"));
    assert_eq!(Everything::PORTS.len(), 15);
    assert_eq!(Scan::TYPE_NAME, "acme/Scan");
    // Without `name = ..` a message is named `<crate>/<Type>`.
    assert!(ScanBytes::TYPE_NAME.ends_with("/ScanBytes"));
}

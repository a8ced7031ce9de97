//! The codecs of the built-in messages: [`Jpeg`] and [`Zstd`].
//!
//! Parameter keys follow ROS `image_transport` where one exists (`jpeg_quality`).

use std::fmt;
use std::str::FromStr;

use streamwire_core::{Codec, CodecError, CodecParams, DefaultCodec, Fidelity, Message};

use crate::{CompressedImage, DepthImage, Image};

/// Chroma subsampling of a JPEG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subsampling {
    /// Full colour resolution (`4:4:4`).
    S444,
    /// Half horizontal colour resolution (`4:2:2`).
    S422,
    /// Half horizontal and vertical colour resolution (`4:2:0`, the usual camera choice).
    S420,
}

impl fmt::Display for Subsampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Subsampling::S444 => "4:4:4",
            Subsampling::S422 => "4:2:2",
            Subsampling::S420 => "4:2:0",
        })
    }
}

impl FromStr for Subsampling {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "4:4:4" | "444" => Ok(Subsampling::S444),
            "4:2:2" | "422" => Ok(Subsampling::S422),
            "4:2:0" | "420" => Ok(Subsampling::S420),
            other => Err(format!("`{other}` is not one of 4:4:4, 4:2:2, 4:2:0")),
        }
    }
}

/// How colour is averaged when subsampling chroma.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChromaDownsampling {
    /// Average each block of pixels (libjpeg-turbo's quality, a little slower).
    Average,
    /// Take the top-left pixel of each block (faster, ~0.2 dB worse).
    TopLeft,
}

impl fmt::Display for ChromaDownsampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChromaDownsampling::Average => "average",
            ChromaDownsampling::TopLeft => "top_left",
        })
    }
}

impl FromStr for ChromaDownsampling {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "average" => Ok(ChromaDownsampling::Average),
            "top_left" => Ok(ChromaDownsampling::TopLeft),
            other => Err(format!("`{other}` is not one of average, top_left")),
        }
    }
}

/// JPEG for 8-bit colour and greyscale images: lossy, ~20x smaller than raw at the
/// default quality 75.
///
/// Parameters: `jpeg_quality` (1..=100, default 75), `subsampling` (`4:2:0` default,
/// `4:2:2`, `4:4:4`), `chroma_downsampling` (`average` default, `top_left`), `max_width`
/// (downscale wider images keeping the aspect ratio; default `none`), `drop_alpha`
/// (`false` default: rgba8/bgra8 images are refused rather than silently losing alpha).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jpeg {
    /// 1..=100.
    pub quality: u8,
    /// Chroma subsampling.
    pub subsampling: Subsampling,
    /// Chroma averaging.
    pub chroma_downsampling: ChromaDownsampling,
    /// Downscale images wider than this.
    pub max_width: Option<u32>,
    /// Encode rgba8/bgra8 by dropping alpha (decoded as opaque).
    pub drop_alpha: bool,
}

impl Default for Jpeg {
    fn default() -> Self {
        Jpeg {
            quality: 75,
            subsampling: Subsampling::S420,
            chroma_downsampling: ChromaDownsampling::Average,
            max_width: None,
            drop_alpha: false,
        }
    }
}

impl Jpeg {
    const PARAM_KEYS: &'static [&'static str] = &[
        "jpeg_quality",
        "subsampling",
        "chroma_downsampling",
        "max_width",
        "drop_alpha",
    ];

    /// Builds a JPEG codec from text parameters (see the type's docs for the keys).
    pub fn from_params(params: &CodecParams) -> Result<Jpeg, CodecError> {
        params.expect_only("jpeg", Self::PARAM_KEYS)?;
        let mut jpeg = Jpeg::default();
        if let Some(quality) = params.parse::<u8>("jpeg_quality")? {
            if !(1..=100).contains(&quality) {
                return Err(CodecError::InvalidParam {
                    key: "jpeg_quality".to_owned(),
                    value: quality.to_string(),
                    reason: "JPEG quality goes from 1 (smallest) to 100 (best)".to_owned(),
                });
            }
            jpeg.quality = quality;
        }
        if let Some(subsampling) = params.parse::<Subsampling>("subsampling")? {
            jpeg.subsampling = subsampling;
        }
        if let Some(method) = params.parse::<ChromaDownsampling>("chroma_downsampling")? {
            jpeg.chroma_downsampling = method;
        }
        match params.get("max_width").map(str::trim) {
            None | Some("none") => {}
            Some(_) => match params.parse::<u32>("max_width")? {
                Some(0) => {
                    return Err(CodecError::InvalidParam {
                        key: "max_width".to_owned(),
                        value: "0".to_owned(),
                        reason: "a width must be at least 1 (or `none`)".to_owned(),
                    });
                }
                width => jpeg.max_width = width,
            },
        }
        if let Some(drop_alpha) = params.parse::<bool>("drop_alpha")? {
            jpeg.drop_alpha = drop_alpha;
        }
        Ok(jpeg)
    }

    /// Every parameter, defaults included.
    pub fn params(&self) -> CodecParams {
        CodecParams::new()
            .with("jpeg_quality", self.quality)
            .with("subsampling", self.subsampling)
            .with("chroma_downsampling", self.chroma_downsampling)
            .with(
                "max_width",
                self.max_width
                    .map_or_else(|| "none".to_owned(), |w| w.to_string()),
            )
            .with("drop_alpha", self.drop_alpha)
    }

    /// Lossy; downscaled when `max_width` is set.
    pub fn fidelity(&self) -> Fidelity {
        Fidelity {
            lossy: true,
            downscaled: self.max_width.is_some(),
        }
    }
}

/// Messages that JPEG can carry: 8-bit colour or greyscale pixels.
#[diagnostic::on_unimplemented(
    message = "JPEG carries 8-bit colour and greyscale images, not `{Self}`",
    label = "JPEG cannot carry `{Self}`",
    note = "JPEG would cut 16-bit depth to 8 bits; depth needs the lossless codec `Zstd`: write `Compressed<DepthImage>` (its default) or `Compressed<DepthImage, Zstd>`"
)]
pub trait JpegPixels: Message {
    /// Encodes `self` with `jpeg`.
    fn encode_jpeg(&self, jpeg: &Jpeg) -> Result<CompressedImage, CodecError>;
    /// Decodes `compressed` into `Self`.
    fn decode_jpeg(jpeg: &Jpeg, compressed: &CompressedImage) -> Result<Self, CodecError>;
}

impl<M: JpegPixels> Codec<M> for Jpeg {
    const NAME: &'static str = "jpeg";
    type Encoded = CompressedImage;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        Jpeg::from_params(params)
    }

    fn params(&self) -> CodecParams {
        Jpeg::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Jpeg::fidelity(self)
    }

    fn encode(&self, message: &M) -> Result<CompressedImage, CodecError> {
        message.encode_jpeg(self)
    }

    fn decode(&self, encoded: &CompressedImage) -> Result<M, CodecError> {
        M::decode_jpeg(self, encoded)
    }
}

impl DefaultCodec for Image {
    type Codec = Jpeg;
}

/// Lossless zstd for depth (16UC1 and 32FC1, exactly) and for images that must stay
/// exact. The encoded data is a plain zstd frame of the packed rows (little-endian for
/// depth), described by a plain format string, e.g. `"16UC1; zstd"`.
///
/// Parameter: `level` (1..=19, default 3: fast enough for camera rates).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zstd {
    /// zstd compression level, 1..=19.
    pub level: i32,
}

impl Default for Zstd {
    fn default() -> Self {
        Zstd { level: 3 }
    }
}

impl Zstd {
    /// Builds the codec from text parameters.
    pub fn from_params(params: &CodecParams) -> Result<Zstd, CodecError> {
        params.expect_only("zstd", &["level"])?;
        let mut zstd = Zstd::default();
        if let Some(level) = params.parse::<i32>("level")? {
            if !(1..=19).contains(&level) {
                return Err(CodecError::InvalidParam {
                    key: "level".to_owned(),
                    value: level.to_string(),
                    reason: "zstd levels go from 1 (fastest) to 19 (smallest)".to_owned(),
                });
            }
            zstd.level = level;
        }
        Ok(zstd)
    }

    /// Every parameter, defaults included.
    pub fn params(&self) -> CodecParams {
        CodecParams::new().with("level", self.level)
    }
}

impl Codec<DepthImage> for Zstd {
    const NAME: &'static str = "zstd";
    const STREAM_SUFFIX: &'static str = "compressedDepth";
    type Encoded = CompressedImage;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        Zstd::from_params(params)
    }

    fn params(&self) -> CodecParams {
        Zstd::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Fidelity::LOSSLESS
    }

    fn encode(&self, _depth: &DepthImage) -> Result<CompressedImage, CodecError> {
        Err(CodecError::Unsupported(
            "zstd depth encoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }

    fn decode(&self, _encoded: &CompressedImage) -> Result<DepthImage, CodecError> {
        Err(CodecError::Unsupported(
            "zstd depth decoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }
}

impl Codec<Image> for Zstd {
    const NAME: &'static str = "zstd";
    type Encoded = CompressedImage;

    fn from_params(params: &CodecParams) -> Result<Self, CodecError> {
        Zstd::from_params(params)
    }

    fn params(&self) -> CodecParams {
        Zstd::params(self)
    }

    fn fidelity(&self) -> Fidelity {
        Fidelity::LOSSLESS
    }

    fn encode(&self, _image: &Image) -> Result<CompressedImage, CodecError> {
        Err(CodecError::Unsupported(
            "zstd image encoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }

    fn decode(&self, _encoded: &CompressedImage) -> Result<Image, CodecError> {
        Err(CodecError::Unsupported(
            "zstd image decoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }
}

impl DefaultCodec for DepthImage {
    type Codec = Zstd;
}

impl JpegPixels for Image {
    fn encode_jpeg(&self, _jpeg: &Jpeg) -> Result<CompressedImage, CodecError> {
        Err(CodecError::Unsupported(
            "JPEG encoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }

    fn decode_jpeg(_jpeg: &Jpeg, _compressed: &CompressedImage) -> Result<Image, CodecError> {
        Err(CodecError::Unsupported(
            "JPEG decoding lands with the messages-and-codecs issue".to_owned(),
        ))
    }
}

//! Encoded images and their format strings.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::layout::{self, LayoutError};
use crate::{DepthEncoding, ImageEncoding};

/// An encoded image: JPEG bytes, or zstd-compressed pixels or depth, with a ROS-style
/// format string.
///
/// The format string follows ROS `image_transport`: `"rgb8; jpeg compressed bgr8"`,
/// `"mono8; jpeg compressed "`; lossless data is labelled plainly, `"16UC1; zstd"`,
/// `"32FC1; zstd"`, `"rgb8; zstd"` (no binary header in the data, unlike ROS's
/// `compressedDepth`). [`format_info`](CompressedImage::format_info) parses it.
///
/// `original_width` and `original_height` are the size of the image *before* any
/// downscale, so that a consumer of the encoded stream can rescale detections and
/// camera intrinsics; the decoded image reports its own, real size.
///
/// ```
/// use streamwire::msgs::{ImageCompression, CompressedImage, ImageEncoding, RawEncoding};
///
/// // Bytes straight from a camera that emits JPEG: pass them through as they are.
/// let jpeg_bytes = vec![0xFF, 0xD8, 0xFF, 0xD9];
/// let frame = CompressedImage::new("rgb8; jpeg compressed bgr8", jpeg_bytes, 1280, 720)?;
/// let format = frame.format_info()?;
/// assert_eq!(format.compression, ImageCompression::Jpeg);
/// assert_eq!(format.encoding, Some(RawEncoding::Image(ImageEncoding::Rgb8)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/CompressedImage", kind = sensor, crate = streamwire_core)]
#[serde(try_from = "CompressedImageRepr")]
pub struct CompressedImage {
    format: Arc<str>,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
    original_width: u32,
    original_height: u32,
}

/// The unchecked wire form of a [`CompressedImage`].
#[derive(Deserialize)]
struct CompressedImageRepr {
    format: Arc<str>,
    #[serde(with = "streamwire_core::blob")]
    data: Bytes,
    stamp: Timestamp,
    frame_id: Arc<str>,
    original_width: u32,
    original_height: u32,
}

impl TryFrom<CompressedImageRepr> for CompressedImage {
    type Error = LayoutError;

    fn try_from(repr: CompressedImageRepr) -> Result<CompressedImage, LayoutError> {
        Ok(CompressedImage::new(
            repr.format,
            repr.data,
            repr.original_width,
            repr.original_height,
        )?
        .with_stamp(repr.stamp)
        .with_frame_id(repr.frame_id))
    }
}

impl CompressedImage {
    /// Encoded `data` described by `format`, of an image that was `original_width x
    /// original_height` before encoding (both at least 1).
    ///
    /// The format string is kept as given (a relay passes it through unchanged); it is
    /// parsed by [`format_info`](CompressedImage::format_info) and by the decoders.
    pub fn new(
        format: impl Into<Arc<str>>,
        data: impl Into<Bytes>,
        original_width: u32,
        original_height: u32,
    ) -> Result<CompressedImage, LayoutError> {
        if original_width == 0 || original_height == 0 {
            return Err(LayoutError::Empty {
                width: original_width,
                height: original_height,
            });
        }
        Ok(CompressedImage {
            format: format.into(),
            data: data.into(),
            stamp: Timestamp::ZERO,
            frame_id: Arc::from(""),
            original_width,
            original_height,
        })
    }

    /// The format string as written by the producer.
    pub fn format(&self) -> &str {
        &self.format
    }

    /// The format string parsed: the encoding before compression and the compression.
    pub fn format_info(&self) -> Result<CompressedFormat, FormatError> {
        self.format.parse()
    }

    /// The encoded bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The frame id, shared (codecs pass it on without copying the string).
    pub(crate) fn frame_id_shared(&self) -> std::sync::Arc<str> {
        self.frame_id.clone()
    }

    /// Width of the image before encoding (and before any downscale).
    pub fn original_width(&self) -> u32 {
        self.original_width
    }

    /// Height of the image before encoding (and before any downscale).
    pub fn original_height(&self) -> u32 {
        self.original_height
    }
}

crate::header::stamp_and_frame_id!(impl CompressedImage);

/// How the bytes of a [`CompressedImage`] are compressed (named apart from the graph's
/// `Compression` setting, which says whether a link compresses at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ImageCompression {
    /// A JPEG (JFIF) image.
    Jpeg,
    /// A zstd frame of the packed rows (little-endian values).
    Zstd,
}

impl fmt::Display for ImageCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageCompression::Jpeg => "jpeg",
            ImageCompression::Zstd => "zstd",
        })
    }
}

/// The encoding an image had before compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RawEncoding {
    /// A colour or greyscale [`Image`](crate::Image).
    Image(ImageEncoding),
    /// A [`DepthImage`](crate::DepthImage).
    Depth(DepthEncoding),
}

impl fmt::Display for RawEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawEncoding::Image(e) => e.fmt(f),
            RawEncoding::Depth(e) => e.fmt(f),
        }
    }
}

impl FromStr for RawEncoding {
    type Err = FormatError;

    fn from_str(name: &str) -> Result<Self, FormatError> {
        if let Ok(e) = name.parse::<ImageEncoding>() {
            return Ok(RawEncoding::Image(e));
        }
        if let Ok(e) = name.parse::<DepthEncoding>() {
            return Ok(RawEncoding::Depth(e));
        }
        Err(FormatError::UnknownEncoding {
            encoding: layout::clip(name),
        })
    }
}

/// A [`CompressedImage`] format string, parsed.
///
/// Accepted forms: `"<encoding>; jpeg compressed <anything>"` (ROS `image_transport`),
/// the legacy plain `"jpeg"` (encoding unknown: the decoder chooses rgb8 or mono8 from
/// the JPEG itself), and `"<encoding>; zstd"`. PNG and ROS `compressedDepth` are named as
/// unsupported. [`Display`](fmt::Display) writes the canonical form.
///
/// ```
/// use streamwire::msgs::{CompressedFormat, ImageCompression, DepthEncoding, FormatError, RawEncoding};
///
/// let depth: CompressedFormat = "16UC1; zstd".parse()?;
/// assert_eq!(depth.encoding, Some(RawEncoding::Depth(DepthEncoding::Mm16)));
/// assert_eq!(depth.compression, ImageCompression::Zstd);
///
/// let legacy: CompressedFormat = "jpeg".parse()?;
/// assert_eq!(legacy.encoding, None);
///
/// let png = "rgb8; png compressed rgb8".parse::<CompressedFormat>();
/// assert!(matches!(png, Err(FormatError::Unsupported { .. })));
/// # Ok::<(), FormatError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompressedFormat {
    /// The encoding before compression; `None` for the legacy plain `"jpeg"`.
    pub encoding: Option<RawEncoding>,
    /// How the bytes are compressed.
    pub compression: ImageCompression,
}

impl CompressedFormat {
    /// A format with a known encoding.
    pub const fn new(encoding: RawEncoding, compression: ImageCompression) -> CompressedFormat {
        CompressedFormat {
            encoding: Some(encoding),
            compression,
        }
    }
}

impl fmt::Display for CompressedFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.encoding, self.compression) {
            (None, compression) => compression.fmt(f),
            // ROS writes the JPEG's own colour layout after "compressed": empty for grey.
            (Some(RawEncoding::Image(ImageEncoding::Mono8)), ImageCompression::Jpeg) => {
                f.write_str("mono8; jpeg compressed ")
            }
            (Some(encoding), ImageCompression::Jpeg) => {
                write!(f, "{encoding}; jpeg compressed bgr8")
            }
            (Some(encoding), ImageCompression::Zstd) => write!(f, "{encoding}; zstd"),
        }
    }
}

impl FromStr for CompressedFormat {
    type Err = FormatError;

    fn from_str(format: &str) -> Result<Self, FormatError> {
        let format = format.trim();
        if format.is_empty() {
            return Err(FormatError::Empty);
        }
        let Some((encoding, rest)) = format.split_once(';') else {
            // Legacy writers send the codec's name alone.
            return match format.to_ascii_lowercase().as_str() {
                "jpeg" | "jpg" => Ok(CompressedFormat {
                    encoding: None,
                    compression: ImageCompression::Jpeg,
                }),
                "zstd" => Err(FormatError::MissingEncoding {
                    compression: "zstd",
                }),
                "png" | "webp" | "avif" | "compresseddepth" => Err(FormatError::Unsupported {
                    compression: layout::clip(format),
                }),
                _ => Err(FormatError::UnknownCompression {
                    compression: layout::clip(format),
                }),
            };
        };
        let encoding: RawEncoding = encoding.trim().parse()?;
        let mut words = rest.split_whitespace();
        let compression = match words.next() {
            Some("jpeg") => {
                // "jpeg compressed <colour layout of the JPEG>": the tail does not change
                // how we decode (the decoder converts to the original encoding).
                match words.next() {
                    None | Some("compressed") => ImageCompression::Jpeg,
                    Some(_) => {
                        return Err(FormatError::UnknownCompression {
                            compression: layout::clip(rest.trim()),
                        });
                    }
                }
            }
            Some("zstd") if words.next().is_none() => ImageCompression::Zstd,
            Some(word @ ("png" | "compressedDepth" | "webp" | "avif")) => {
                return Err(FormatError::Unsupported {
                    compression: word.to_owned(),
                });
            }
            _ => {
                return Err(FormatError::UnknownCompression {
                    compression: layout::clip(rest.trim()),
                });
            }
        };
        Ok(CompressedFormat::new(encoding, compression))
    }
}

/// Why a [`CompressedImage`] format string could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The format string is empty.
    #[error("the format string is empty")]
    Empty,
    /// The part before `;` names no known image or depth encoding.
    #[error(
        "unknown encoding `{encoding}` in the format string (expected rgb8, bgr8, rgba8, bgra8, mono8, 16UC1 or 32FC1)"
    )]
    UnknownEncoding {
        /// The encoding as written.
        encoding: String,
    },
    /// A known compression that streamwire does not decode (PNG, ROS `compressedDepth`).
    #[error(
        "`{compression}` data is not supported: streamwire decodes JPEG and zstd (depth travels as `16UC1; zstd`)"
    )]
    Unsupported {
        /// The compression as written.
        compression: String,
    },
    /// The compression is not recognised.
    #[error("unknown compression `{compression}` (expected `jpeg compressed ...` or `zstd`)")]
    UnknownCompression {
        /// The compression as written.
        compression: String,
    },
    /// The compression needs the original encoding, which the format string lacks.
    #[error(
        "`{compression}` data needs its encoding in the format string, e.g. `16UC1; {compression}`"
    )]
    MissingEncoding {
        /// The compression.
        compression: &'static str,
    },
}

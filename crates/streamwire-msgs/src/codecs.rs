//! The codecs of the built-in messages: [`Jpeg`] and [`Zstd`], bound to the engines of
//! `streamwire-codec`.
//!
//! Both encode into a [`CompressedImage`] whose format string says what it holds
//! (`"rgb8; jpeg compressed bgr8"`, `"mono8; jpeg compressed "`, `"16UC1; zstd"`,
//! `"rgb8; zstd"`), keep the sensor stamp and frame id, and record the original size.
//! Decoders check the format string against the message they produce, so JPEG bytes
//! given to the depth decoder are an error, not garbage depth.
//!
//! Run-time errors are [`CodecError::Encode`] / [`CodecError::Decode`] whose
//! [`source`](std::error::Error::source) is the underlying error, to downcast for
//! details: the JPEG engine's `JpegError`, the zstd engine's `LosslessError`,
//! [`FormatError`](crate::FormatError) for an unusable format string, or [`DataError`].
//! Alpha through JPEG without `drop_alpha` is [`CodecError::Unsupported`].
//!
//! Parameter keys follow ROS `image_transport` where one exists (`jpeg_quality`).

use streamwire_codec::jpeg::{self as engine, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef};
use streamwire_codec::lossless;
use streamwire_core::buffer::pools;
use streamwire_core::{Codec, CodecError, CodecParams, DefaultCodec, Fidelity, Message};

use crate::compressed::{CompressedFormat, ImageCompression, RawEncoding};
use crate::raster::{Raster, RasterEncoding, RasterMessage};
use crate::{CompressedImage, DepthImage, Image, ImageEncoding};

mod budget;
mod cloud;
mod cloud_cdr;
#[cfg(feature = "h264")]
mod h264;

pub use budget::{BitrateBudget, format_bitrate, parse_bitrate};
pub use cloud::{CloudZstd, Cloudini, format as cloud_format};
pub use cloud_cdr::CdrCloudError;
#[cfg(feature = "h264")]
pub use h264::H264;

/// Chroma subsampling and chroma averaging of the JPEG engine, under the names the
/// `subsampling` and `chroma_downsampling` parameters use.
pub use streamwire_codec::jpeg::{Backend, ChromaDownsampling, Subsampling, Threads};

/// JPEG for 8-bit colour and greyscale images: lossy and small. At the defaults the 280
/// real 1280x720 frames of the test data average 42.5 KB, 65x smaller than raw rgb8
/// (`tests/real_data.rs` prints the figures).
///
/// Parameters: `jpeg_quality` (1..=100, default 75), `subsampling` (`4:2:0` default,
/// `4:2:2`, `4:4:4`), `chroma_downsampling` (`average` default, `top_left`), `max_width`
/// (downscale wider images keeping the aspect ratio; default `none`), `drop_alpha`
/// (`false` default: rgba8/bgra8 images are refused rather than silently losing alpha),
/// `threads` (`auto` default: strip-parallel encode and decode with restart markers on the
/// shared pool; a number caps the threads; `unsplit` writes files without restart markers and
/// decodes on the calling thread), `encoder` (`jpeg-encoder` default; `turbo` for
/// libjpeg-turbo, accepted only in builds with this crate's `turbo` feature; the pure-Rust
/// candidates `libjpeg-turbo-rs` and `rusty_jpeg`, only with streamwire-codec's features of
/// those names), `max_bitrate` (`none` default, or a [`BitrateBudget`] such as `6.4Mbit/s`:
/// the quality then adapts, frame by frame, within `min_quality..=jpeg_quality` and under
/// that floor the width narrows, to keep the stream under the budget), `min_quality` (the
/// budget's quality floor, 1..=`jpeg_quality`, default 20). A parameter left
/// at its default is not listed by [`Jpeg::params`] when it is one of those added later
/// (`threads`, `encoder`, `max_bitrate`; `min_quality` is listed with a budget), so plans
/// read as before.
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
    /// Threads of the strip-parallel encode and decode.
    pub threads: Threads,
    /// The library that encodes.
    pub encoder: Backend,
    /// A bit-rate budget the quality (and under its floor, the width) adapts to.
    pub budget: Option<BitrateBudget>,
}

impl Default for Jpeg {
    fn default() -> Self {
        Jpeg {
            quality: 75,
            subsampling: Subsampling::S420,
            chroma_downsampling: ChromaDownsampling::Average,
            max_width: None,
            drop_alpha: false,
            threads: Threads::Auto,
            encoder: Backend::JpegEncoder,
            budget: None,
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
        "threads",
        "encoder",
        "max_bitrate",
        "min_quality",
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
        if let Some(threads) = params.parse::<Threads>("threads")? {
            jpeg.threads = threads;
        }
        if let Some(encoder) = params.parse::<Backend>("encoder")? {
            if !encoder.is_available() {
                return Err(CodecError::InvalidParam {
                    key: "encoder".to_owned(),
                    value: encoder.to_string(),
                    reason: format!(
                        "this build has no {encoder} encoder: enable the `{}` feature of \
                         streamwire-codec",
                        encoder.feature().unwrap_or("default")
                    ),
                });
            }
            jpeg.encoder = encoder;
        }
        jpeg.budget = Self::budget_from_params(params, jpeg.quality)?;
        Ok(jpeg)
    }

    /// `max_bitrate` and `min_quality`; `min_quality` alone sets nothing (a blueprint-wide
    /// floor for the streams that have a budget).
    fn budget_from_params(
        params: &CodecParams,
        quality: u8,
    ) -> Result<Option<BitrateBudget>, CodecError> {
        let min_quality = params
            .parse::<u8>("min_quality")?
            .unwrap_or(BitrateBudget::DEFAULT_MIN_QUALITY);
        let max_bitrate = match params.get("max_bitrate").map(str::trim) {
            None | Some("none") => return Ok(None),
            Some(text) => parse_bitrate(text).map_err(|reason| CodecError::InvalidParam {
                key: "max_bitrate".to_owned(),
                value: text.to_owned(),
                reason,
            })?,
        };
        if min_quality > quality {
            return Err(CodecError::InvalidParam {
                key: "min_quality".to_owned(),
                value: min_quality.to_string(),
                reason: format!(
                    "the budget's quality floor is over the quality it starts from                      (jpeg_quality={quality}): lower min_quality or raise jpeg_quality"
                ),
            });
        }
        BitrateBudget::new(max_bitrate, min_quality).map(Some)
    }

    /// Every parameter, defaults included, except `threads` and `encoder` at their defaults.
    pub fn params(&self) -> CodecParams {
        let mut params = CodecParams::new()
            .with("jpeg_quality", self.quality)
            .with("subsampling", self.subsampling)
            .with("chroma_downsampling", self.chroma_downsampling)
            .with(
                "max_width",
                self.max_width
                    .map_or_else(|| "none".to_owned(), |w| w.to_string()),
            )
            .with("drop_alpha", self.drop_alpha);
        if self.threads != Threads::default() {
            params = params.with("threads", self.threads);
        }
        if self.encoder != Backend::default() {
            params = params.with("encoder", self.encoder);
        }
        if let Some(budget) = &self.budget {
            params = params
                .with("max_bitrate", format_bitrate(budget.max_bitrate()))
                .with("min_quality", budget.min_quality());
        }
        params
    }

    /// Lossy; downscaled when `max_width` is set or a budget may narrow the width.
    pub fn fidelity(&self) -> Fidelity {
        Fidelity {
            lossy: true,
            downscaled: self.max_width.is_some() || self.budget.is_some(),
        }
    }

    /// Where the budget's controller stands (`None` without a budget).
    pub fn adaptation(&self) -> Option<streamwire_core::Adaptation> {
        Some(self.budget.as_ref()?.adaptation(self.quality))
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

    fn adaptation(&self) -> Option<streamwire_core::Adaptation> {
        Jpeg::adaptation(self)
    }
}

impl DefaultCodec for Image {
    type Codec = Jpeg;
}

// Known by name to settings given as text (`codec=jpeg`).
streamwire_core::register_codec!(Image, Jpeg);
streamwire_core::register_codec!(Image, Zstd);
streamwire_core::register_codec!(DepthImage, Zstd);

/// Lossless zstd for depth (16UC1 and 32FC1, exactly) and for images that must stay
/// exact. The encoded data is a plain zstd frame of the packed rows (little-endian for
/// depth), described by a plain format string, e.g. `"16UC1; zstd"`.
///
/// Decoding allocates exactly the size that the message's original width and height
/// imply, after checking it against the frame; images over
/// [`Zstd::MAX_DECODED_BYTES`] are refused both ways.
///
/// Parameter: `level` (1..=19, default 3).
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

impl Jpeg {
    /// The engine's encoder options for these parameters.
    pub fn encode_options(&self) -> EncodeOptions {
        EncodeOptions {
            quality: self.quality,
            subsampling: self.subsampling,
            chroma_downsampling: self.chroma_downsampling,
            max_width: self.max_width,
            drop_alpha: self.drop_alpha,
            threads: self.threads,
            backend: self.encoder,
        }
    }
}

/// Why encoded data does not fit the decoder it was given. Returned as the
/// [`source`](std::error::Error::source) of [`CodecError::Decode`] (and of
/// [`CodecError::Encode`] for sizes), next to the engines' own errors
/// ([`JpegError`](streamwire_codec::jpeg::JpegError),
/// [`LosslessError`](streamwire_codec::lossless::LosslessError)) and
/// [`FormatError`](crate::FormatError).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The format string names data this decoder does not read (e.g. JPEG given to the
    /// depth decoder).
    #[error("the {codec} decoder of `{message}` cannot read `{format}` data")]
    WrongFormat {
        /// The codec's name.
        codec: &'static str,
        /// The message it decodes, e.g. `DepthImage`.
        message: &'static str,
        /// The format string found (clipped).
        format: String,
    },
    /// The image is larger than the zstd codec accepts.
    #[error(
        "{width}x{height} at {bytes_per_pixel} bytes per pixel exceeds the zstd codec's limit of {limit} bytes"
    )]
    TooLarge {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
        /// Bytes per pixel.
        bytes_per_pixel: u32,
        /// [`Zstd::MAX_DECODED_BYTES`].
        limit: usize,
    },
}

/// The most a decode takes from the pool before its own limits are checked (a header may
/// claim any size): a larger image grows the buffer inside the decoder, after its checks.
const MAX_POOLED_TAKE: usize = 64 << 20;

fn decode_error(error: impl std::error::Error + Send + Sync + 'static) -> CodecError {
    CodecError::Decode(Box::new(error))
}

fn encode_error(error: impl std::error::Error + Send + Sync + 'static) -> CodecError {
    CodecError::Encode(Box::new(error))
}

fn wrong_format(codec: &'static str, message: &'static str, found: &CompressedImage) -> CodecError {
    decode_error(DataError::WrongFormat {
        codec,
        message,
        format: crate::layout::clip(found.format()),
    })
}

const fn pixel_format(encoding: ImageEncoding) -> PixelFormat {
    match encoding {
        ImageEncoding::Rgb8 => PixelFormat::Rgb8,
        ImageEncoding::Bgr8 => PixelFormat::Bgr8,
        ImageEncoding::Rgba8 => PixelFormat::Rgba8,
        ImageEncoding::Bgra8 => PixelFormat::Bgra8,
        ImageEncoding::Mono8 => PixelFormat::Mono8,
    }
}

impl JpegPixels for Image {
    /// Encodes rgb8 and bgr8 as colour (`"<encoding>; jpeg compressed bgr8"`), mono8 as
    /// greyscale (`"mono8; jpeg compressed "`), rgba8 and bgra8 only with `drop_alpha`.
    /// The stamp and frame id are kept; the original size is recorded.
    fn encode_jpeg(&self, jpeg: &Jpeg) -> Result<CompressedImage, CodecError> {
        let encoding = self.encoding();
        if encoding.has_alpha() && !jpeg.drop_alpha {
            return Err(CodecError::Unsupported(format!(
                "{encoding} has an alpha channel, which JPEG cannot carry: set `drop_alpha=true` \
                 to send the colour (decoded with opaque alpha), or use the lossless `Zstd` codec"
            )));
        }
        let step = usize::try_from(self.step()).map_err(|_| {
            CodecError::Unsupported(format!("a step of {} bytes is too large", self.step()))
        })?;
        let pixels = PixelsRef::new(
            self.width(),
            self.height(),
            step,
            pixel_format(encoding),
            self.data(),
        )
        .map_err(encode_error)?;
        let mut options = jpeg.encode_options();
        if let Some(budget) = &jpeg.budget {
            let full_width = jpeg.max_width.map_or(self.width(), |w| w.min(self.width()));
            let (quality, width) = budget.setting(self.stamp(), full_width, jpeg.quality);
            options.quality = quality;
            options.max_width = width.or(options.max_width);
        }
        // Into a buffer of the process's pool of encoded images, recycled when the
        // message drops.
        let mut file = pools::encoded().take_empty(self.data().len() / 8 + 1024);
        engine::encode_into(&pixels, &options, file.vec_mut()).map_err(encode_error)?;
        if let Some(budget) = &jpeg.budget {
            budget.record(self.stamp(), file.vec_mut().len());
        }
        let format = CompressedFormat::new(RawEncoding::Image(encoding), ImageCompression::Jpeg);
        let compressed = CompressedImage::new(
            format.to_string(),
            file.freeze(),
            self.width(),
            self.height(),
        )
        .map_err(encode_error)?;
        Ok(compressed
            .with_stamp(self.stamp())
            .with_frame_id(self.frame_id_shared()))
    }

    /// Decodes into the encoding named by the format string (for the legacy plain
    /// `"jpeg"`: mono8 for a greyscale JPEG, else rgb8), at the JPEG's real size. The
    /// stamp and frame id are kept.
    fn decode_jpeg(jpeg: &Jpeg, compressed: &CompressedImage) -> Result<Image, CodecError> {
        let format = compressed.format_info().map_err(decode_error)?;
        let decoder = JpegDecoder::default().with_threads(jpeg.threads);
        let named = match (format.compression, format.encoding) {
            (ImageCompression::Jpeg, Some(RawEncoding::Image(encoding))) => Some(encoding),
            (ImageCompression::Jpeg, None) => None,
            _ => return Err(wrong_format("jpeg", "Image", compressed)),
        };
        // Read once: the pixel format of a legacy plain "jpeg", and the size of the buffer.
        let size = decoder
            .read_header(compressed.data())
            .map_err(decode_error)?;
        let encoding = match named {
            Some(encoding) => encoding,
            None if size.components == 1 => ImageEncoding::Mono8,
            None => ImageEncoding::Rgb8,
        };
        // Into a buffer of the process's pool of decoded images: a decoder's output never
        // leaves its process, and is recycled when the last consumer drops it. Taken at
        // its final length (from the header) so a recycled buffer is not zeroed again.
        let len = (size.width as usize)
            .saturating_mul(size.height as usize)
            .saturating_mul(pixel_format(encoding).bytes_per_pixel());
        let mut pixels = pools::decoded().take(len.min(MAX_POOLED_TAKE));
        let header = decoder
            .decode_into(compressed.data(), pixel_format(encoding), pixels.vec_mut())
            .map_err(decode_error)?;
        let image = Image::from_packed(header.width, header.height, encoding, pixels.freeze())
            .map_err(decode_error)?;
        Ok(image
            .with_stamp(compressed.stamp())
            .with_frame_id(compressed.frame_id_shared()))
    }
}

impl CompressedImage {
    /// Wraps JPEG bytes that a camera (or a file) already holds, without decoding or
    /// re-encoding them: the header is read (under the default decode limits) for the
    /// size and the colour layout, and the message is labelled `"rgb8; jpeg compressed
    /// bgr8"` or, for a greyscale JPEG, `"mono8; jpeg compressed "`.
    ///
    /// ```
    /// use streamwire::Codec;
    /// use streamwire::msgs::{CompressedImage, Image, ImageEncoding, Jpeg};
    ///
    /// # let camera_jpeg = Jpeg::default()
    /// #     .encode(&Image::from_packed(8, 4, ImageEncoding::Mono8, vec![128; 32])?)?
    /// #     .data()
    /// #     .clone();
    /// let frame = CompressedImage::from_jpeg(camera_jpeg)?;
    /// assert_eq!((frame.original_width(), frame.original_height()), (8, 4));
    /// assert_eq!(frame.format(), "mono8; jpeg compressed ");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_jpeg(data: impl Into<bytes::Bytes>) -> Result<CompressedImage, CodecError> {
        let data = data.into();
        let header = JpegDecoder::default()
            .read_header(&data)
            .map_err(decode_error)?;
        let encoding = if header.components == 1 {
            ImageEncoding::Mono8
        } else {
            ImageEncoding::Rgb8
        };
        let format = CompressedFormat::new(RawEncoding::Image(encoding), ImageCompression::Jpeg);
        CompressedImage::new(format.to_string(), data, header.width, header.height)
            .map_err(decode_error)
    }
}

impl Zstd {
    /// The largest image the zstd codec encodes or decodes: 256 MiB of packed pixels
    /// (an 8K 32FC1 depth image is 133 MB). It bounds what a hostile frame that declares
    /// a huge content size can make a decoder allocate; the JPEG decoder has the same
    /// default limit.
    pub const MAX_DECODED_BYTES: usize = 256 << 20;

    /// The packed size of `width x height` at `bytes_per_pixel`, within
    /// [`Zstd::MAX_DECODED_BYTES`].
    fn packed_len(width: u32, height: u32, bytes_per_pixel: u32) -> Result<usize, DataError> {
        // u32 x u32 fits u64; times the pixel size it may not.
        (u64::from(width) * u64::from(height))
            .checked_mul(u64::from(bytes_per_pixel))
            .and_then(|bytes| usize::try_from(bytes).ok())
            .filter(|&len| len <= Zstd::MAX_DECODED_BYTES)
            .ok_or(DataError::TooLarge {
                width,
                height,
                bytes_per_pixel,
                limit: Zstd::MAX_DECODED_BYTES,
            })
    }

    /// Compresses rows into a `CompressedImage` labelled `"<encoding>; zstd"`.
    fn compress<'a>(
        &self,
        rows: impl Iterator<Item = &'a [u8]>,
        encoding: RawEncoding,
        (width, height, bytes_per_pixel): (u32, u32, u32),
    ) -> Result<CompressedImage, CodecError> {
        let total = Zstd::packed_len(width, height, bytes_per_pixel).map_err(encode_error)?;
        let data = lossless::compress_rows(rows, total, self.level).map_err(encode_error)?;
        let format = CompressedFormat::new(encoding, ImageCompression::Zstd);
        CompressedImage::new(format.to_string(), data, width, height).map_err(encode_error)
    }

    /// Decompresses `compressed` into exactly the packed size its original size implies.
    fn decompress(
        compressed: &CompressedImage,
        bytes_per_pixel: u32,
    ) -> Result<Vec<u8>, CodecError> {
        let expected = Zstd::packed_len(
            compressed.original_width(),
            compressed.original_height(),
            bytes_per_pixel,
        )
        .map_err(decode_error)?;
        lossless::decompress_exact(compressed.data(), expected).map_err(decode_error)
    }
}

/// One impl for both raster messages: `"<encoding>; zstd"` (`"16UC1; zstd"`, `"rgb8; zstd"`,
/// ...) holding the packed rows (little-endian values), exactly.
impl<M: RasterMessage> Codec<M> for Zstd {
    const NAME: &'static str = "zstd";
    const STREAM_SUFFIX: &'static str = <M::Encoding as RasterEncoding>::COMPRESSED_SUFFIX;
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

    fn encode(&self, raster: &M) -> Result<CompressedImage, CodecError> {
        let encoding = raster.encoding();
        let size = (raster.width(), raster.height(), encoding.bytes_per_pixel());
        Ok(self
            .compress(raster.rows(), encoding.raw(), size)?
            .with_stamp(raster.stamp())
            .with_frame_id(raster.frame_id_shared()))
    }

    fn decode(&self, compressed: &CompressedImage) -> Result<M, CodecError> {
        let encoding = match compressed.format_info().map_err(decode_error)? {
            CompressedFormat {
                encoding: Some(raw),
                compression: ImageCompression::Zstd,
            } => <M::Encoding as RasterEncoding>::from_raw(raw),
            _ => None,
        };
        let Some(encoding) = encoding else {
            return Err(wrong_format(
                "zstd",
                <M::Encoding as RasterEncoding>::MESSAGE,
                compressed,
            ));
        };
        let data = Zstd::decompress(compressed, encoding.bytes_per_pixel())?;
        let raster = Raster::from_packed(
            compressed.original_width(),
            compressed.original_height(),
            encoding,
            data,
        )
        .map_err(decode_error)?;
        Ok(M::from(
            raster
                .with_stamp(compressed.stamp())
                .with_frame_id(compressed.frame_id_shared()),
        ))
    }
}

impl DefaultCodec for DepthImage {
    type Codec = Zstd;
}

// Compile-time check that each encoding and its engine pixel format agree on pixel size.
const _: () = {
    let mut i = 0;
    while i < ImageEncoding::ALL.len() {
        let encoding = ImageEncoding::ALL[i];
        assert!(encoding.bytes_per_pixel() as usize == pixel_format(encoding).bytes_per_pixel());
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_parameter_parses_and_is_listed_only_when_set() {
        let default = Jpeg::default();
        assert!(default.params().get("threads").is_none());
        for (text, threads) in [
            ("auto", Threads::Auto),
            ("unsplit", Threads::Unsplit),
            ("3", "3".parse::<Threads>().expect("3 threads")),
        ] {
            let jpeg = Jpeg::from_params(&CodecParams::new().with("threads", text))
                .expect("valid threads");
            assert_eq!(jpeg.threads, threads);
            assert_eq!(Jpeg::from_params(&jpeg.params()).expect("rebuild"), jpeg);
        }
        let turbo = Jpeg::from_params(&CodecParams::new().with("encoder", "turbo"));
        if Backend::Turbo.is_available() {
            let turbo = turbo.expect("turbo in this build");
            assert_eq!(turbo.encoder, Backend::Turbo);
            assert_eq!(turbo.params().get("encoder"), Some("turbo"));
        } else {
            assert!(matches!(turbo, Err(CodecError::InvalidParam { .. })));
        }
        assert!(default.params().get("encoder").is_none());
        for bad in ["0", "-1", "many"] {
            assert!(matches!(
                Jpeg::from_params(&CodecParams::new().with("threads", bad)),
                Err(CodecError::InvalidParam { .. })
            ));
        }
    }
}

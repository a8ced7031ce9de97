//! JPEG engine: encode with `jpeg-encoder`, decode with `zune-jpeg` behind a structural pre-scan
//! that enforces [`DecodeLimits`] before anything proportional to the declared size is allocated.
//!
//! ```
//! use streamwire_codec::jpeg::{
//!     encode, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef,
//! };
//!
//! // A 32x16 RGB gradient, rows packed (step = width * 3).
//! let (width, height) = (32u32, 16u32);
//! let mut data = Vec::new();
//! for y in 0..height {
//!     for x in 0..width {
//!         data.extend_from_slice(&[(x * 8) as u8, (y * 16) as u8, 128]);
//!     }
//! }
//! let pixels = PixelsRef::new(width, height, 32 * 3, PixelFormat::Rgb8, &data)?;
//! let jpeg = encode(&pixels, &EncodeOptions::default())?;
//! assert_eq!((jpeg.width, jpeg.height), (32, 16));
//!
//! let decoded = JpegDecoder::default().decode(&jpeg.data, PixelFormat::Bgr8)?;
//! assert_eq!(decoded.data.len(), 32 * 16 * 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod decode;
pub(crate) mod encode;
#[cfg(feature = "libjpeg-turbo-rs")]
mod ljt_rs;
mod markers;
mod parallel_decode;
mod pixels;
mod quality;
#[cfg(feature = "rusty_jpeg")]
mod rusty;
mod strips;
#[cfg(feature = "turbo")]
mod turbo;

use std::fmt;
use std::num::NonZeroUsize;
use std::str::FromStr;

pub use decode::{DecodeLimits, DecodedJpeg, JpegDecoder, JpegHeader};
pub use encode::{EncodedJpeg, encode, encode_into, max_encoded_len};
pub use pixels::{LayoutError, PixelFormat, PixelsRef};
pub use quality::estimate_quality;

/// Chroma subsampling of a colour JPEG (greyscale JPEGs have no chroma).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Subsampling {
    /// Full-resolution chroma (largest files, no colour bleeding at sharp edges).
    S444,
    /// Chroma halved horizontally.
    S422,
    /// Chroma halved in both directions: what cameras and libjpeg default to below quality 90.
    #[default]
    S420,
}

impl fmt::Display for Subsampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::S444 => "4:4:4",
            Self::S422 => "4:2:2",
            Self::S420 => "4:2:0",
        })
    }
}

impl FromStr for Subsampling {
    type Err = String;

    /// Accepts `4:4:4`, `4:2:2`, `4:2:0` and the same without colons.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "4:4:4" | "444" => Ok(Self::S444),
            "4:2:2" | "422" => Ok(Self::S422),
            "4:2:0" | "420" => Ok(Self::S420),
            other => Err(format!(
                "unknown chroma subsampling `{other}`: expected 4:4:4, 4:2:2 or 4:2:0"
            )),
        }
    }
}

/// How the encoder reduces each 2x2 (or 2x1) block of chroma samples to one when subsampling.
///
/// The default is [`Average`](Self::Average), chosen by measurement (release build, 2-core
/// machine shared with two other builds, so times are noisy; `cargo run --release -p
/// streamwire-codec --example measure_jpeg`, the two methods interleaved frame by frame):
///
/// | q75 4:2:0 | `Average` | `TopLeft` |
/// |---|---|---|
/// | 280 cockatoo 720p frames: encode ms, median (3 runs) | 6.93 / 6.59 / 7.24 | 5.76 / 5.38 / 5.89 |
/// | same: bytes/frame, mean | 42 498 | 42 485 |
/// | same: PSNR dB, mean / min | 49.74 / 46.48 | 49.65 / 46.40 |
/// | `milk_cartoon_rgb.png` 640x480: bytes, PSNR dB | 36 143, 31.79 | 36 679, 31.46 |
/// | `table_scene_mug_rgb.png` 640x480: bytes, PSNR dB | 94 004, 18.78 | 101 665, 17.68 |
///
/// Averaging costs about 20% more encode time (median per-frame ratio 1.20-1.22, ~1.3 ms per
/// 720p frame). The cockatoo frames were JPEG-compressed before (their chroma is already
/// smooth), and there it gains only +0.09 dB at equal size. On the two images that never went
/// through JPEG it gains +0.33 and +1.1 dB *and* makes files 1.5% and 7.5% smaller (the mug
/// image's invalid points have random colours, a worst case for chroma aliasing). Smaller
/// and better for a millisecond decides it, and averaging also matches libjpeg(-turbo), which
/// produces the JPEGs users compare against (OpenCV, ROS `image_transport`). Choose
/// [`TopLeft`](Self::TopLeft) when encode time matters more than those bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChromaDownsampling {
    /// Box-average each block, as libjpeg(-turbo) does: less chroma aliasing, smaller files.
    Average,
    /// Keep the top-left sample of each block (jpeg-encoder's own default): about 20% faster.
    TopLeft,
}

impl Default for ChromaDownsampling {
    /// [`Average`](Self::Average), chosen by measurement: see the type's documentation.
    fn default() -> Self {
        Self::Average
    }
}

impl fmt::Display for ChromaDownsampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Average => "average",
            Self::TopLeft => "top_left",
        })
    }
}

impl FromStr for ChromaDownsampling {
    type Err = String;

    /// Accepts `average` and `top_left`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "average" => Ok(Self::Average),
            "top_left" => Ok(Self::TopLeft),
            other => Err(format!(
                "unknown chroma downsampling `{other}`: expected average or top_left"
            )),
        }
    }
}

/// How many threads encode or decode one image, in horizontal strips of whole MCU rows.
///
/// Encoding with anything but [`Unsplit`](Self::Unsplit) writes a restart interval of one MCU
/// row (16 pixel rows for 4:2:0, 8 for 4:2:2, 4:4:4 and greyscale) and restart markers between
/// rows: still one standard baseline JPEG that every decoder reads, whose strips can be coded
/// and decoded independently. The bytes do not depend on the thread count, only on the image
/// and the other options; the pixels they decode to are those of the unsplit encode.
///
/// The threads are those of rayon's global pool (shared, created once), never spawned per
/// frame.
///
/// # The rule of [`Auto`](Self::Auto)
///
/// Splitting a frame buys wall time only when a core is idle, and always costs CPU (a
/// fork/join on the pool, whose workers spin before they sleep, one decoder set up per
/// piece). So `Auto` splits only frames whose work is worth it: it cuts a frame into as
/// many pieces as the pool has threads **but no piece under
/// [`AUTO_ENCODE_MIN_PIXELS_PER_PIECE`] (1 000 000) pixels to encode, or
/// [`AUTO_DECODE_MIN_PIXELS_PER_PIECE`] (4 000 000) pixels to decode** ([`auto_pieces`]).
/// On two threads: 1280x720 and smaller are encoded in one piece, 1920x1080 and larger in
/// two; up to 2560x1440 decoded in one piece, 3840x2160 in two. An encode in one piece
/// still writes the restart markers, on the calling thread (so `Auto`'s bytes are those of
/// every split count, and a receiver may still decode them in pieces): measured, that costs
/// no CPU against `Unsplit` (`measure_threads`' encode row `1`: x0.93-x1.01 at every size) and
/// 0.25% more bytes.
///
/// Chosen by measurement (`cargo run --release -p streamwire-codec --example
/// measure_threads -- 3 30 20`): the shipped encoder (q75 4:2:0) and decoder on the real
/// cockatoo frames cropped or tiled, frames 20 ms apart, process CPU (every thread) per
/// frame, contenders interleaved, median of 3 rounds; a 2-core machine shared with two
/// other builds (load average 3.6-5.7), so wall times were too noisy to show the gain of a
/// split and only the CPU decides. Ratios are CPU against `Unsplit`; in brackets a second
/// run (5 rounds of 60 frames 2 ms apart, load 6.1-6.4):
///
/// | frame | encode `Unsplit` ms | encode `2` | decode `Unsplit` ms | decode `2` |
/// |---|---|---|---|---|
/// | 320x240 | 0.52 | x1.47 (x1.40) | 0.19 | x2.35 (x2.61) |
/// | 640x360 | 1.68 | x1.04 (x1.05) | 0.41 | x1.68 (x1.41) |
/// | 1280x720 | 6.17 | x1.04 (x1.02) | 1.81 | x1.45 (x1.27) |
/// | 2560x1440 | 24.2 | x1.02 (x1.00) | 7.04 | x1.37 (x1.25) |
/// | 3840x2160 (3 frames) | 56.9 | x0.93 | 21.5 | x1.03 |
///
/// Encoding in pieces costs 0-5% more CPU from 640x360 up (40-47% at 320x240), so splitting
/// is for frames whose encode on one thread takes long enough to matter (about 13 ms at
/// 1920x1080); decoding in pieces costs 25-45% more CPU from 1280x720 to 2560x1440 (more below),
/// so only frames of 8 MP and more (a one-thread decode of about 20 ms) are split. The
/// 3840x2160 row had 3 frames a round and swung by 20% between rounds: read it as "about
/// even". Choose a fixed count to
/// trade CPU for latency on any frame, or `Unsplit` for files without restart markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Threads {
    /// Encode: one entropy-coded segment without restart markers on the calling thread (the
    /// files of jpeg-encoder alone). Decode: one zune-jpeg decode on the calling thread.
    Unsplit,
    /// The threads of the shared pool (the cores available), capped by the number of strips
    /// and by the frame's size: see [the rule](Self#the-rule-of-auto).
    #[default]
    Auto,
    /// At most this many strips in flight at once, capped by the number of strips. `1`
    /// still writes restart markers, on the calling thread.
    Fixed(NonZeroUsize),
}

impl Threads {
    /// How many pieces to cut an image of `pixels` pixels in `strips` strips into: at least
    /// 1, at most `strips`; for [`Auto`](Self::Auto), [`auto_pieces`] of the shared pool's
    /// threads with at least `min_pixels_per_piece` pixels a piece.
    pub(crate) fn pieces(self, strips: usize, pixels: u64, min_pixels_per_piece: u64) -> usize {
        let wanted = match self {
            Self::Unsplit => 1,
            Self::Auto => auto_pieces(rayon::current_num_threads(), pixels, min_pixels_per_piece),
            Self::Fixed(count) => count.get(),
        };
        wanted.min(strips).max(1)
    }
}

/// The fewest pixels each piece of an image must have before [`Threads::Auto`] splits an
/// encode: 1 000 000 (so 1280x720 and smaller are encoded in one piece, 1920x1080 in two).
/// See [`Threads`] for the measurements behind it.
pub const AUTO_ENCODE_MIN_PIXELS_PER_PIECE: u64 = 1_000_000;

/// The fewest pixels each piece of an image must have before [`Threads::Auto`] splits a
/// decode: 4 000 000 (so 2560x1440 and smaller are decoded in one piece, 3840x2160 in
/// two). See [`Threads`] for the measurements behind it.
pub const AUTO_DECODE_MIN_PIXELS_PER_PIECE: u64 = 4_000_000;

/// How many pieces [`Threads::Auto`] cuts an image of `pixels` pixels into with `threads`
/// threads: as many as have `min_pixels_per_piece` pixels each
/// ([`AUTO_ENCODE_MIN_PIXELS_PER_PIECE`] to encode, [`AUTO_DECODE_MIN_PIXELS_PER_PIECE`] to
/// decode), at most `threads`, at least 1 (one piece: coded on the calling thread).
///
/// ```
/// use streamwire_codec::jpeg::{AUTO_ENCODE_MIN_PIXELS_PER_PIECE as MIN, auto_pieces};
/// assert_eq!(auto_pieces(2, 1280 * 720, MIN), 1);
/// assert_eq!(auto_pieces(2, 1920 * 1080, MIN), 2);
/// assert_eq!(auto_pieces(8, 3840 * 2160, MIN), 8);
/// ```
#[must_use]
pub fn auto_pieces(threads: usize, pixels: u64, min_pixels_per_piece: u64) -> usize {
    let by_size = usize::try_from(pixels / min_pixels_per_piece.max(1)).unwrap_or(usize::MAX);
    threads.min(by_size).max(1)
}

impl fmt::Display for Threads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsplit => f.write_str("unsplit"),
            Self::Auto => f.write_str("auto"),
            Self::Fixed(count) => write!(f, "{count}"),
        }
    }
}

impl FromStr for Threads {
    type Err = String;

    /// Accepts `auto`, `unsplit` and a whole number of at least 1.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "unsplit" => Ok(Self::Unsplit),
            other => other.parse::<NonZeroUsize>().map(Self::Fixed).map_err(|_| {
                format!("threads `{other}`: expected auto, unsplit or a number of at least 1")
            }),
        }
    }
}

/// The library that encodes.
///
/// Every backend takes the same [`EncodeOptions`], refuses the same inputs with the same
/// errors, and writes baseline JFIF files that zune-jpeg and libjpeg-turbo's `djpeg` read.
/// The pure-Rust candidates evaluated against jpeg-encoder (RFC.md, "Faster pure-Rust JPEG
/// encoders") are behind their own features, off by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// jpeg-encoder: pure Rust, its AVX2 path picked at run time. The default.
    #[default]
    JpegEncoder,
    /// libjpeg-turbo 3 through the `turbojpeg` crate, only in builds with this crate's
    /// `turbo` feature ([`Backend::is_available`]); elsewhere encoding refuses it with
    /// [`JpegError::BackendUnavailable`]. It always averages subsampled chroma, so
    /// [`ChromaDownsampling::TopLeft`] is refused. With threads, its strips are eight at most
    /// (restart interval `ceil(MCU rows / 8)` MCU rows): each strip is one libjpeg-turbo call.
    Turbo,
    /// libjpeg-turbo-rs, a pure-Rust port of libjpeg-turbo (accurate integer DCT), only with
    /// this crate's `libjpeg-turbo-rs` feature. It always averages subsampled chroma
    /// ([`ChromaDownsampling::TopLeft`] is refused); with threads it goes through the strip
    /// encoder (one restart interval per MCU row), as jpeg-encoder does.
    LibjpegTurboRs,
    /// rusty_jpeg, a fork of jpeg-encoder with more SIMD kernels, only with this crate's
    /// `rusty_jpeg` feature. It always averages subsampled chroma
    /// ([`ChromaDownsampling::TopLeft`] is refused); with threads it goes through the strip
    /// encoder (one restart interval per MCU row), as jpeg-encoder does.
    RustyJpeg,
}

impl Backend {
    /// Every backend, whether or not this build has it.
    pub const ALL: [Self; 4] = [
        Self::JpegEncoder,
        Self::Turbo,
        Self::LibjpegTurboRs,
        Self::RustyJpeg,
    ];

    /// Whether this build can encode with the backend.
    #[must_use]
    pub const fn is_available(self) -> bool {
        match self {
            Self::JpegEncoder => true,
            Self::Turbo => cfg!(feature = "turbo"),
            Self::LibjpegTurboRs => cfg!(feature = "libjpeg-turbo-rs"),
            Self::RustyJpeg => cfg!(feature = "rusty_jpeg"),
        }
    }

    /// The feature of this crate that adds the backend (`None`: always built).
    #[must_use]
    pub const fn feature(self) -> Option<&'static str> {
        match self {
            Self::JpegEncoder => None,
            Self::Turbo => Some("turbo"),
            Self::LibjpegTurboRs => Some("libjpeg-turbo-rs"),
            Self::RustyJpeg => Some("rusty_jpeg"),
        }
    }

    /// Whether the backend can keep the top-left chroma sample ([`ChromaDownsampling::TopLeft`]):
    /// only jpeg-encoder can; the others always average.
    #[must_use]
    pub const fn can_keep_top_left_chroma(self) -> bool {
        matches!(self, Self::JpegEncoder)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::JpegEncoder => "jpeg-encoder",
            Self::Turbo => "turbo",
            Self::LibjpegTurboRs => "libjpeg-turbo-rs",
            Self::RustyJpeg => "rusty_jpeg",
        })
    }
}

impl FromStr for Backend {
    type Err = String;

    /// Accepts `jpeg-encoder`, `turbo`, `libjpeg-turbo-rs` and `rusty_jpeg` (whether or not
    /// this build has them).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Self::ALL
            .into_iter()
            .find(|backend| backend.to_string() == wanted)
            .ok_or_else(|| {
                format!(
                    "unknown JPEG encoder `{wanted}`: expected jpeg-encoder, turbo, \
                     libjpeg-turbo-rs or rusty_jpeg"
                )
            })
    }
}

/// What [`encode`] does with an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncodeOptions {
    /// JPEG quality, 1..=100 (ROS `jpeg_quality`); other values are refused.
    pub quality: u8,
    /// Chroma subsampling for colour images (ignored for [`PixelFormat::Mono8`]).
    pub subsampling: Subsampling,
    /// How subsampled chroma is computed.
    pub chroma_downsampling: ChromaDownsampling,
    /// Downscale images wider than this (aspect ratio kept, height rounded, at least 1) before
    /// encoding; `None` keeps the size. `Some(0)` is refused.
    pub max_width: Option<u32>,
    /// Encode [`PixelFormat::Rgba8`]/[`PixelFormat::Bgra8`] by dropping alpha; when `false` they
    /// are refused with [`JpegError::AlphaNotAllowed`] (JPEG cannot carry alpha).
    pub drop_alpha: bool,
    /// Strip-parallel encoding with restart markers (default [`Threads::Auto`]) or the
    /// unsplit encode.
    pub threads: Threads,
    /// The library that encodes.
    pub backend: Backend,
}

impl Default for EncodeOptions {
    /// Quality 75 (what the reference measurements in the project used), 4:2:0,
    /// [`ChromaDownsampling::Average`] (measured: see its docs), no downscale, alpha refused,
    /// [`Threads::Auto`] (strips with restart markers), [`Backend::JpegEncoder`].
    ///
    /// On the 280 real 1280x720 cockatoo frames this gives 42 605 bytes/frame (65:1 against
    /// raw RGB; the unsplit encode gives 42 498, so the 44 restart markers cost 0.25%), PSNR
    /// 49.74 dB mean / 46.48 dB min against the source pixels, ~5-7 ms to encode and ~1.3-1.7
    /// ms to decode a frame (release, 2 shared cores; `examples/measure_strips.rs`).
    fn default() -> Self {
        Self {
            quality: 75,
            subsampling: Subsampling::S420,
            chroma_downsampling: ChromaDownsampling::default(),
            max_width: None,
            drop_alpha: false,
            threads: Threads::default(),
            backend: Backend::default(),
        }
    }
}

/// Why a JPEG could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JpegError {
    /// The pixel buffer does not match its declared layout.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The quality is outside 1..=100.
    #[error("JPEG quality {quality} is outside 1..=100")]
    InvalidQuality {
        /// The quality asked for.
        quality: u8,
    },
    /// `max_width` was `Some(0)`.
    #[error("max_width must be at least 1")]
    InvalidMaxWidth,
    /// The image has an alpha channel and [`EncodeOptions::drop_alpha`] is false.
    #[error("{format} has alpha, which JPEG cannot carry; set drop_alpha to encode the colour")]
    AlphaNotAllowed {
        /// The format of the refused image.
        format: PixelFormat,
    },
    /// The image (after any downscale) is wider or taller than JPEG's 65535.
    #[error("{width}x{height} is too large for JPEG (at most 65535 per side)")]
    TooLargeToEncode {
        /// Width that would have been encoded.
        width: u32,
        /// Height that would have been encoded.
        height: u32,
    },
    /// Downscaling for `max_width` failed.
    #[error("downscale failed: {0}")]
    Resize(String),
    /// The encoder reported an error.
    #[error("JPEG encoder: {0}")]
    Encoder(String),
    /// The backend asked for is not in this build.
    #[error(
        "the {backend} JPEG encoder is not in this build: enable streamwire-codec's `{}` feature",
        .backend.feature().unwrap_or("default")
    )]
    BackendUnavailable {
        /// The backend asked for.
        backend: Backend,
    },
    /// The backend cannot honour an option.
    #[error("the {backend} JPEG encoder cannot {what}")]
    BackendUnsupported {
        /// The backend asked for.
        backend: Backend,
        /// What it cannot do.
        what: &'static str,
    },
    /// The encoder panicked (caught; this is a bug to report).
    #[error("the JPEG encoder panicked")]
    EncoderPanicked,
    /// The data does not start with a JPEG start-of-image marker.
    #[error("not a JPEG (no start-of-image marker)")]
    NotAJpeg,
    /// The data ends early, or holds far too little entropy-coded data for the size it declares.
    #[error("truncated JPEG ({context}): needed at least {needed} bytes, found {available}")]
    Truncated {
        /// What was being read.
        context: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// The declared size exceeds [`DecodeLimits::max_width`] or [`DecodeLimits::max_height`].
    #[error("JPEG is {width}x{height}, over the limit of {max_width}x{max_height}")]
    TooLarge {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// Configured maximum width.
        max_width: u32,
        /// Configured maximum height.
        max_height: u32,
    },
    /// More scans than [`DecodeLimits::max_scans`] (counted up to the first one over).
    #[error("JPEG has at least {scans} scans, over the limit of {max}")]
    TooManyScans {
        /// Scans counted when refusing.
        scans: u32,
        /// Configured maximum.
        max: u32,
    },
    /// Decoding would need more memory than [`DecodeLimits::max_decoded_bytes`].
    #[error("decoding needs about {bytes} bytes, over the limit of {max}")]
    DecodedBytesOverLimit {
        /// Estimated bytes (output plus decoder working memory).
        bytes: usize,
        /// Configured maximum.
        max: usize,
    },
    /// The JPEG structure or entropy data is invalid.
    #[error("corrupt JPEG: {0}")]
    Corrupt(String),
    /// A valid JPEG that this engine does not decode (arithmetic coding, lossless, 12-bit...).
    #[error("unsupported JPEG: {0}")]
    Unsupported(String),
    /// The decoder panicked (caught; this is a bug to report).
    #[error("the JPEG decoder panicked")]
    DecoderPanicked,
}

/// Peak signal-to-noise ratio in dB between two equally long 8-bit buffers: the usual measure
/// of lossy codec error. `None` if the lengths differ or are zero; infinite if identical.
///
/// ```
/// use streamwire_codec::jpeg::psnr;
/// assert_eq!(psnr(&[1, 2], &[1, 2]), Some(f64::INFINITY));
/// let db = psnr(&[0, 0], &[0, 2]).unwrap_or_default();
/// assert!((db - 10.0 * (255.0f64 * 255.0 / 2.0).log10()).abs() < 1e-9);
/// ```
#[must_use]
pub fn psnr(a: &[u8], b: &[u8]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let squared: u64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = u64::from(x.abs_diff(y));
            d * d
        })
        .sum();
    if squared == 0 {
        return Some(f64::INFINITY);
    }
    // u64 -> f64 rounds beyond 2^53; irrelevant for a dB figure.
    let mse = squared as f64 / a.len() as f64;
    Some(10.0 * (255.0 * 255.0 / mse).log10())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1280x720 frame is under the encode threshold, 1920x1080 over it; 2560x1440 is under
    /// the decode threshold, 3840x2160 over it.
    #[test]
    fn auto_splits_only_frames_over_the_threshold() {
        let (encode, decode) = (
            AUTO_ENCODE_MIN_PIXELS_PER_PIECE,
            AUTO_DECODE_MIN_PIXELS_PER_PIECE,
        );
        // 45 strips of 16 rows (720p) and 68 (1080p): enough to split.
        assert_eq!(auto_pieces(2, 1280 * 720, encode), 1);
        assert_eq!(auto_pieces(2, 1920 * 1080, encode), 2);
        assert_eq!(auto_pieces(8, 1920 * 1080, encode), 2, "1 MP a piece");
        assert_eq!(
            auto_pieces(1, 1920 * 1080, encode),
            1,
            "no more than the threads"
        );
        assert_eq!(auto_pieces(2, 2560 * 1440, decode), 1);
        assert_eq!(auto_pieces(2, 3840 * 2160, decode), 2);
        assert_eq!(auto_pieces(2, encode - 1, encode), 1, "just under");
        assert_eq!(
            auto_pieces(2, 2 * encode, encode),
            2,
            "exactly two pieces' worth"
        );
        assert_eq!(auto_pieces(0, 0, 0), 1, "at least one piece");
        // Through `Threads`: auto below the threshold is one piece whatever the pool.
        assert_eq!(Threads::Auto.pieces(45, 1280 * 720, encode), 1);
        assert_eq!(
            Threads::Auto.pieces(68, 1920 * 1080, encode),
            rayon::current_num_threads().min(2)
        );
        // Fixed counts and unsplit ignore the size.
        let three = Threads::Fixed(NonZeroUsize::MIN.saturating_add(2));
        assert_eq!(three.pieces(45, 64, encode), 3);
        assert_eq!(Threads::Unsplit.pieces(68, 1920 * 1080, encode), 1);
    }
}

//! Image codec engines for streamwire, independent of every other streamwire crate.
//!
//! `streamwire-msgs` builds its typed codecs (`Jpeg`, `Zstd` for `Image` and `DepthImage`) on
//! these engines; anything else that needs to turn pixels into bytes and back can use them too.
//!
//! - [`jpeg`]: lossy, for 8-bit colour and greyscale images. Encodes with `jpeg-encoder`
//!   (AVX2 picked at run time), optionally downscaling first with `fast_image_resize`;
//!   decodes with `zune-jpeg` into any of `rgb8`, `bgr8`, `rgba8`, `bgra8`, `mono8`. Rows may
//!   carry ROS-style padding (`step`) and are read in place.
//! - [`lossless`]: one plain zstd frame of packed rows, for depth (`16UC1`) and anything JPEG
//!   would damage. Plain so that `zstd -d` and every zstd binding can read it.
//!
//! # Limits, and why
//!
//! A decoder on a robot reads bytes that came over a network, and two JPEG attacks are well
//! known: a 258-byte file whose header declares a huge image (one decoder sized its buffers
//! from the header and reached 2.4 GB of heap), and a 38 KB progressive file with 1000+ scans
//! that took a minute to decode. [`jpeg::JpegDecoder`] therefore runs a linear,
//! allocation-free pass over the marker structure before decoding and refuses, with a typed
//! [`jpeg::JpegError`]:
//!
//! - images over [`jpeg::DecodeLimits::max_width`]/`max_height` (default 16384);
//! - more than [`jpeg::DecodeLimits::max_scans`] scans (default 100);
//! - an estimated decode size (output plus coefficient buffers) over
//!   [`jpeg::DecodeLimits::max_decoded_bytes`] (default 256 MiB);
//! - files without an end-of-image marker, and files with fewer entropy-coded bytes than one
//!   per eight 8x8 blocks (each block's DC coefficient takes at least one bit), which is what
//!   a tiny file declaring a huge image looks like.
//!
//! zune-jpeg then decodes in strict mode with the same limits, and any panic inside either
//! library is caught and returned as an error. [`lossless::decompress_exact`] likewise refuses
//! a frame whose recorded size differs from what the caller expects, or that no valid zstd
//! frame of its length could expand to, before allocating.
//!
//! # Example
//!
//! ```
//! use streamwire_codec::jpeg::{self, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef};
//!
//! // A 64x48 BGR image whose rows carry 16 bytes of padding (step = 64 * 3 + 16).
//! let step = 64 * 3 + 16;
//! let data: Vec<u8> = (0..48 * step).map(|i| (i % 251) as u8).collect();
//! let pixels = PixelsRef::new(64, 48, step, PixelFormat::Bgr8, &data)?;
//!
//! // Quality 75, 4:2:0, downscaled to at most 32 pixels wide.
//! let options = EncodeOptions { max_width: Some(32), ..EncodeOptions::default() };
//! let encoded = jpeg::encode(&pixels, &options)?;
//! assert_eq!((encoded.width, encoded.height), (32, 24));
//!
//! // Decode, reusing one buffer across frames.
//! let decoder = JpegDecoder::default();
//! let mut buffer = Vec::new();
//! let header = decoder.decode_into(&encoded.data, PixelFormat::Rgba8, &mut buffer)?;
//! assert_eq!(buffer.len(), header.width as usize * header.height as usize * 4);
//!
//! // A file claiming to be 60000x60000 is refused before anything is allocated for it.
//! let mut hostile = encoded.data.clone();
//! let sof = hostile.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap_or_default();
//! hostile[sof + 5..sof + 9].copy_from_slice(&[0xEA, 0x60, 0xEA, 0x60]);
//! assert!(matches!(
//!     decoder.decode(&hostile, PixelFormat::Rgb8),
//!     Err(jpeg::JpegError::TooLarge { width: 60000, height: 60000, .. })
//! ));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod budget;
pub mod cloud;
#[cfg(feature = "h264")]
pub mod h264;
pub mod jpeg;
pub mod lossless;

pub use jpeg::{
    Backend, DecodeLimits, DecodedJpeg, EncodeOptions, EncodedJpeg, JpegDecoder, JpegError,
    JpegHeader, PixelFormat, PixelsRef, Threads,
};
pub use lossless::{LosslessError, compress_rows, decompress_exact};

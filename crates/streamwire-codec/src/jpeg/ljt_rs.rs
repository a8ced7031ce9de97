//! The optional libjpeg-turbo-rs backend (feature `libjpeg-turbo-rs`): a pure-Rust port of
//! libjpeg-turbo, its accurate integer DCT and libjpeg's box-averaging chroma downsampling.
//!
//! It takes packed rows only (no stride), so padded rows are packed first. Its restart
//! interval setting (in MCUs) lets the strip encoder ([`super::strips`]) drive it as it drives
//! jpeg-encoder. Everything it is given is validated by [`super::encode`] first (quality
//! 1..=100, sides 1..=65535, a buffer of exactly `height` rows).

use libjpeg_turbo_rs::{Encoder, PixelFormat as LjtFormat, Subsampling as LjtSubsampling};

use super::strips::packed;
use super::{EncodeOptions, JpegError, PixelFormat, PixelsRef, Subsampling};

/// Encodes `pixels` (`width`x`height`) as one JFIF file, with a restart marker every
/// `restart_interval` MCUs if given.
pub(super) fn encode_piece(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    restart_interval: Option<u16>,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    let format = match pixels.format() {
        PixelFormat::Rgb8 => LjtFormat::Rgb,
        PixelFormat::Bgr8 => LjtFormat::Bgr,
        // Alpha is dropped (checked by the caller): the X formats ignore the fourth byte.
        PixelFormat::Rgba8 => LjtFormat::Rgbx,
        PixelFormat::Bgra8 => LjtFormat::Bgrx,
        PixelFormat::Mono8 => LjtFormat::Grayscale,
    };
    let data = packed(pixels);
    let mut encoder = Encoder::new(&data, usize::from(width), usize::from(height), format)
        .quality(options.quality);
    // Greyscale takes no subsampling: an explicit one would be written into its frame header.
    if pixels.format() != PixelFormat::Mono8 {
        encoder = encoder.subsampling(match options.subsampling {
            Subsampling::S444 => LjtSubsampling::S444,
            Subsampling::S422 => LjtSubsampling::S422,
            Subsampling::S420 => LjtSubsampling::S420,
        });
    }
    if let Some(interval) = restart_interval {
        encoder = encoder.restart_blocks(interval);
    }
    let file = encoder
        .encode()
        .map_err(|error| JpegError::Encoder(format!("libjpeg-turbo-rs: {error}")))?;
    // It allocates its own output: appended to `out` (one copy, this backend's).
    out.extend_from_slice(&file);
    Ok(())
}

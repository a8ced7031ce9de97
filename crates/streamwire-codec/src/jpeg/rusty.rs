//! The optional rusty_jpeg backend (feature `rusty_jpeg`): a fork of jpeg-encoder 0.7 with
//! AVX2 kernels, which always box-averages subsampled chroma.
//!
//! It takes packed rows (its `ImageBuffer` trait differs from jpeg-encoder's), so padded rows
//! are packed first. Its restart interval setting (in MCUs) lets the strip encoder
//! ([`super::strips`]) drive it as it drives jpeg-encoder. Everything it is given is validated
//! by [`super::encode`] first (quality 1..=100, sides 1..=65535, a buffer of exactly `height`
//! rows).

use rusty_jpeg::encode::{ColorType, Encoder, SamplingFactor};

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
    let color = match pixels.format() {
        PixelFormat::Rgb8 => ColorType::Rgb,
        PixelFormat::Bgr8 => ColorType::Bgr,
        // Alpha is dropped (checked by the caller); rusty_jpeg ignores the fourth byte.
        PixelFormat::Rgba8 => ColorType::Rgba,
        PixelFormat::Bgra8 => ColorType::Bgra,
        PixelFormat::Mono8 => ColorType::Luma,
    };
    let data = packed(pixels);
    out.reserve(data.len() / 8 + 1024);
    let mut encoder = Encoder::new(&mut *out, options.quality);
    encoder.set_sampling_factor(match options.subsampling {
        Subsampling::S444 => SamplingFactor::R_4_4_4,
        Subsampling::S422 => SamplingFactor::R_4_2_2,
        Subsampling::S420 => SamplingFactor::R_4_2_0,
    });
    if let Some(interval) = restart_interval {
        encoder.set_restart_interval(interval);
    }
    encoder
        .encode(&data, width, height, color)
        .map_err(|error| JpegError::Encoder(format!("rusty_jpeg: {error}")))?;
    Ok(())
}

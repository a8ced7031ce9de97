//! The optional libjpeg-turbo backend (feature `turbo`), through the `turbojpeg` crate.
//!
//! The crate exposes no restart-interval setting (libjpeg-turbo has one, reachable only
//! through unsafe bindings, which this workspace forbids), so with threads every strip is its
//! own libjpeg-turbo call, and the files are stitched as jpeg-encoder's pieces are
//! ([`super::strips::stitch`]). A strip is `ceil(MCU rows / 8)` MCU rows, so a frame has at
//! most eight strips and eight calls: few enough that the per-call cost stays small, enough
//! for eight threads to encode and decode.

use rayon::prelude::*;
use turbojpeg::{Compressor, Image, PixelFormat as TurboFormat, Subsamp};

use super::strips::{mcu_size, rows_of, stitch};
use super::{EncodeOptions, JpegError, PixelFormat, PixelsRef, Subsampling, Threads};

/// Encoded strips, each with its index.
type Strips = Vec<(u32, Vec<u8>)>;

/// At most this many strips per image.
const MAX_STRIPS: u32 = 8;

fn turbo_error(error: &turbojpeg::Error) -> JpegError {
    JpegError::Encoder(format!("libjpeg-turbo: {error}"))
}

fn compressor(options: &EncodeOptions, format: PixelFormat) -> Result<Compressor, JpegError> {
    let mut compressor = Compressor::new().map_err(|e| turbo_error(&e))?;
    compressor
        .set_quality(i32::from(options.quality))
        .map_err(|e| turbo_error(&e))?;
    let subsamp = if format == PixelFormat::Mono8 {
        Subsamp::Gray
    } else {
        match options.subsampling {
            Subsampling::S444 => Subsamp::None,
            Subsampling::S422 => Subsamp::Sub2x1,
            Subsampling::S420 => Subsamp::Sub2x2,
        }
    };
    compressor
        .set_subsamp(subsamp)
        .map_err(|e| turbo_error(&e))?;
    Ok(compressor)
}

fn compress(compressor: &mut Compressor, pixels: &PixelsRef<'_>) -> Result<Vec<u8>, JpegError> {
    let format = match pixels.format() {
        PixelFormat::Rgb8 => TurboFormat::RGB,
        PixelFormat::Bgr8 => TurboFormat::BGR,
        // Alpha is dropped (checked by the caller): the X formats ignore the fourth byte.
        PixelFormat::Rgba8 => TurboFormat::RGBX,
        PixelFormat::Bgra8 => TurboFormat::BGRX,
        PixelFormat::Mono8 => TurboFormat::GRAY,
    };
    let image = Image {
        pixels: pixels.data(),
        width: pixels.width() as usize,
        pitch: pixels.step(),
        height: pixels.height() as usize,
        format,
    };
    compressor
        .compress_to_vec(image)
        .map_err(|e| turbo_error(&e))
}

/// Encodes with libjpeg-turbo: one call for [`Threads::Unsplit`], else strips with restart
/// markers on up to `options.threads` threads of rayon's pool.
pub(super) fn encode(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    let format = pixels.format();
    if options.threads == Threads::Unsplit {
        // turbojpeg allocates its own output: appended to `out` (one copy, this backend's).
        out.extend_from_slice(&compress(&mut compressor(options, format)?, pixels)?);
        return Ok(());
    }
    let (mcu_width, mcu_height) = mcu_size(format, options.subsampling);
    let mcu_columns = u32::from(width).div_ceil(mcu_width);
    let mcu_rows = u32::from(height).div_ceil(mcu_height);
    // The restart interval (MCUs) must fit 16 bits.
    let max_rows = (u32::from(u16::MAX) / mcu_columns).max(1);
    let strip_mcu_rows = mcu_rows.div_ceil(MAX_STRIPS).clamp(1, max_rows);
    let interval = u16::try_from(strip_mcu_rows * mcu_columns)
        .map_err(|_| JpegError::Encoder("restart interval over 65535 MCUs".into()))?;
    let strip_rows = strip_mcu_rows * mcu_height;
    let strips = u32::from(height).div_ceil(strip_rows);
    let pieces = options.threads.pieces(
        strips as usize,
        u64::from(width) * u64::from(height),
        super::AUTO_ENCODE_MIN_PIXELS_PER_PIECE,
    );
    let first_strip =
        |piece: usize| u32::try_from(piece * strips as usize / pieces).unwrap_or(strips);

    let encode_strips = |piece: usize| -> Result<Strips, JpegError> {
        let mut compressor = compressor(options, format)?;
        (first_strip(piece)..first_strip(piece + 1))
            .map(|strip| {
                let top = strip * strip_rows;
                let bottom = (top + strip_rows).min(u32::from(height));
                Ok((
                    strip,
                    compress(&mut compressor, &rows_of(pixels, top, bottom)?)?,
                ))
            })
            .collect()
    };
    let encoded: Strips = if pieces == 1 {
        encode_strips(0)?
    } else {
        let per_piece: Vec<Result<Strips, JpegError>> =
            (0..pieces).into_par_iter().map(encode_strips).collect();
        let mut all = Vec::with_capacity(strips as usize);
        for piece in per_piece {
            all.extend(piece?);
        }
        all
    };
    let parts: Vec<(u32, &[u8])> = encoded
        .iter()
        .map(|(strip, file)| (*strip, file.as_slice()))
        .collect();
    stitch(&parts, height, interval, out)
}

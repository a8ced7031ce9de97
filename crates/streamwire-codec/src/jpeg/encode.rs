//! Encoding with jpeg-encoder, with optional downscaling by fast_image_resize.

use std::panic::{AssertUnwindSafe, catch_unwind};

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use jpeg_encoder::{
    ChromaSubsamplingMethod, ColorType, Encoder, ImageBuffer, JfifWrite, JpegColorType,
    SamplingFactor,
};

use super::{
    Backend, ChromaDownsampling, EncodeOptions, JpegError, PixelFormat, PixelsRef, Subsampling,
    Threads, strips,
};

/// JPEG stores each side in 16 bits.
const JPEG_MAX_SIDE: u32 = 65535;

/// An encoded JPEG and the size it was coded at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedJpeg {
    /// A complete JFIF file (SOI to EOI).
    pub data: Vec<u8>,
    /// Coded width: the input's, or smaller after a `max_width` downscale.
    pub width: u32,
    /// Coded height.
    pub height: u32,
    /// Whether the file is greyscale (one component), i.e. the input was `Mono8`.
    pub greyscale: bool,
}

/// Encodes `pixels` as a baseline JFIF JPEG.
///
/// Packed rows go straight to jpeg-encoder's `encode`. Rows with padding are fed row by row
/// through its `ImageBuffer` trait, without copying the image into a packed buffer. On a real
/// 720p frame with 64 bytes of padding per row (criterion `encode_720p_padded_rows`, five runs
/// on 2 shared cores) its medians were 7.6-8.8 ms against 7.6-12.2 ms for packing then
/// encoding: equal within noise or faster, and without the 2.7 MB copy.
///
/// Images wider than `options.max_width` are first downscaled with fast_image_resize's
/// convolution with a bilinear (triangle) kernel, whose support grows with the scale factor as
/// in Pillow's `resize(BILINEAR)`: unlike nearest-neighbour or fixed-size interpolation every
/// source pixel contributes (no aliasing on fine texture), and unlike a box filter the weights
/// fall off smoothly at non-integer ratios. A 720p frame downscaled to 640x360 and encoded
/// took 2.5-3.4 ms in total (criterion `encode_720p_downscale_to_640`).
///
/// # Errors
/// [`JpegError::InvalidQuality`], [`JpegError::InvalidMaxWidth`],
/// [`JpegError::AlphaNotAllowed`], [`JpegError::TooLargeToEncode`], [`JpegError::Resize`],
/// [`JpegError::BackendUnavailable`], [`JpegError::BackendUnsupported`],
/// [`JpegError::Encoder`], [`JpegError::EncoderPanicked`].
pub fn encode(pixels: &PixelsRef<'_>, options: &EncodeOptions) -> Result<EncodedJpeg, JpegError> {
    let mut data = Vec::with_capacity(estimated_size(pixels));
    let (width, height) = encode_into(pixels, options, &mut data)?;
    Ok(EncodedJpeg {
        data,
        width,
        height,
        greyscale: pixels.format() == PixelFormat::Mono8,
    })
}

/// Encodes `pixels` as [`encode`] does, appending the file to `out` (a buffer recycled
/// from a pool: jpeg-encoder, the default backend, and the strip encoders write into it;
/// turbojpeg's and libjpeg-turbo-rs' single-piece output is copied into it once).
/// Returns the coded width and height.
///
/// # Errors
/// As [`encode`]; on error `out` may hold part of a file.
pub fn encode_into(
    pixels: &PixelsRef<'_>,
    options: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(u32, u32), JpegError> {
    if !(1..=100).contains(&options.quality) {
        return Err(JpegError::InvalidQuality {
            quality: options.quality,
        });
    }
    if !options.backend.is_available() {
        return Err(JpegError::BackendUnavailable {
            backend: options.backend,
        });
    }
    if !options.backend.can_keep_top_left_chroma()
        && options.chroma_downsampling == ChromaDownsampling::TopLeft
    {
        return Err(JpegError::BackendUnsupported {
            backend: options.backend,
            what: "keep the top-left chroma sample (it always averages)",
        });
    }
    let format = pixels.format();
    if format.has_alpha() && !options.drop_alpha {
        return Err(JpegError::AlphaNotAllowed { format });
    }
    let (width, height) = target_size(pixels.width(), pixels.height(), options.max_width)?;
    if width > JPEG_MAX_SIDE || height > JPEG_MAX_SIDE {
        return Err(JpegError::TooLargeToEncode { width, height });
    }
    let (width16, height16) = (to_u16(width)?, to_u16(height)?);

    if (width, height) == (pixels.width(), pixels.height()) {
        encode_at_size(pixels, width16, height16, options, out)?;
    } else {
        let resized = downscale(pixels, width, height)?;
        let row_len = resized.len() / height as usize;
        let packed = PixelsRef::new(width, height, row_len, format, &resized)?;
        encode_at_size(&packed, width16, height16, options, out)?;
    }
    Ok((width, height))
}

fn to_u16(side: u32) -> Result<u16, JpegError> {
    u16::try_from(side).map_err(|_| JpegError::Encoder(format!("side {side} exceeds 65535")))
}

/// The coded size: `max_width` wide with the aspect ratio kept (height rounded to nearest,
/// at least 1) when the image is wider, else unchanged.
pub(crate) fn target_size(
    width: u32,
    height: u32,
    max_width: Option<u32>,
) -> Result<(u32, u32), JpegError> {
    match max_width {
        Some(0) => Err(JpegError::InvalidMaxWidth),
        Some(max) if width > max => {
            let scaled =
                (u64::from(height) * u64::from(max) + u64::from(width) / 2) / u64::from(width);
            // scaled <= height because max < width, so it fits in u32.
            let scaled = u32::try_from(scaled).unwrap_or(height).max(1);
            Ok((max, scaled))
        }
        _ => Ok((width, height)),
    }
}

fn configure<W: JfifWrite>(encoder: &mut Encoder<W>, options: &EncodeOptions) {
    encoder.set_sampling_factor(match options.subsampling {
        Subsampling::S444 => SamplingFactor::R_4_4_4,
        Subsampling::S422 => SamplingFactor::R_4_2_2,
        Subsampling::S420 => SamplingFactor::R_4_2_0,
    });
    encoder.set_chroma_subsampling_method(match options.chroma_downsampling {
        ChromaDownsampling::Average => ChromaSubsamplingMethod::Average,
        ChromaDownsampling::TopLeft => ChromaSubsamplingMethod::Nearest,
    });
}

fn color_type(format: PixelFormat) -> ColorType {
    match format {
        PixelFormat::Rgb8 => ColorType::Rgb,
        PixelFormat::Bgr8 => ColorType::Bgr,
        PixelFormat::Rgba8 => ColorType::Rgba,
        PixelFormat::Bgra8 => ColorType::Bgra,
        PixelFormat::Mono8 => ColorType::Luma,
    }
}

fn encode_at_size(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    // Defence in depth: no backend should ever panic on the inputs we pass (everything is
    // validated above and the fuzz target `encode` treats a caught panic as a finding), but a
    // panic must not take the node down with it. A panic on a pool thread comes back to this
    // thread through rayon and is caught here as well.
    let result = catch_unwind(AssertUnwindSafe(|| {
        if options.backend == Backend::Turbo {
            return encode_with_turbo(pixels, width, height, options, out);
        }
        let piece = piece_encoder(options.backend).ok_or(JpegError::BackendUnavailable {
            backend: options.backend,
        })?;
        if options.threads == Threads::Unsplit {
            piece(pixels, width, height, options, None, out)
        } else {
            strips::encode(pixels, width, height, options, piece, out)
        }
    }));
    result.unwrap_or(Err(JpegError::EncoderPanicked))
}

#[cfg(feature = "turbo")]
fn encode_with_turbo(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    super::turbo::encode(pixels, width, height, options, out)
}

#[cfg(not(feature = "turbo"))]
fn encode_with_turbo(
    _pixels: &PixelsRef<'_>,
    _width: u16,
    _height: u16,
    _options: &EncodeOptions,
    _out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    Err(JpegError::BackendUnavailable {
        backend: Backend::Turbo,
    })
}

/// The function that encodes one file (a whole image, or a strip with restart markers) with
/// `backend`, if this build has it and the backend goes through the strip encoder.
fn piece_encoder(backend: Backend) -> Option<strips::PieceEncoder> {
    match backend {
        Backend::JpegEncoder => Some(encode_piece),
        #[cfg(feature = "libjpeg-turbo-rs")]
        Backend::LibjpegTurboRs => Some(super::ljt_rs::encode_piece),
        #[cfg(feature = "rusty_jpeg")]
        Backend::RustyJpeg => Some(super::rusty::encode_piece),
        _ => None,
    }
}

/// Upper bound, in bytes, of the file [`encode`] writes for a `width`x`height` image of
/// `format` with `options`, whichever the backend and thread count: a hard bound (not an
/// estimate) for sizing a buffer before encoding: about 6.6 bytes per pixel for greyscale,
/// 10 for colour at 4:2:0 and 20 at 4:4:4 (the real 720p frames take 0.05 at q75). Zero when
/// `options` are invalid (`max_width` of 0).
///
/// Each 8x8 block of a component codes at most its DC (16-bit code, 11-bit magnitude), 63
/// AC coefficients (16-bit code, 10-bit magnitude) and an end-of-block code: 1681 bits, at
/// most 211 bytes, twice that if every byte were 0xFF and stuffed, plus three bytes for
/// the restart marker and padding that may follow it. The headers (JFIF, quantization and
/// Huffman tables, frame, restart interval, scan) are under 1 KiB; 4 KiB are allowed.
#[must_use]
pub fn max_encoded_len(
    width: u32,
    height: u32,
    format: PixelFormat,
    options: &EncodeOptions,
) -> usize {
    const PER_BLOCK: usize = 2 * 211 + 3;
    const HEADERS: usize = 4096;
    let Ok((width, height)) = target_size(width, height, options.max_width) else {
        return 0;
    };
    let (mcu_width, mcu_height) = strips::mcu_size(format, options.subsampling);
    let mcus = width.div_ceil(mcu_width) as usize * height.div_ceil(mcu_height) as usize;
    let blocks_per_mcu = if format == PixelFormat::Mono8 {
        1
    } else {
        (mcu_width * mcu_height / 64) as usize + 2
    };
    mcus.saturating_mul(blocks_per_mcu)
        .saturating_mul(PER_BLOCK)
        .saturating_add(HEADERS)
}

/// Encodes `pixels` (`width`x`height`) as one JFIF file with jpeg-encoder, with a restart
/// marker every `restart_interval` MCUs if given.
pub(super) fn encode_piece(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    restart_interval: Option<u16>,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    out.reserve(estimated_size(pixels));
    let mut encoder = Encoder::new(&mut *out, options.quality);
    configure(&mut encoder, options);
    if let Some(interval) = restart_interval {
        encoder.set_restart_interval(interval);
    }
    let result = if pixels.is_packed() {
        // jpeg-encoder's own entry point: it picks its AVX2 colour conversion at run time.
        encoder.encode(pixels.data(), width, height, color_type(pixels.format()))
    } else {
        encoder.encode_image(PaddedRows {
            pixels: *pixels,
            width,
            height,
        })
    };
    result.map_err(|error| JpegError::Encoder(error.to_string()))?;
    Ok(())
}

/// A starting capacity for the output: about 2 bits per pixel, a q75 camera frame's size,
/// so most frames never reallocate.
fn estimated_size(pixels: &PixelsRef<'_>) -> usize {
    (pixels.width() as usize * pixels.height() as usize) / 4 + 1024
}

/// Feeds rows that have padding straight from the caller's buffer.
struct PaddedRows<'a> {
    pixels: PixelsRef<'a>,
    width: u16,
    height: u16,
}

impl ImageBuffer for PaddedRows<'_> {
    fn get_jpeg_color_type(&self) -> JpegColorType {
        if self.pixels.format() == PixelFormat::Mono8 {
            JpegColorType::Luma
        } else {
            JpegColorType::Ycbcr
        }
    }

    fn width(&self) -> u16 {
        self.width
    }

    fn height(&self) -> u16 {
        self.height
    }

    fn fill_buffers(&self, y: u16, buffers: &mut [Vec<u8>; 4]) {
        let Some(row) = self.pixels.row(u32::from(y)) else {
            return;
        };
        match self.pixels.format() {
            PixelFormat::Mono8 => buffers[0].extend_from_slice(row),
            PixelFormat::Rgb8 => fill_ycbcr::<3, 0, 2>(row, buffers),
            PixelFormat::Bgr8 => fill_ycbcr::<3, 2, 0>(row, buffers),
            PixelFormat::Rgba8 => fill_ycbcr::<4, 0, 2>(row, buffers),
            PixelFormat::Bgra8 => fill_ycbcr::<4, 2, 0>(row, buffers),
        }
    }
}

/// Converts one row of `BPP`-byte pixels (red at `R`, green at 1, blue at `B`) to Y, Cb, Cr.
fn fill_ycbcr<const BPP: usize, const R: usize, const B: usize>(
    row: &[u8],
    buffers: &mut [Vec<u8>; 4],
) {
    let [luma, cb, cr, _] = buffers;
    // Fixed-size chunks let the compiler vectorise the conversion, as jpeg-encoder's own
    // scalar path does.
    const CHUNK: usize = 16;
    let mut chunks = row.chunks_exact(BPP * CHUNK);
    for chunk in &mut chunks {
        let mut ys = [0u8; CHUNK];
        let mut cbs = [0u8; CHUNK];
        let mut crs = [0u8; CHUNK];
        for (i, pixel) in chunk.chunks_exact(BPP).enumerate() {
            if let (Some(&r), Some(&g), Some(&b)) = (pixel.get(R), pixel.get(1), pixel.get(B)) {
                let (y, u, v) = jpeg_encoder::rgb_to_ycbcr(r, g, b);
                if let (Some(ys), Some(cbs), Some(crs)) =
                    (ys.get_mut(i), cbs.get_mut(i), crs.get_mut(i))
                {
                    *ys = y;
                    *cbs = u;
                    *crs = v;
                }
            }
        }
        luma.extend_from_slice(&ys);
        cb.extend_from_slice(&cbs);
        cr.extend_from_slice(&crs);
    }
    for pixel in chunks.remainder().chunks_exact(BPP) {
        if let (Some(&r), Some(&g), Some(&b)) = (pixel.get(R), pixel.get(1), pixel.get(B)) {
            let (y, u, v) = jpeg_encoder::rgb_to_ycbcr(r, g, b);
            luma.push(y);
            cb.push(u);
            cr.push(v);
        }
    }
}

/// Downscales to `width`x`height`, returning packed rows in the input's format.
pub(crate) fn downscale(
    pixels: &PixelsRef<'_>,
    width: u32,
    height: u32,
) -> Result<Vec<u8>, JpegError> {
    let bpp = pixels.format().bytes_per_pixel();
    let pixel_type = match pixels.format() {
        PixelFormat::Mono8 => PixelType::U8,
        PixelFormat::Rgb8 | PixelFormat::Bgr8 => PixelType::U8x3,
        PixelFormat::Rgba8 | PixelFormat::Bgra8 => PixelType::U8x4,
    };
    let resize_error = |e: &dyn std::fmt::Display| JpegError::Resize(e.to_string());
    // Alpha is either dropped or absent: resize every channel independently, without
    // premultiplying, so the colours match what the non-resized path encodes.
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
        .use_alpha(false)
        .crop(
            0.0,
            0.0,
            f64::from(pixels.width()),
            f64::from(pixels.height()),
        );
    let mut dst = Image::new(width, height, pixel_type);

    // Padding that is a whole number of pixels: view the buffer as a wider image and crop,
    // avoiding a copy. Otherwise pack the rows first.
    let padded_width = u32::try_from(pixels.step() / bpp)
        .ok()
        .filter(|_| pixels.step().is_multiple_of(bpp));
    let packed;
    let src = match padded_width {
        Some(src_width) => ImageRef::new(src_width, pixels.height(), pixels.data(), pixel_type),
        None => {
            packed = pixels.rows().flatten().copied().collect::<Vec<u8>>();
            ImageRef::new(pixels.width(), pixels.height(), &packed, pixel_type)
        }
    }
    .map_err(|e| resize_error(&e))?;
    Resizer::new()
        .resize(&src, &mut dst, &options)
        .map_err(|e| resize_error(&e))?;
    Ok(dst.into_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_size_keeps_aspect() {
        assert_eq!(target_size(1280, 720, Some(640)).unwrap(), (640, 360));
        assert_eq!(target_size(1280, 720, Some(2000)).unwrap(), (1280, 720));
        assert_eq!(target_size(1280, 720, None).unwrap(), (1280, 720));
        // 3 * 2 / 5 = 1.2 -> 1; 4 * 2 / 5 = 1.6 -> 2.
        assert_eq!(target_size(5, 3, Some(2)).unwrap(), (2, 1));
        assert_eq!(target_size(5, 4, Some(2)).unwrap(), (2, 2));
        assert_eq!(target_size(65536, 1, Some(1000)).unwrap(), (1000, 1));
        assert!(matches!(
            target_size(5, 4, Some(0)),
            Err(JpegError::InvalidMaxWidth)
        ));
    }
}

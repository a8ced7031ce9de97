//! Strip-parallel encoding: one restart interval per MCU row, pieces of whole MCU rows encoded
//! concurrently by one backend (jpeg-encoder, libjpeg-turbo-rs or rusty_jpeg) with the same
//! tables, stitched into one baseline JPEG.
//!
//! A restart marker resets the DC predictions and byte-aligns the entropy-coded data, so an
//! interval's bytes depend only on its own pixels. An encoder told to restart every
//! `mcu_columns` MCUs therefore writes for a piece of rows exactly the bytes the whole image
//! would have for those rows, except that its restart markers count from RST0: the stitch
//! renumbers them (`RSTn` with `n` = interval index before it, mod 8), and inserts the marker
//! between pieces. The result is byte for byte the file the backend writes for the whole
//! image with that restart interval, whatever the number of pieces (a test checks this).

use rayon::prelude::*;

use super::{EncodeOptions, JpegError, PixelFormat, PixelsRef, Subsampling};

/// Encodes `pixels` (`width`x`height`) as one JFIF file with one backend, with a restart
/// marker every `restart_interval` MCUs if given.
pub(crate) type PieceEncoder = fn(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    restart_interval: Option<u16>,
    out: &mut Vec<u8>,
) -> Result<(), JpegError>;

/// The MCU of a frame in pixels: (width, height).
pub(crate) fn mcu_size(format: PixelFormat, subsampling: Subsampling) -> (u32, u32) {
    if format == PixelFormat::Mono8 {
        return (8, 8);
    }
    match subsampling {
        Subsampling::S444 => (8, 8),
        Subsampling::S422 => (16, 8),
        Subsampling::S420 => (16, 16),
    }
}

/// Encodes `pixels` in strips of one MCU row with a restart marker between strips, each piece
/// with `encode_piece`, using up to `options.threads` threads of rayon's global pool.
pub(super) fn encode(
    pixels: &PixelsRef<'_>,
    width: u16,
    height: u16,
    options: &EncodeOptions,
    encode_piece: PieceEncoder,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    let (mcu_width, mcu_height) = mcu_size(pixels.format(), options.subsampling);
    let mcu_columns = u32::from(width).div_ceil(mcu_width);
    // At most 65535 / 8 columns, so one MCU row always fits the 16-bit restart interval.
    let interval = u16::try_from(mcu_columns)
        .map_err(|_| JpegError::Encoder(format!("{mcu_columns} MCUs per row")))?;
    let strips = u32::from(height).div_ceil(mcu_height);
    let pieces = options.threads.pieces(
        strips as usize,
        u64::from(width) * u64::from(height),
        super::AUTO_ENCODE_MIN_PIXELS_PER_PIECE,
    );
    // Strip `s` of the image is rows [s * mcu_height, (s + 1) * mcu_height); piece `p` takes
    // strips [first_strip(p), first_strip(p + 1)).
    let first_strip =
        |piece: usize| u32::try_from(piece * strips as usize / pieces).unwrap_or(strips);
    if pieces == 1 {
        return encode_piece(pixels, width, height, options, Some(interval), out);
    }
    let encoded: Vec<Result<Vec<u8>, JpegError>> = (0..pieces)
        .into_par_iter()
        .map(|piece| {
            let top = first_strip(piece) * mcu_height;
            let bottom = (first_strip(piece + 1) * mcu_height).min(u32::from(height));
            let rows = rows_of(pixels, top, bottom)?;
            let rows_height = u16::try_from(bottom - top)
                .map_err(|_| JpegError::Encoder("strip taller than the image".into()))?;
            let mut piece = Vec::new();
            encode_piece(
                &rows,
                width,
                rows_height,
                options,
                Some(interval),
                &mut piece,
            )?;
            Ok(piece)
        })
        .collect();
    let encoded = encoded.into_iter().collect::<Result<Vec<_>, _>>()?;
    let parts: Vec<(u32, &[u8])> = encoded
        .iter()
        .enumerate()
        .map(|(piece, file)| (first_strip(piece), file.as_slice()))
        .collect();
    stitch(&parts, height, interval, out)
}

/// Stitches files that each code consecutive strips of one image (same tables, the first
/// starting at strip 0), given with the index of their first strip, into one file of
/// `height` rows with a restart marker every `interval` MCUs: the first file's headers (DRI
/// replaced, frame height set), then every file's entropy-coded data with the restart
/// markers it holds renumbered and one inserted between files. Appended to `out`.
pub(super) fn stitch(
    parts: &[(u32, &[u8])],
    height: u16,
    interval: u16,
    out: &mut Vec<u8>,
) -> Result<(), JpegError> {
    let &(_, first) = parts
        .first()
        .ok_or_else(|| JpegError::Encoder("no strips".into()))?;
    let layout = Layout::of(first)?;
    let total: usize = parts.iter().map(|(_, file)| file.len() + 2).sum();
    out.reserve(total + 8);
    out.extend_from_slice(&[0xFF, 0xD8]);
    for segment in &layout.header {
        let start = out.len();
        let bytes = first
            .get(segment.clone())
            .ok_or_else(|| JpegError::Encoder("strip header segment out of range".into()))?;
        out.extend_from_slice(bytes);
        if segment.start == layout.sof {
            // The frame header of the first file declares its own height: declare the image's.
            let at = start + 5;
            if let Some(field) = out.get_mut(at..at + 2) {
                field.copy_from_slice(&height.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(&[0xFF, 0xDD, 0x00, 0x04]);
    out.extend_from_slice(&interval.to_be_bytes());
    let scan_header = first
        .get(layout.scan_header.clone())
        .ok_or_else(|| JpegError::Encoder("strip scan header out of range".into()))?;
    out.extend_from_slice(scan_header);
    for (index, &(strip, file)) in parts.iter().enumerate() {
        let data = if index == 0 {
            layout.entropy(first)
        } else {
            // infallible: a number mod 8 fits a u8
            let marker = u8::try_from((strip.saturating_sub(1)) % 8).unwrap_or_default();
            out.extend_from_slice(&[0xFF, 0xD0 + marker]);
            Layout::of(file)?.entropy(file)
        }
        .ok_or_else(|| JpegError::Encoder("strip without entropy-coded data".into()))?;
        let start = out.len();
        out.extend_from_slice(data);
        // infallible: `start` is the length before the extend just above
        renumber_restarts(out.get_mut(start..).unwrap_or_default(), strip);
    }
    out.extend_from_slice(&[0xFF, 0xD9]);
    Ok(())
}

/// The pixels of `pixels` with rows packed (`step` = `width` * bytes per pixel): borrowed
/// when they already are, else copied, for the backends that take no row stride.
#[cfg(any(feature = "libjpeg-turbo-rs", feature = "rusty_jpeg"))]
pub(super) fn packed<'a>(pixels: &PixelsRef<'a>) -> std::borrow::Cow<'a, [u8]> {
    if pixels.is_packed() {
        std::borrow::Cow::Borrowed(pixels.data())
    } else {
        std::borrow::Cow::Owned(pixels.rows().flatten().copied().collect())
    }
}

/// Rows `[top, bottom)` of `pixels` as their own image.
pub(super) fn rows_of<'a>(
    pixels: &PixelsRef<'a>,
    top: u32,
    bottom: u32,
) -> Result<PixelsRef<'a>, JpegError> {
    let step = pixels.step();
    let data = pixels
        .data()
        .get(top as usize * step..bottom as usize * step)
        .ok_or_else(|| JpegError::Encoder("strip outside the image".into()))?;
    Ok(PixelsRef::new(
        pixels.width(),
        bottom - top,
        step,
        pixels.format(),
        data,
    )?)
}

/// Adds `offset` to the number of every restart marker in `entropy` (mod 8). Inside
/// entropy-coded data a 0xFF byte is either stuffed (`FF 00`) or starts a marker, so every
/// `FF D0..=D7` is a restart marker.
fn renumber_restarts(entropy: &mut [u8], offset: u32) {
    // infallible: a number mod 8 fits a u8
    let offset = u8::try_from(offset % 8).unwrap_or_default();
    if offset == 0 {
        return;
    }
    let mut pos = 0;
    while let Some(found) = entropy
        .get(pos..)
        .and_then(|rest| rest.iter().position(|&b| b == 0xFF))
    {
        let at = pos + found + 1;
        if let Some(code) = entropy.get_mut(at)
            && (0xD0..=0xD7).contains(code)
        {
            *code = 0xD0 + ((*code - 0xD0 + offset) % 8);
        }
        pos = at;
    }
}

/// Where the parts of a file an encoder wrote lie.
struct Layout {
    /// The segments from SOI (excluded) to SOS (excluded), without any DRI.
    header: Vec<std::ops::Range<usize>>,
    /// Offset of the SOF marker.
    sof: usize,
    /// The SOS segment; the entropy-coded data follows it.
    scan_header: std::ops::Range<usize>,
}

impl Layout {
    fn of(file: &[u8]) -> Result<Self, JpegError> {
        let bad = || JpegError::Encoder("unexpected encoder output".into());
        let mut pos = 2;
        let mut sof = None;
        let mut header = Vec::new();
        loop {
            let (Some(0xFF), Some(&code)) = (file.get(pos), file.get(pos + 1)) else {
                return Err(bad());
            };
            let length = file
                .get(pos + 2..pos + 4)
                .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
                .ok_or_else(bad)?;
            let segment = pos..pos + 2 + length;
            match code {
                0xC0..=0xC2 => sof = Some(pos),
                0xDA => {
                    return Ok(Self {
                        header,
                        sof: sof.ok_or_else(bad)?,
                        scan_header: segment,
                    });
                }
                _ => {}
            }
            if code != 0xDD {
                header.push(segment.clone());
            }
            pos = segment.end;
        }
    }

    /// The entropy-coded data: from the end of the SOS segment to the EOI marker.
    fn entropy<'a>(&self, file: &'a [u8]) -> Option<&'a [u8]> {
        file.get(self.scan_header.end..file.len().checked_sub(2)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbers_restart_markers_only() {
        let mut data = [1, 0xFF, 0xD0, 2, 0xFF, 0x00, 0xFF, 0xD7, 0xFF, 0xD3];
        renumber_restarts(&mut data, 9);
        assert_eq!(data, [1, 0xFF, 0xD1, 2, 0xFF, 0x00, 0xFF, 0xD0, 0xFF, 0xD4]);
    }
}

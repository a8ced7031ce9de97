//! Parallel decoding of baseline files whose restart interval is a whole number of MCU rows.
//!
//! Such a file is a stack of strips (one restart interval each) whose entropy-coded data can
//! be decoded independently: the DC predictions restart at every marker. Each piece of
//! consecutive strips becomes a small JPEG of its own (the file's tables, a frame header
//! declaring the piece's height, the strips' data with restart markers renumbered from 0),
//! decoded by zune-jpeg on rayon's pool straight into the piece's rows of the output.
//!
//! With vertically subsampled chroma (4:2:0) zune-jpeg's upsampling interpolates between
//! chroma rows, so the first and last rows of a strip depend on the strips around it. There a
//! piece also decodes one strip above and one below as context, into a buffer of its own,
//! and copies only its rows out: the output equals the sequential decode's (tests check
//! that), at the cost of two extra strips per piece.
//!
//! Anything that does not fit (progressive or multi-scan files, restart intervals that are
//! not whole MCU rows, restart markers missing, extra or out of order, fill bytes, a
//! decode-memory estimate over the limit) returns `None` from [`plan`] and is decoded
//! sequentially, as is a file whose pieces fail to decode.

use std::ops::Range;

use rayon::prelude::*;
use zune_core::bytestream::ZCursor;
use zune_core::options::DecoderOptions;

use super::JpegError;
use super::decode::guard;
use super::markers::FrameInfo;

/// Where the pieces of a restart-marked file lie, found by [`plan`].
#[derive(Debug)]
pub(super) struct Plan {
    /// The segments a piece's file needs before its scan (SOI excluded): everything before
    /// the SOS except comments and application segments other than JFIF (APP0) and Adobe
    /// (APP14, which says how the colours are coded).
    header: Vec<Range<usize>>,
    /// Offset of the frame's height field in `data`.
    height_field: usize,
    /// The SOS segment.
    scan_header: Range<usize>,
    /// The entropy-coded data of each strip, restart markers excluded.
    strips: Vec<Range<usize>>,
    /// Pixel rows per strip.
    strip_rows: u32,
    /// Whether a strip's first and last rows depend on the strips around it.
    needs_context: bool,
}

/// Big-endian u16 at `pos`.
fn be16(data: &[u8], pos: usize) -> Option<usize> {
    let bytes = data.get(pos..pos.checked_add(2)?)?;
    Some(usize::from(u16::from_be_bytes([
        *bytes.first()?,
        *bytes.get(1)?,
    ])))
}

/// Finds the strips of `data`, whose structure the pre-scan has checked and described as
/// `info`, or `None` if the file cannot be decoded in strips.
pub(super) fn plan(data: &[u8], info: &FrameInfo) -> Option<Plan> {
    if info.progressive || info.scans != 1 || info.first_scan_components != info.components {
        return None;
    }
    if !matches!(info.components, 1 | 3) {
        return None;
    }
    // A single-component scan codes one 8x8 block per MCU whatever its sampling factors.
    let (h_max, v_max) = if info.components == 1 {
        (1, 1)
    } else {
        info.max_sampling()
    };
    let mcu_width = 8 * h_max;
    let mcu_height = 8 * v_max;
    let mcu_columns = usize::try_from(info.width).ok()?.div_ceil(mcu_width);
    let mcu_rows = usize::try_from(info.height).ok()?.div_ceil(mcu_height);

    // Walk the segments up to the SOS.
    let mut header = Vec::new();
    let mut height_field = None;
    let mut restart_interval = 0;
    let mut pos = 2;
    let scan_header = loop {
        if data.get(pos) != Some(&0xFF) {
            return None;
        }
        let code = *data.get(pos + 1)?;
        let length = be16(data, pos + 2)?;
        let segment = pos..pos.checked_add(2 + length)?;
        match code {
            0xC0 | 0xC1 => height_field = Some(pos + 5),
            0xDD => restart_interval = be16(data, pos + 4)?,
            0xDA => break segment,
            _ => {}
        }
        if !matches!(code, 0xE1..=0xED | 0xEF | 0xFE) {
            header.push(segment.clone());
        }
        pos = segment.end;
    };
    if restart_interval == 0 || !restart_interval.is_multiple_of(mcu_columns) {
        return None;
    }
    let strip_mcu_rows = restart_interval / mcu_columns;
    let strip_count = mcu_rows.div_ceil(strip_mcu_rows);
    if strip_count < 2 {
        return None;
    }

    // The entropy-coded data: exactly `strip_count - 1` restart markers, numbered in order.
    let mut strips = Vec::with_capacity(strip_count);
    let mut start = scan_header.end;
    let mut pos = start;
    loop {
        let found = data.get(pos..)?.iter().position(|&b| b == 0xFF)?;
        pos += found;
        match *data.get(pos + 1)? {
            0x00 => pos += 2,
            code @ 0xD0..=0xD7 => {
                let expected = strips.len() % 8;
                if usize::from(code - 0xD0) != expected || strips.len() + 1 >= strip_count {
                    return None;
                }
                strips.push(start..pos);
                pos += 2;
                start = pos;
            }
            0xD9 => {
                strips.push(start..pos);
                break;
            }
            // Fill bytes or another marker before the end of the image.
            _ => return None,
        }
    }
    if strips.len() != strip_count {
        return None;
    }
    let needs_context =
        info.components > 1 && info.used_sampling().any(|&(_, v)| usize::from(v) < v_max);
    Some(Plan {
        header,
        height_field: height_field?,
        scan_header,
        strips,
        strip_rows: u32::try_from(strip_mcu_rows * mcu_height).ok()?,
        needs_context,
    })
}

impl Plan {
    /// Number of strips.
    pub(super) fn strips(&self) -> usize {
        self.strips.len()
    }

    /// Pieces: strips `[first(p), first(p + 1))` for piece `p`.
    fn first_strip(&self, piece: usize, pieces: usize) -> usize {
        piece * self.strips.len() / pieces
    }

    /// Bytes of working memory beyond the output that decoding in `pieces` pieces needs,
    /// given `one_decode` for a single decoder's buffers: each piece's file, and with
    /// context each piece's own output buffer.
    pub(super) fn extra_bytes(
        &self,
        data: &[u8],
        pieces: usize,
        row_bytes: usize,
        one_decode: usize,
    ) -> Option<usize> {
        let files = data
            .len()
            .checked_add(pieces.checked_mul(self.header_len() + 16)?)?;
        let decoders = one_decode.checked_mul(pieces)?;
        let buffers = if self.needs_context {
            let rows = usize::try_from(self.strip_rows).ok()?;
            // All the rows once, plus two context strips per piece.
            let total_rows = rows.checked_mul(self.strips.len() + 2 * pieces)?;
            total_rows.checked_mul(row_bytes)?
        } else {
            0
        };
        files.checked_add(decoders)?.checked_add(buffers)
    }

    fn header_len(&self) -> usize {
        self.header.iter().map(|range| range.len()).sum::<usize>() + self.scan_header.len()
    }

    /// The file of strips `[first, end)`, declaring `height` rows.
    fn piece_file(&self, data: &[u8], strips: Range<usize>, height: u16) -> Option<Vec<u8>> {
        let data_len: usize = self
            .strips
            .get(strips.clone())?
            .iter()
            .map(|range| range.len() + 2)
            .sum();
        let mut file = Vec::with_capacity(2 + self.header_len() + data_len + 2);
        file.extend_from_slice(&[0xFF, 0xD8]);
        for segment in &self.header {
            let start = file.len();
            file.extend_from_slice(data.get(segment.clone())?);
            if segment.contains(&self.height_field) {
                let at = start + (self.height_field - segment.start);
                file.get_mut(at..at + 2)?
                    .copy_from_slice(&height.to_be_bytes());
            }
        }
        file.extend_from_slice(data.get(self.scan_header.clone())?);
        for (index, strip) in self.strips.get(strips)?.iter().enumerate() {
            if index > 0 {
                let marker = u8::try_from((index - 1) % 8).ok()?;
                file.extend_from_slice(&[0xFF, 0xD0 + marker]);
            }
            file.extend_from_slice(data.get(strip.clone())?);
        }
        file.extend_from_slice(&[0xFF, 0xD9]);
        Some(file)
    }

    /// Decodes the file in `pieces` pieces into `out` (`height` rows of `row_bytes`), with
    /// zune-jpeg `options`.
    pub(super) fn decode(
        &self,
        data: &[u8],
        height: u32,
        pieces: usize,
        row_bytes: usize,
        out: &mut [u8],
        options: DecoderOptions,
    ) -> Result<(), JpegError> {
        let corrupt = |what: &str| JpegError::Corrupt(format!("restart strips: {what}"));
        let strip_count = self.strips.len();
        let row_of_strip = |strip: usize| {
            u32::try_from(strip)
                .ok()
                .and_then(|s| s.checked_mul(self.strip_rows))
                .map_or(height, |row| row.min(height))
        };
        // Cut `out` into each piece's rows.
        let mut outputs = Vec::with_capacity(pieces);
        let mut rest = out;
        for piece in 0..pieces {
            let first = self.first_strip(piece, pieces);
            let end = self.first_strip(piece + 1, pieces);
            let rows = row_of_strip(end) - row_of_strip(first);
            let len = rows as usize * row_bytes;
            if rest.len() < len {
                return Err(corrupt("output smaller than the frame"));
            }
            let (mine, others) = rest.split_at_mut(len);
            outputs.push((first..end, mine));
            rest = others;
        }

        let results: Vec<Result<(), JpegError>> = outputs
            .into_par_iter()
            .map(|(strips, output)| {
                let context = usize::from(self.needs_context);
                let coded =
                    strips.start.saturating_sub(context)..(strips.end + context).min(strip_count);
                let top = row_of_strip(coded.start);
                let coded_height = row_of_strip(coded.end) - top;
                let height16 = u16::try_from(coded_height).map_err(|_| corrupt("height"))?;
                let file = self
                    .piece_file(data, coded, height16)
                    .ok_or_else(|| corrupt("strip outside the file"))?;
                let mut decoder =
                    zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(&file), options);
                guard(|| decoder.decode_headers())?;
                let coded_len = coded_height as usize * row_bytes;
                if decoder.output_buffer_size() != Some(coded_len) {
                    return Err(corrupt("piece size"));
                }
                if coded_len == output.len() {
                    guard(|| decoder.decode_into(output))
                } else {
                    let mut buffer = vec![0; coded_len];
                    guard(|| decoder.decode_into(&mut buffer))?;
                    let skip = (row_of_strip(strips.start) - top) as usize * row_bytes;
                    let rows = buffer
                        .get(skip..skip + output.len())
                        .ok_or_else(|| corrupt("context rows"))?;
                    output.copy_from_slice(rows);
                    Ok(())
                }
            })
            .collect();
        results.into_iter().collect()
    }
}

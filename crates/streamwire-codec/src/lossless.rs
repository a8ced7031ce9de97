//! Lossless engine: one plain zstd frame of packed rows.
//!
//! The format is deliberately nothing but a standard zstd frame of the rows as they are in
//! memory (for depth: little-endian `u16`, millimetres), with the content size and a checksum
//! in the frame header, so `zstd -d` and every zstd binding can read it. Depth images need it
//! because JPEG would silently cut them to 8 bits.
//!
//! Measured on the two real 640x480 depth frames of `rgbd_pointcloud` (614 400 bytes raw;
//! release build on 2 shared cores, medians of 21 runs, `cargo run --release -p
//! streamwire-codec --example measure_depth`):
//!
//! | level | milk_cartoon: ratio, compress, decompress | table_scene_mug: ratio, compress, decompress |
//! |---|---|---|
//! | 1 | 5.49:1, 1.83 ms, 0.80 ms | 6.59:1, 1.39 ms, 0.54 ms |
//! | 3 | 5.77:1, 2.11 ms, 0.74 ms | 6.89:1, 1.40 ms, 0.54 ms |
//! | 6 | 6.48:1, 7.77 ms, 0.65 ms | 7.80:1, 5.56 ms, 0.46 ms |
//! | (their PNG files) | 6.62:1 | 8.72:1 |
//!
//! A byte-plane split (all high bytes, then all low bytes) changed the size by +9.3% / +7.0%
//! at level 1, -3.8% / -2.7% at level 3 and -1.5% / 0.0% at level 6: no consistent gain, so
//! it stays out of the format.
//!
//! ```
//! use streamwire_codec::lossless::{compress_rows, decompress_exact};
//!
//! // Two rows of a 3x2 u16 depth image, each with 2 bytes of padding to drop.
//! let padded: [[u8; 8]; 2] = [[1, 0, 2, 0, 3, 0, 0xEE, 0xEE], [4, 1, 5, 1, 6, 1, 0xEE, 0xEE]];
//! let rows = padded.iter().map(|row| &row[..6]);
//! let frame = compress_rows(rows, 12, 3)?;
//! assert_eq!(decompress_exact(&frame, 12)?, [1, 0, 2, 0, 3, 0, 4, 1, 5, 1, 6, 1]);
//! assert!(decompress_exact(&frame, 13).is_err());
//! # Ok::<(), streamwire_codec::lossless::LosslessError>(())
//! ```

use std::io::Write;

use zstd::zstd_safe;
use zstd_safe::zstd_sys::ZSTD_ErrorCode;

/// The zstd frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// A zstd block decodes to at most 128 KiB, and the densest block (RLE: 3-byte header plus one
/// byte) takes 4 bytes, so no valid frame expands more than 32768-fold. Refusing content sizes
/// beyond that bounds what a tiny hostile frame can make us allocate.
const MAX_BYTES_PER_INPUT_BYTE: usize = (128 << 10) / 4;

/// Why rows could not be compressed or a frame decompressed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LosslessError {
    /// The compression level is outside zstd's range.
    #[error("zstd level {level} is outside {min}..={max}")]
    InvalidLevel {
        /// Level asked for.
        level: i32,
        /// zstd's lowest level.
        min: i32,
        /// zstd's highest level.
        max: i32,
    },
    /// The rows did not add up to the declared total length.
    #[error("rows hold {actual} bytes, declared total {declared}")]
    LengthMismatch {
        /// The `total_len` passed in.
        declared: usize,
        /// Bytes the rows held (counted up to the first excess).
        actual: usize,
    },
    /// The data does not start with the zstd frame magic number.
    #[error("not a zstd frame")]
    NotZstd,
    /// The frame header does not record the content size.
    #[error("zstd frame does not record its content size")]
    ContentSizeMissing,
    /// The frame's content size differs from the expected length.
    #[error("zstd frame holds {declared} bytes, expected {expected}")]
    ContentSizeMismatch {
        /// Content size in the frame header.
        declared: u64,
        /// Length the caller expects.
        expected: usize,
    },
    /// The expected length is more than any valid frame of this size can expand to.
    #[error("{expected} bytes cannot come from a {compressed}-byte zstd frame")]
    Implausible {
        /// Length the caller expects.
        expected: usize,
        /// Compressed bytes given.
        compressed: usize,
    },
    /// The frame ends early.
    #[error("truncated zstd frame")]
    Truncated,
    /// Bytes follow the frame.
    #[error("{trailing} bytes follow the zstd frame")]
    TrailingData {
        /// Bytes after the frame.
        trailing: usize,
    },
    /// The frame is invalid (bad block, checksum mismatch, wrong decoded length).
    #[error("corrupt zstd frame: {0}")]
    Corrupt(String),
    /// zstd reported an error while compressing.
    #[error("zstd: {0}")]
    Zstd(#[from] std::io::Error),
}

/// Lossless zstd of packed rows. `rows` yields each row's bytes WITHOUT padding, in order;
/// they are written into one zstd frame that records the content size (so the decoder can
/// check it) and a checksum.
///
/// Rows are streamed into the compressor, so a padded image is never copied to a packed one.
/// Level 1 is the usual choice for a camera stream: see `examples/measure_depth.rs`.
///
/// # Errors
/// [`LosslessError::InvalidLevel`], [`LosslessError::LengthMismatch`] if the rows do not add up
/// to `total_len`, [`LosslessError::Zstd`].
pub fn compress_rows<'a>(
    rows: impl Iterator<Item = &'a [u8]>,
    total_len: usize,
    level: i32,
) -> Result<Vec<u8>, LosslessError> {
    let range = zstd::compression_level_range();
    if !range.contains(&level) {
        return Err(LosslessError::InvalidLevel {
            level,
            min: *range.start(),
            max: *range.end(),
        });
    }
    // The bound is what a single-shot compression could need: no reallocation on the way.
    let out = Vec::with_capacity(zstd_safe::compress_bound(total_len));
    let mut encoder = zstd::stream::write::Encoder::new(out, level)?;
    encoder.include_contentsize(true)?;
    encoder.include_checksum(true)?;
    encoder.set_pledged_src_size(Some(total_len as u64))?;
    let mut written = 0usize;
    for row in rows {
        written = written.saturating_add(row.len());
        if written > total_len {
            return Err(LosslessError::LengthMismatch {
                declared: total_len,
                actual: written,
            });
        }
        encoder.write_all(row)?;
    }
    if written != total_len {
        return Err(LosslessError::LengthMismatch {
            declared: total_len,
            actual: written,
        });
    }
    Ok(encoder.finish()?)
}

/// Decompresses into exactly `expected_len` bytes: refuses a frame whose content size is absent
/// or differs, truncated input, trailing garbage, and never allocates more than `expected_len`
/// (+ the decompression context, a constant).
///
/// Before allocating, it also refuses an `expected_len` no valid frame of `data.len()` bytes
/// could expand to (32768 output bytes per input byte), so a caller taking `expected_len` from
/// an untrusted header cannot be made to allocate much for a small frame.
///
/// # Errors
/// [`LosslessError::NotZstd`], [`LosslessError::ContentSizeMissing`],
/// [`LosslessError::ContentSizeMismatch`], [`LosslessError::Implausible`],
/// [`LosslessError::Truncated`], [`LosslessError::TrailingData`], [`LosslessError::Corrupt`].
pub fn decompress_exact(data: &[u8], expected_len: usize) -> Result<Vec<u8>, LosslessError> {
    if data.get(..4) != Some(&ZSTD_MAGIC[..]) {
        return Err(LosslessError::NotZstd);
    }
    match zstd_safe::get_frame_content_size(data) {
        Ok(Some(declared)) if declared == expected_len as u64 => {}
        Ok(Some(declared)) => {
            return Err(LosslessError::ContentSizeMismatch {
                declared,
                expected: expected_len,
            });
        }
        Ok(None) => return Err(LosslessError::ContentSizeMissing),
        // The header itself is cut short or invalid.
        Err(_) if data.len() < 18 => return Err(LosslessError::Truncated),
        Err(error) => return Err(LosslessError::Corrupt(error.to_string())),
    }
    if expected_len > data.len().saturating_mul(MAX_BYTES_PER_INPUT_BYTE) {
        return Err(LosslessError::Implausible {
            expected: expected_len,
            compressed: data.len(),
        });
    }
    let frame_len = zstd_safe::find_frame_compressed_size(data).map_err(zstd_error)?;
    if frame_len < data.len() {
        return Err(LosslessError::TrailingData {
            trailing: data.len() - frame_len,
        });
    }
    let mut out = Vec::with_capacity(expected_len);
    let mut context = zstd_safe::DCtx::try_create()
        .ok_or_else(|| LosslessError::Corrupt("cannot create a zstd context".into()))?;
    let written = context.decompress(&mut out, data).map_err(zstd_error)?;
    if written != expected_len || out.len() != expected_len {
        return Err(LosslessError::Corrupt(format!(
            "decoded {written} bytes, expected {expected_len}"
        )));
    }
    Ok(out)
}

fn zstd_error(code: zstd_safe::ErrorCode) -> LosslessError {
    if zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_srcSize_wrong) {
        LosslessError::Truncated
    } else {
        LosslessError::Corrupt(zstd_safe::get_error_name(code).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_lengths() {
        let rows: Vec<Vec<u8>> = (0..10u8).map(|y| vec![y; 7]).collect();
        let frame = compress_rows(rows.iter().map(Vec::as_slice), 70, 3).unwrap();
        assert_eq!(decompress_exact(&frame, 70).unwrap(), rows.concat());
        assert!(matches!(
            compress_rows(rows.iter().map(Vec::as_slice), 69, 3),
            Err(LosslessError::LengthMismatch { declared: 69, .. })
        ));
        assert!(matches!(
            compress_rows(rows.iter().map(Vec::as_slice), 71, 3),
            Err(LosslessError::LengthMismatch {
                declared: 71,
                actual: 70
            })
        ));
        assert!(matches!(
            compress_rows(rows.iter().map(Vec::as_slice), 70, 1000),
            Err(LosslessError::InvalidLevel { level: 1000, .. })
        ));
    }

    #[test]
    fn refuses_implausible_expansion() {
        let zeros = vec![0u8; 1 << 20];
        let frame = compress_rows(std::iter::once(zeros.as_slice()), zeros.len(), 3).unwrap();
        // Valid frames always pass the bound.
        assert_eq!(decompress_exact(&frame, zeros.len()).unwrap(), zeros);
        // A 13-byte frame declaring 1 GiB: magic, header descriptor (single segment, 4-byte
        // content size), the size, then one last RLE block of 128 KiB.
        let mut hostile = ZSTD_MAGIC.to_vec();
        hostile.push(0b1010_0000);
        hostile.extend_from_slice(&(1u32 << 30).to_le_bytes());
        let block_header = 1 | (1 << 1) | ((128u32 << 10) << 3);
        hostile.extend_from_slice(&block_header.to_le_bytes()[..3]);
        hostile.push(0);
        let err = decompress_exact(&hostile, 1 << 30).unwrap_err();
        assert!(
            matches!(
                err,
                LosslessError::Implausible {
                    expected: 0x4000_0000,
                    compressed: 13
                }
            ),
            "{err}"
        );
    }
}

//! The quality a JPEG was encoded at, read back from its luminance quantization table, as
//! ImageMagick's `identify` does: for a file made with the standard (Annex K) tables
//! scaled by the IJG formula (jpeg-encoder, libjpeg-turbo and most cameras' libjpeg), the
//! table's sum gives the quality back exactly; for other tables, the nearest.

/// The Annex K luminance table (order does not matter: only its sum is compared).
const ANNEX_K_LUMA: [u32; 64] = [
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113,
    92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/// The sum of the Annex K luminance table scaled for `quality` (IJG's `jpeg_quality_scaling`,
/// entries clamped to 1..=255 as a baseline file stores them).
fn scaled_sum(quality: u32) -> u32 {
    let scale = if quality < 50 {
        5000 / quality
    } else {
        200 - quality * 2
    };
    ANNEX_K_LUMA
        .iter()
        .map(|&v| ((v * scale + 50) / 100).clamp(1, 255))
        .sum()
}

/// The quality (1..=100) whose standard luminance table is nearest the file's (table 0 of
/// its first DQT segment), or `None` when the data has no such table before its first
/// scan. Reads only the header segments; the entropy-coded data is not touched.
pub fn estimate_quality(data: &[u8]) -> Option<u8> {
    let sum = luma_table_sum(data)?;
    (1..=100u32)
        .rev()
        .min_by_key(|&q| scaled_sum(q).abs_diff(sum))
        .and_then(|q| u8::try_from(q).ok())
}

/// The sum of the entries of quantization table 0.
fn luma_table_sum(data: &[u8]) -> Option<u32> {
    if data.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut pos = 2;
    loop {
        if *data.get(pos)? != 0xFF {
            return None;
        }
        let marker = *data.get(pos + 1)?;
        if marker == 0xDA || marker == 0xD9 {
            return None;
        }
        let length = usize::from(u16::from_be_bytes([
            *data.get(pos + 2)?,
            *data.get(pos + 3)?,
        ]));
        let segment = data.get(pos + 4..pos + 2 + length)?;
        if marker == 0xDB
            && let Some(sum) = table_zero_in_dqt(segment)
        {
            return Some(sum);
        }
        pos += 2 + length;
    }
}

/// Table 0's sum in one DQT segment's payload (which may hold several tables).
fn table_zero_in_dqt(mut segment: &[u8]) -> Option<u32> {
    while let Some((&info, rest)) = segment.split_first() {
        let (precision, id) = (info >> 4, info & 0x0F);
        let width = if precision == 0 { 1 } else { 2 };
        let entries = rest.get(..64 * width)?;
        if id == 0 {
            return Some(if width == 1 {
                entries.iter().map(|&b| u32::from(b)).sum()
            } else {
                entries
                    .chunks_exact(2)
                    .map(|pair| u32::from(u16::from_be_bytes([pair[0], pair[1]])))
                    .sum()
            });
        }
        segment = &rest[64 * width..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jpeg::{EncodeOptions, PixelFormat, PixelsRef, encode};

    #[test]
    fn the_quality_comes_back_from_the_tables() {
        let pixels: Vec<u8> = (0..64 * 48 * 3).map(|i| (i * 7 % 251) as u8).collect();
        let image = PixelsRef::new(64, 48, 64 * 3, PixelFormat::Rgb8, &pixels).unwrap();
        for quality in 1..=100 {
            let options = EncodeOptions {
                quality,
                ..EncodeOptions::default()
            };
            let jpeg = encode(&image, &options).unwrap();
            assert_eq!(estimate_quality(&jpeg.data), Some(quality), "q{quality}");
        }
    }

    #[test]
    fn bytes_without_a_table_have_no_quality() {
        assert_eq!(estimate_quality(b""), None);
        assert_eq!(estimate_quality(b"\xFF\xD8\xFF\xD9"), None);
        assert_eq!(estimate_quality(b"not a jpeg"), None);
        assert_eq!(estimate_quality(b"\xFF\xD8\xFF\xDB\x00\x43\x00"), None);
    }
}

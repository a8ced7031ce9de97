//! A cheap linear pre-scan of a JPEG's marker structure.
//!
//! It runs before the real decoder and allocates nothing, so a hostile file is refused before
//! any buffer proportional to its *declared* size exists. Two known attacks motivate it: a
//! 258-byte file whose header declares a huge image (a decoder sized its buffers from the header
//! and reached 2.4 GB of heap), and a 38 KB progressive file with 1000+ scans that took a minute
//! to decode (each scan re-walks every coefficient).
//!
//! The scan walks SOI, then segment after segment by their lengths; after each SOS it skips
//! the entropy-coded data (byte stuffing `FF 00`, restart markers `FF D0..D7`, fill bytes `FF FF`)
//! up to the next marker, counting data bytes, and stops at EOI, which is required.

use super::JpegError;
use super::decode::DecodeLimits;

/// JPEG allows at most four components per frame in the modes we decode.
const MAX_COMPONENTS: usize = 4;

/// What the pre-scan learnt about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameInfo {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) components: u8,
    pub(crate) progressive: bool,
    /// Number of SOS segments.
    pub(crate) scans: u32,
    /// Components in the first scan (fewer than `components` means non-interleaved).
    pub(crate) first_scan_components: u8,
    /// (horizontal, vertical) sampling factor of each component, 1..=4.
    pub(crate) sampling: [(u8, u8); MAX_COMPONENTS],
    /// Entropy-coded bytes over all scans, markers excluded, a stuffed `FF 00` counted once.
    pub(crate) entropy_bytes: usize,
}

impl FrameInfo {
    pub(crate) fn max_sampling(&self) -> (usize, usize) {
        self.used_sampling().fold((1, 1), |(h, v), &(ch, cv)| {
            (h.max(ch.into()), v.max(cv.into()))
        })
    }

    pub(crate) fn used_sampling(&self) -> impl Iterator<Item = &(u8, u8)> {
        self.sampling.iter().take(usize::from(self.components))
    }

    /// Number of 8x8 blocks the frame codes, over all components, without MCU padding.
    /// `None` on overflow.
    pub(crate) fn blocks(&self) -> Option<usize> {
        let (h_max, v_max) = self.max_sampling();
        let width = usize::try_from(self.width).ok()?;
        let height = usize::try_from(self.height).ok()?;
        self.used_sampling().try_fold(0usize, |total, &(h, v)| {
            // Component size per T.81 A.1.1: ceil(X * h / h_max), then 8x8 blocks.
            let cw = width.checked_mul(h.into())?.div_ceil(h_max);
            let ch = height.checked_mul(v.into())?.div_ceil(v_max);
            total.checked_add(cw.div_ceil(8).checked_mul(ch.div_ceil(8))?)
        })
    }

    /// Estimated peak memory of a decode into `out_bpp` bytes per pixel: the output plus the
    /// decoder's coefficient buffers. A progressive (or non-interleaved) frame keeps every
    /// coefficient of the image as an `i16`, ~2 bytes per sample per component; a baseline
    /// interleaved frame needs only buffers for one row of MCUs. `None` on overflow.
    pub(crate) fn decode_bytes(&self, out_bpp: usize) -> Option<usize> {
        let width = usize::try_from(self.width).ok()?;
        let height = usize::try_from(self.height).ok()?;
        let output = width.checked_mul(height)?.checked_mul(out_bpp)?;

        let (h_max, v_max) = self.max_sampling();
        let mcu_x = width.div_ceil(8 * h_max);
        let mcu_y = height.div_ceil(8 * v_max);
        let whole_frame = self.progressive || self.first_scan_components < self.components;
        let working = self.used_sampling().try_fold(0usize, |total, &(h, v)| {
            let padded_w = mcu_x.checked_mul(usize::from(h) * 8)?;
            let rows = if whole_frame {
                mcu_y.checked_mul(usize::from(v) * 8)?
            } else {
                // One MCU row, held a few times over (coefficients, upsampling rows).
                usize::from(v) * 8 * 4
            };
            total.checked_add(padded_w.checked_mul(rows)?.checked_mul(2)?)
        })?;
        output.checked_add(working)
    }
}

/// Reads a big-endian u16 at `pos`.
fn be16(data: &[u8], pos: usize) -> Option<u16> {
    let bytes = data.get(pos..pos.checked_add(2)?)?;
    Some(u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]))
}

fn truncated(context: &'static str, needed: usize, available: usize) -> JpegError {
    JpegError::Truncated {
        context,
        needed,
        available,
    }
}

/// Walks the marker structure of `data` and enforces `limits`.
///
/// `out_bpp` is the bytes per output pixel the caller will decode into; it sizes the
/// decoded-bytes estimate checked against [`DecodeLimits::max_decoded_bytes`].
///
/// Checks, in the order met: SOI; every segment inside the data; one supported SOF (baseline,
/// extended or progressive Huffman, 8-bit, 1, 3 or 4 components, sampling 1..=4) with sides
/// within the limits and an estimated decode size within the limit; at most `max_scans` SOS;
/// an EOI; and at least one entropy-coded byte per eight 8x8 blocks (each block's DC
/// coefficient takes at least one bit), else [`JpegError::Truncated`].
pub(crate) fn scan(
    data: &[u8],
    limits: &DecodeLimits,
    out_bpp: usize,
) -> Result<FrameInfo, JpegError> {
    if data.get(..2) != Some(&[0xFF, 0xD8][..]) {
        return Err(JpegError::NotAJpeg);
    }
    let mut frame: Option<FrameInfo> = None;
    let mut scans: u32 = 0;
    let mut entropy_bytes: usize = 0;
    let mut pos = 2;

    loop {
        // A marker: 0xFF, optional 0xFF fill bytes, then the code.
        match data.get(pos) {
            None => return Err(truncated("marker", pos + 1, data.len())),
            Some(0xFF) => {}
            Some(&other) => {
                return Err(JpegError::Corrupt(format!(
                    "expected a marker at offset {pos}, found byte {other:#04x}"
                )));
            }
        }
        while data.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        let Some(&code) = data.get(pos + 1) else {
            return Err(truncated("marker", pos + 2, data.len()));
        };
        pos += 2;

        match code {
            0xD9 => break,
            // Standalone markers without a length: TEM, and RST outside a scan (harmless).
            0x01 | 0xD0..=0xD7 => continue,
            0xD8 | 0x00 => {
                return Err(JpegError::Corrupt(format!(
                    "unexpected marker 0xFF{code:02X} at offset {}",
                    pos - 2
                )));
            }
            _ => {}
        }

        let length =
            be16(data, pos).ok_or_else(|| truncated("segment length", pos + 2, data.len()))?;
        let length = usize::from(length);
        if length < 2 {
            return Err(JpegError::Corrupt(format!(
                "segment 0xFF{code:02X} has invalid length {length}"
            )));
        }
        let end = pos + length;
        let segment = data
            .get(pos + 2..end)
            .ok_or_else(|| truncated("segment", end, data.len()))?;

        match code {
            0xC0..=0xC2 => {
                if frame.is_some() {
                    return Err(JpegError::Corrupt("more than one start-of-frame".into()));
                }
                let info = parse_sof(segment, code == 0xC2, limits)?;
                let bytes = info.decode_bytes(out_bpp).unwrap_or(usize::MAX);
                if bytes > limits.max_decoded_bytes {
                    return Err(JpegError::DecodedBytesOverLimit {
                        bytes,
                        max: limits.max_decoded_bytes,
                    });
                }
                frame = Some(info);
            }
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                return Err(JpegError::Unsupported(format!(
                    "start-of-frame 0xFF{code:02X} (lossless, hierarchical or arithmetic coding)"
                )));
            }
            0xDA => {
                let Some(info) = frame.as_mut() else {
                    return Err(JpegError::Corrupt(
                        "start-of-scan before start-of-frame".into(),
                    ));
                };
                let in_scan = *segment
                    .first()
                    .ok_or_else(|| JpegError::Corrupt("empty start-of-scan segment".into()))?;
                if in_scan == 0 || in_scan > info.components {
                    return Err(JpegError::Corrupt(format!(
                        "scan of {in_scan} components in a frame of {}",
                        info.components
                    )));
                }
                scans = scans.saturating_add(1);
                if scans > limits.max_scans {
                    return Err(JpegError::TooManyScans {
                        scans,
                        max: limits.max_scans,
                    });
                }
                if scans == 1 {
                    info.first_scan_components = in_scan;
                }
                let (next_marker, bytes) = skip_entropy_data(data, end)?;
                entropy_bytes = entropy_bytes.saturating_add(bytes);
                pos = next_marker;
                continue;
            }
            _ => {}
        }
        pos = end;
    }

    let Some(mut info) = frame else {
        return Err(JpegError::Corrupt(
            "no start-of-frame before end-of-image".into(),
        ));
    };
    if scans == 0 {
        return Err(JpegError::Corrupt(
            "no start-of-scan before end-of-image".into(),
        ));
    }
    info.scans = scans;
    info.entropy_bytes = entropy_bytes;
    let min_entropy = info.blocks().unwrap_or(usize::MAX) / 8;
    if entropy_bytes < min_entropy {
        return Err(truncated("entropy-coded data", min_entropy, entropy_bytes));
    }
    Ok(info)
}

/// Parses a SOF0/1/2 payload (after the length) and checks it against `limits`.
fn parse_sof(
    segment: &[u8],
    progressive: bool,
    limits: &DecodeLimits,
) -> Result<FrameInfo, JpegError> {
    let short = || JpegError::Corrupt("start-of-frame segment too short".into());
    let precision = *segment.first().ok_or_else(short)?;
    let height = u32::from(be16(segment, 1).ok_or_else(short)?);
    let width = u32::from(be16(segment, 3).ok_or_else(short)?);
    let components = *segment.get(5).ok_or_else(short)?;
    if precision != 8 {
        return Err(JpegError::Unsupported(format!("{precision}-bit samples")));
    }
    if width == 0 {
        return Err(JpegError::Corrupt("frame width is zero".into()));
    }
    if height == 0 {
        return Err(JpegError::Unsupported(
            "height defined by a DNL marker (frame height zero)".into(),
        ));
    }
    if width > limits.max_width || height > limits.max_height {
        return Err(JpegError::TooLarge {
            width,
            height,
            max_width: limits.max_width,
            max_height: limits.max_height,
        });
    }
    if !matches!(components, 1 | 3 | 4) {
        return Err(JpegError::Unsupported(format!("{components} components")));
    }
    let mut sampling = [(1u8, 1u8); MAX_COMPONENTS];
    for (index, slot) in sampling
        .iter_mut()
        .take(usize::from(components))
        .enumerate()
    {
        // Each component: id, sampling byte (h << 4 | v), quantisation table.
        let factors = *segment.get(6 + 3 * index + 1).ok_or_else(short)?;
        let (h, v) = (factors >> 4, factors & 0x0F);
        if !(1..=4).contains(&h) || !(1..=4).contains(&v) {
            return Err(JpegError::Corrupt(format!("sampling factors {h}x{v}")));
        }
        *slot = (h, v);
    }
    Ok(FrameInfo {
        width,
        height,
        components,
        progressive,
        scans: 0,
        first_scan_components: components,
        sampling,
        entropy_bytes: 0,
    })
}

/// Skips entropy-coded data starting at `pos`. Returns the offset of the next real marker
/// (its 0xFF) and the number of data bytes skipped.
fn skip_entropy_data(data: &[u8], mut pos: usize) -> Result<(usize, usize), JpegError> {
    let mut bytes = 0usize;
    loop {
        // infallible: past the end reads as no bytes, which the loop below reports as truncated data
        let rest = data.get(pos..).unwrap_or_default();
        let Some(run) = rest.iter().position(|&b| b == 0xFF) else {
            return Err(truncated(
                "entropy-coded data (no end-of-image)",
                data.len() + 2,
                data.len(),
            ));
        };
        bytes += run;
        pos += run;
        match data.get(pos + 1) {
            None => {
                return Err(truncated(
                    "entropy-coded data (no end-of-image)",
                    pos + 2,
                    data.len(),
                ));
            }
            // Stuffed 0xFF data byte.
            Some(0x00) => {
                bytes += 1;
                pos += 2;
            }
            // Restart marker: part of the scan.
            Some(0xD0..=0xD7) => pos += 2,
            // Fill byte before a marker.
            Some(0xFF) => pos += 1,
            Some(_) => return Ok((pos, bytes)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> DecodeLimits {
        DecodeLimits::default()
    }

    /// SOI, SOF0 for a `width`x`height` grey frame, SOS, `data_len` entropy bytes, EOI.
    fn minimal(width: u16, height: u16, data_len: usize, eoi: bool) -> Vec<u8> {
        let mut out = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 11, 8];
        out.extend_from_slice(&height.to_be_bytes());
        out.extend_from_slice(&width.to_be_bytes());
        out.extend_from_slice(&[1, 1, 0x11, 0]);
        out.extend_from_slice(&[0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0]);
        out.extend(std::iter::repeat_n(0x12, data_len));
        if eoi {
            out.extend_from_slice(&[0xFF, 0xD9]);
        }
        out
    }

    #[test]
    fn reads_a_minimal_frame() {
        let info = scan(&minimal(16, 8, 4, true), &limits(), 1).unwrap();
        assert_eq!((info.width, info.height, info.components), (16, 8, 1));
        assert_eq!(
            (info.scans, info.entropy_bytes, info.progressive),
            (1, 4, false)
        );
        assert_eq!(info.blocks(), Some(2));
    }

    #[test]
    fn requires_end_of_image() {
        let err = scan(&minimal(16, 8, 4, false), &limits(), 1).unwrap_err();
        assert!(matches!(err, JpegError::Truncated { .. }), "{err}");
    }

    #[test]
    fn refuses_too_little_entropy_data() {
        // 800x800 grey = 10000 blocks needs >= 1250 bytes.
        let err = scan(&minimal(800, 800, 1249, true), &limits(), 1).unwrap_err();
        assert!(
            matches!(
                err,
                JpegError::Truncated {
                    needed: 1250,
                    available: 1249,
                    ..
                }
            ),
            "{err}"
        );
        assert!(scan(&minimal(800, 800, 1250, true), &limits(), 1).is_ok());
    }

    #[test]
    fn counts_stuffing_and_skips_restart_markers() {
        let mut jpeg = minimal(8, 8, 0, false);
        jpeg.extend_from_slice(&[1, 0xFF, 0x00, 2, 0xFF, 0xD3, 3, 0xFF, 0xFF, 0xD9]);
        let info = scan(&jpeg, &limits(), 1).unwrap();
        assert_eq!(info.entropy_bytes, 4);
    }

    #[test]
    fn refuses_over_the_dimension_limit() {
        let err = scan(&minimal(20000, 8, 4, true), &limits(), 1).unwrap_err();
        assert!(
            matches!(err, JpegError::TooLarge { width: 20000, .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_other_frame_types_and_garbage() {
        let mut jpeg = minimal(8, 8, 4, true);
        jpeg[3] = 0xC9; // arithmetic coding
        assert!(matches!(
            scan(&jpeg, &limits(), 1),
            Err(JpegError::Unsupported(_))
        ));
        assert!(matches!(
            scan(b"GIF89a", &limits(), 1),
            Err(JpegError::NotAJpeg)
        ));
        assert!(matches!(
            scan(&[0xFF, 0xD8, 0x00], &limits(), 1),
            Err(JpegError::Corrupt(_))
        ));
    }

    #[test]
    fn estimates_progressive_coefficients() {
        let mut info = scan(&minimal(64, 64, 64, true), &limits(), 3).unwrap();
        let baseline = info.decode_bytes(3).unwrap();
        info.progressive = true;
        // Output 64*64*3 plus 2 bytes per sample of the single component.
        assert_eq!(info.decode_bytes(3), Some(64 * 64 * 3 + 64 * 64 * 2));
        assert!(baseline < info.decode_bytes(3).unwrap());
    }
}

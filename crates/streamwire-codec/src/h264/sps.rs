//! Our own reading of a sequence parameter set, up to the frame size and its cropping
//! (ITU-T H.264 7.3.2.1.1), so that a hostile size is refused before OpenH264 sees it:
//! OpenH264 refuses 60000x60000 but still allocates for sizes up to about 4096x2304.

use super::H264Error;
use super::nal::{BitReader, unescape};

/// More than any SPS up to the frame size needs (the scaling lists are the long part:
/// twelve lists of up to 64 codes of at most 4 bytes each).
const SPS_PREFIX_LIMIT: usize = 4096;

/// What an SPS says about the pictures that follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpsInfo {
    /// `profile_idc`: 66 baseline, 77 main, 100 high, ...
    pub profile_idc: u8,
    /// `seq_parameter_set_id`.
    pub id: u32,
    /// Width after cropping, in pixels.
    pub width: u32,
    /// Height after cropping, in pixels.
    pub height: u32,
    /// Width in macroblocks times 16 (before cropping).
    pub coded_width: u32,
    /// Height in macroblocks times 16 (before cropping).
    pub coded_height: u32,
    /// `log2_max_frame_num_minus4 + 4`: the bits of a slice header's `frame_num`.
    pub log2_max_frame_num: u32,
    /// `frame_mbs_only_flag`: no interlaced fields.
    pub frame_mbs_only: bool,
    /// `gaps_in_frame_num_value_allowed_flag`.
    pub gaps_allowed: bool,
}

fn corrupt(what: &str) -> H264Error {
    H264Error::Corrupt(format!("SPS: {what}"))
}

/// Reads an SPS NAL unit (header byte included, emulation prevention still in).
pub fn parse(nal: &[u8]) -> Result<SpsInfo, H264Error> {
    let payload = unescape(nal, SPS_PREFIX_LIMIT);
    let mut r = BitReader::new(&payload);
    let profile_idc = u8::try_from(r.bits(8)?).map_err(|_| corrupt("profile"))?;
    let _constraints_and_level = r.bits(16)?;
    let id = r.ue()?;
    if id > 31 {
        return Err(corrupt("seq_parameter_set_id over 31"));
    }
    let chroma_format_idc = chroma_and_scaling(&mut r, profile_idc)?;
    let log2_max_frame_num = r.ue()?.checked_add(4).filter(|v| *v <= 16);
    let log2_max_frame_num = log2_max_frame_num.ok_or_else(|| corrupt("log2_max_frame_num"))?;
    picture_order(&mut r)?;
    let _max_num_ref_frames = r.ue()?;
    let gaps_allowed = r.bit()?;
    let width_mbs = u64::from(r.ue()?) + 1;
    let height_map_units = u64::from(r.ue()?) + 1;
    let frame_mbs_only = r.bit()?;
    if !frame_mbs_only {
        let _mb_adaptive_frame_field = r.bit()?;
    }
    let _direct_8x8_inference = r.bit()?;
    let coded_width = width_mbs * 16;
    let coded_height = height_map_units * 16 * if frame_mbs_only { 1 } else { 2 };
    let (crop_x, crop_y) = crop_units(chroma_format_idc, frame_mbs_only);
    let (mut width, mut height) = (coded_width, coded_height);
    if r.bit()? {
        let horizontal = (u64::from(r.ue()?) + u64::from(r.ue()?)) * crop_x;
        let vertical = (u64::from(r.ue()?) + u64::from(r.ue()?)) * crop_y;
        width = width
            .checked_sub(horizontal)
            .filter(|w| *w > 0)
            .ok_or_else(|| corrupt("cropping wider than the picture"))?;
        height = height
            .checked_sub(vertical)
            .filter(|h| *h > 0)
            .ok_or_else(|| corrupt("cropping taller than the picture"))?;
    }
    let size = |value: u64| u32::try_from(value).map_err(|_| corrupt("a size over 32 bits"));
    Ok(SpsInfo {
        profile_idc,
        id,
        width: size(width)?,
        height: size(height)?,
        coded_width: size(coded_width)?,
        coded_height: size(coded_height)?,
        log2_max_frame_num,
        frame_mbs_only,
        gaps_allowed,
    })
}

/// The chroma format (1, 4:2:0, where the profile does not say it) after skipping the
/// high profiles' bit depths and scaling lists.
fn chroma_and_scaling(r: &mut BitReader<'_>, profile_idc: u8) -> Result<u32, H264Error> {
    const HIGH_PROFILES: [u8; 13] = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135];
    if !HIGH_PROFILES.contains(&profile_idc) {
        return Ok(1);
    }
    let chroma_format_idc = r.ue()?;
    if chroma_format_idc > 3 {
        return Err(corrupt("chroma_format_idc over 3"));
    }
    if chroma_format_idc == 3 {
        let _separate_colour_planes = r.bit()?;
    }
    let _bit_depth_luma = r.ue()?;
    let _bit_depth_chroma = r.ue()?;
    let _transform_bypass = r.bit()?;
    if r.bit()? {
        let lists = if chroma_format_idc == 3 { 12 } else { 8 };
        for list in 0..lists {
            if r.bit()? {
                skip_scaling_list(r, if list < 6 { 16 } else { 64 })?;
            }
        }
    }
    Ok(chroma_format_idc)
}

fn skip_scaling_list(r: &mut BitReader<'_>, size: usize) -> Result<(), H264Error> {
    let (mut last, mut next) = (8i64, 8i64);
    for _ in 0..size {
        if next != 0 {
            next = (last + r.se()? + 256).rem_euclid(256);
        }
        if next != 0 {
            last = next;
        }
    }
    Ok(())
}

fn picture_order(r: &mut BitReader<'_>) -> Result<(), H264Error> {
    match r.ue()? {
        0 => {
            let _log2_max_poc_lsb = r.ue()?;
        }
        1 => {
            let _delta_always_zero = r.bit()?;
            let _offset_for_non_ref_pic = r.se()?;
            let _offset_top_to_bottom = r.se()?;
            let cycle = r.ue()?;
            if cycle > 255 {
                return Err(corrupt("num_ref_frames_in_pic_order_cnt_cycle over 255"));
            }
            for _ in 0..cycle {
                let _offset = r.se()?;
            }
        }
        2 => {}
        _ => return Err(corrupt("pic_order_cnt_type over 2")),
    }
    Ok(())
}

/// Cropping steps in pixels (H.264 7.4.2.1.1): 4:2:0 crops by two pixels each way.
fn crop_units(chroma_format_idc: u32, frame_mbs_only: bool) -> (u64, u64) {
    let field_factor = if frame_mbs_only { 1 } else { 2 };
    match chroma_format_idc {
        0 | 3 => (1, field_factor),
        2 => (2, field_factor),
        _ => (2, 2 * field_factor),
    }
}

/// A slice header's `frame_num` and whether its picture is a reference (`nal_ref_idc`).
pub fn slice_frame_num(nal: &[u8], sps: &SpsInfo) -> Result<(u32, bool), H264Error> {
    let reference = nal.first().is_some_and(|b| b & 0x60 != 0);
    let payload = unescape(nal, 16);
    let mut r = BitReader::new(&payload);
    let _first_mb_in_slice = r.ue()?;
    let _slice_type = r.ue()?;
    let _pps_id = r.ue()?;
    Ok((r.bits(sps.log2_max_frame_num)?, reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits and exp-Golomb codes, for SPSs made up in tests.
    #[derive(Default)]
    struct BitWriter {
        bits: Vec<bool>,
    }

    impl BitWriter {
        fn bits(&mut self, value: u64, count: u32) -> &mut Self {
            for i in (0..count).rev() {
                self.bits.push((value >> i) & 1 == 1);
            }
            self
        }
        fn ue(&mut self, value: u64) -> &mut Self {
            let code = value + 1;
            let len = 64 - code.leading_zeros();
            self.bits(0, len - 1).bits(code, len)
        }
        fn bytes(&self) -> Vec<u8> {
            let mut out = vec![0x67];
            for chunk in self.bits.chunks(8) {
                let byte = chunk
                    .iter()
                    .enumerate()
                    .fold(0u8, |b, (i, &bit)| b | (u8::from(bit) << (7 - i)));
                out.push(byte);
            }
            out
        }
    }

    /// A baseline SPS of `mbs_w`x`mbs_h` macroblocks, cropped by `crop` (right, bottom).
    fn baseline(mbs_w: u64, mbs_h: u64, crop: Option<(u64, u64)>) -> Vec<u8> {
        let mut w = BitWriter::default();
        w.bits(66, 8).bits(0xC0, 8).bits(31, 8).ue(0).ue(0).ue(2);
        w.ue(1)
            .bits(0, 1)
            .ue(mbs_w - 1)
            .ue(mbs_h - 1)
            .bits(1, 1)
            .bits(1, 1);
        match crop {
            Some((right, bottom)) => w.bits(1, 1).ue(0).ue(right).ue(0).ue(bottom),
            None => w.bits(0, 1),
        };
        w.bits(0, 1).bits(1, 1);
        w.bytes()
    }

    #[test]
    fn frame_size_and_cropping_read() -> Result<(), H264Error> {
        let sps = parse(&baseline(80, 68, Some((0, 4))))?;
        assert_eq!((sps.width, sps.height), (1280, 1080));
        assert_eq!((sps.coded_width, sps.coded_height), (1280, 1088));
        assert_eq!(sps.profile_idc, 66);
        let huge = parse(&baseline(3750, 3750, None))?;
        assert_eq!((huge.width, huge.height), (60000, 60000));
        Ok(())
    }

    #[test]
    fn hostile_sps_are_errors() {
        assert!(parse(&baseline(4, 4, Some((100, 0)))).is_err());
        let sps = baseline(80, 45, None);
        for len in 0..sps.len() - 1 {
            assert!(parse(&sps[..len]).is_err(), "cut at {len}");
        }
        assert!(parse(&[0x67, 66, 0, 31, 0, 0, 0, 0, 0, 0]).is_err());
    }
}

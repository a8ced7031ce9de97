//! Annex B access units: NAL units split at start codes, the emulation-prevention bytes
//! taken out of a payload, and a bit reader with exp-Golomb codes. Allocation-free except
//! for the unescaped copy of an SPS or a slice header's first bytes (bounded).

use super::H264Error;

/// NAL unit types this crate looks at (ITU-T H.264, table 7-1).
pub mod nal_type {
    /// A slice of a non-IDR picture.
    pub const SLICE: u8 = 1;
    /// A slice of an IDR picture: decoding can start here.
    pub const IDR: u8 = 5;
    /// Sequence parameter set.
    pub const SPS: u8 = 7;
    /// Picture parameter set.
    pub const PPS: u8 = 8;
}

/// The NAL units of an Annex B byte stream, without their start codes. Bytes before the
/// first start code are an error (`Corrupt`), as is a stream with no start code at all.
pub fn units(data: &[u8]) -> Result<Vec<&[u8]>, H264Error> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= data.len() {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            starts.push((i, i + 3));
            i += 3;
        } else {
            i += 1;
        }
    }
    let Some(&(first, _)) = starts.first() else {
        return Err(H264Error::Corrupt("no Annex B start code".to_owned()));
    };
    // A 4-byte start code is a zero byte and a 3-byte one; anything else before it is junk.
    if data[..first].iter().any(|&b| b != 0) {
        return Err(H264Error::Corrupt(
            "bytes before the first start code".to_owned(),
        ));
    }
    let mut nals = Vec::with_capacity(starts.len());
    for (index, &(_, begin)) in starts.iter().enumerate() {
        let end = starts.get(index + 1).map_or(data.len(), |&(next, _)| next);
        let mut nal = &data[begin..end];
        // Trailing zeros belong to the next 4-byte start code (or are padding).
        while let [rest @ .., 0] = nal {
            nal = rest;
        }
        if nal.is_empty() {
            return Err(H264Error::Corrupt("an empty NAL unit".to_owned()));
        }
        if nal[0] & 0x80 != 0 {
            return Err(H264Error::Corrupt(
                "a NAL unit's forbidden_zero_bit is set".to_owned(),
            ));
        }
        nals.push(nal);
    }
    Ok(nals)
}

/// A NAL unit's type (the low five bits of its first byte).
#[must_use]
pub fn unit_type(nal: &[u8]) -> u8 {
    nal.first().map_or(0, |b| b & 0x1F)
}

/// The payload after the one-byte NAL header, with emulation-prevention bytes
/// (`00 00 03` -> `00 00`) removed, at most `limit` bytes of it.
#[must_use]
pub fn unescape(nal: &[u8], limit: usize) -> Vec<u8> {
    // infallible: a NAL unit without even its header byte has an empty payload
    let payload = nal.get(1..).unwrap_or_default();
    let mut out = Vec::with_capacity(payload.len().min(limit));
    let mut zeros = 0;
    for &byte in payload {
        if out.len() >= limit {
            break;
        }
        if zeros >= 2 && byte == 3 {
            zeros = 0;
            continue;
        }
        zeros = if byte == 0 { zeros + 1 } else { 0 };
        out.push(byte);
    }
    out
}

/// Reads bits most significant first; running out of bits is an error, never a panic.
pub struct BitReader<'a> {
    data: &'a [u8],
    position: usize,
}

impl<'a> BitReader<'a> {
    /// Reads `data` from its first bit.
    #[must_use]
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, position: 0 }
    }

    fn truncated() -> H264Error {
        H264Error::Corrupt("a parameter set or slice header ends early".to_owned())
    }

    /// One bit.
    pub fn bit(&mut self) -> Result<bool, H264Error> {
        let byte = self
            .data
            .get(self.position / 8)
            .ok_or_else(Self::truncated)?;
        let bit = (byte >> (7 - self.position % 8)) & 1;
        self.position += 1;
        Ok(bit == 1)
    }

    /// `count` (at most 32) bits as an unsigned number: `u(n)`.
    pub fn bits(&mut self, count: u32) -> Result<u32, H264Error> {
        let mut value = 0u32;
        for _ in 0..count.min(32) {
            value = (value << 1) | u32::from(self.bit()?);
        }
        Ok(value)
    }

    /// An unsigned exp-Golomb code, `ue(v)`; over 32 leading zeros is corrupt.
    pub fn ue(&mut self) -> Result<u32, H264Error> {
        let mut zeros = 0;
        while !self.bit()? {
            zeros += 1;
            if zeros > 31 {
                return Err(H264Error::Corrupt(
                    "an exp-Golomb code longer than 32 bits".to_owned(),
                ));
            }
        }
        let rest = self.bits(zeros)?;
        let value = (1u64 << zeros) - 1 + u64::from(rest);
        u32::try_from(value)
            .map_err(|_| H264Error::Corrupt("an exp-Golomb code over 32 bits".to_owned()))
    }

    /// A signed exp-Golomb code, `se(v)`.
    pub fn se(&mut self) -> Result<i64, H264Error> {
        let code = i64::from(self.ue()?);
        Ok(if code % 2 == 1 {
            (code + 1) / 2
        } else {
            -(code / 2)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_golomb_codes_read_back() -> Result<(), H264Error> {
        // 1 | 010 | 011 | 00100 | 00101 -> ue 0, 1, 2, 3 then se(4) = -2.
        let data = [0b1010_0110, 0b0100_0010, 0b1000_0000];
        let mut reader = BitReader::new(&data);
        assert_eq!(reader.ue()?, 0);
        assert_eq!(reader.ue()?, 1);
        assert_eq!(reader.ue()?, 2);
        assert_eq!(reader.ue()?, 3);
        assert_eq!(reader.se()?, -2);
        assert!(reader.ue().is_err());
        Ok(())
    }

    #[test]
    fn units_split_at_start_codes_and_unescape() -> Result<(), H264Error> {
        let stream = [0, 0, 0, 1, 0x67, 1, 0, 0, 3, 1, 0, 0, 1, 0x68, 2];
        let nals = units(&stream)?;
        assert_eq!(nals.len(), 2);
        assert_eq!(unit_type(nals[0]), nal_type::SPS);
        assert_eq!(unescape(nals[0], 64), vec![1, 0, 0, 1]);
        assert_eq!(unit_type(nals[1]), nal_type::PPS);
        assert!(units(&[1, 2, 3]).is_err());
        assert!(units(&[7, 0, 0, 1, 0x65]).is_err());
        Ok(())
    }
}

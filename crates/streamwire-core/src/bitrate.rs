//! Bit rates as text (`6.4Mbit/s`, `800k`) and the range of a bit-rate budget: shared by
//! the JPEG codec's `max_bitrate` and the blueprint-wide key of that name, which is
//! checked before a codec is built.

use crate::CodecError;

/// The lowest budget accepted: 1 kbit/s.
pub const MIN_BUDGET: u64 = 1_000;
/// The highest budget accepted: 100 Gbit/s.
pub const MAX_BUDGET: u64 = 100_000_000_000;

/// `max_bitrate` bits per second, when a budget may be that (1 kbit/s to 100 Gbit/s).
pub fn check_budget(max_bitrate: u64) -> Result<u64, CodecError> {
    if !(MIN_BUDGET..=MAX_BUDGET).contains(&max_bitrate) {
        return Err(CodecError::InvalidParam {
            key: "max_bitrate".to_owned(),
            value: format_bitrate(max_bitrate),
            reason: "a budget goes from 1kbit/s to 100Gbit/s".to_owned(),
        });
    }
    Ok(max_bitrate)
}

/// Reads a bit rate: bits per second, with an optional SI prefix (`k`, `M`, `G`) and an
/// optional unit (`bit/s`, `bps`): `6.4Mbit/s`, `6.4M`, `6400k`, `6400000`.
pub fn parse_bitrate(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let number_end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, rest) = trimmed.split_at(number_end);
    let rest = rest.trim();
    let rest = rest
        .strip_suffix("bit/s")
        .or_else(|| rest.strip_suffix("bps"))
        .unwrap_or(rest)
        .trim();
    let scale: u64 = match rest {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => {
            return Err(format!(
                "`{text}` is not a bit rate: write bits per second with an optional k, M or G, \
                 e.g. `6.4Mbit/s`, `6.4M` or `6400k`"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a bit rate: it has no number, as in `6.4M`"))?;
    let bits = (value * scale as f64).round();
    if !bits.is_finite() || bits < 0.0 || bits > u64::MAX as f64 {
        return Err(format!("`{text}` is out of range"));
    }
    Ok(bits as u64)
}

/// Writes a bit rate the way [`parse_bitrate`] reads it: `6.4Mbit/s`, `800kbit/s`,
/// `1500bit/s` (the largest prefix that keeps three significant digits exact).
pub fn format_bitrate(bits: u64) -> String {
    for (scale, prefix) in [(1_000_000_000u64, "G"), (1_000_000, "M"), (1_000, "k")] {
        let thousandths = u128::from(bits % scale) * 1000;
        if bits >= scale && thousandths % u128::from(scale) == 0 {
            let whole = bits / scale;
            let fraction = thousandths / u128::from(scale);
            if fraction == 0 {
                return format!("{whole}{prefix}bit/s");
            }
            let digits = format!("{fraction:03}");
            return format!("{whole}.{}{prefix}bit/s", digits.trim_end_matches('0'));
        }
    }
    format!("{bits}bit/s")
}

//! What the emulated radio link is: its rate, delay and jitter ([`LinkProfile`]).

use std::fmt;

use crate::BenchError;

/// The rates a profile may have, Mbit/s.
pub const RATE_RANGE_MBIT_S: std::ops::RangeInclusive<f64> = 0.1..=10_000.0;
/// The one-way delays a profile may have, ms.
pub const DELAY_RANGE_MS: std::ops::RangeInclusive<f64> = 0.0..=2_000.0;

/// An emulated radio link: the rate each way, the one-way delay and its jitter (uniform in
/// `delay ± jitter`, never reordering). Random loss is not emulated.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkProfile {
    /// `wifi`, `weak-wifi` or `custom`.
    pub name: String,
    /// Mbit/s each way.
    pub rate_mbit_s: f64,
    /// One-way delay, ms.
    pub delay_ms: f64,
    /// One-way jitter, ms: the delay is uniform in `delay_ms ± jitter_ms`.
    pub jitter_ms: f64,
}

impl LinkProfile {
    /// A good wifi link: 50 Mbit/s, 5 ms ± 2 ms.
    pub fn wifi() -> Self {
        LinkProfile {
            name: "wifi".to_owned(),
            rate_mbit_s: 50.0,
            delay_ms: 5.0,
            jitter_ms: 2.0,
        }
    }

    /// A weak wifi link (far from the access point): 8 Mbit/s, 20 ms ± 10 ms.
    pub fn weak_wifi() -> Self {
        LinkProfile {
            name: "weak-wifi".to_owned(),
            rate_mbit_s: 8.0,
            delay_ms: 20.0,
            jitter_ms: 10.0,
        }
    }

    /// `wifi`, `weak-wifi`, or `rate=20mbit,delay=10ms,jitter=3ms` (units optional: Mbit/s
    /// and ms; `delay` and `jitter` default to 0), range-checked: rate 0.1..=10000 Mbit/s,
    /// delay 0..=2000 ms, jitter 0..=delay.
    pub fn parse(text: &str) -> Result<Self, BenchError> {
        let text = text.trim();
        match text {
            "wifi" => return Ok(LinkProfile::wifi()),
            "weak-wifi" => return Ok(LinkProfile::weak_wifi()),
            _ => {}
        }
        let usage = |m: String| BenchError::Usage(format!("--link `{text}`: {m}"));
        if !text.contains('=') {
            return Err(usage(
                "unknown link: expected wifi, weak-wifi or rate=..,delay=..,jitter=..".to_owned(),
            ));
        }
        let (mut rate, mut delay, mut jitter) = (None, None, None);
        for part in text.split(',').map(str::trim) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(usage(format!("`{part}`: expected key=value")));
            };
            let (slot, units): (&mut Option<f64>, &[&str]) = match key.trim() {
                "rate" => (&mut rate, &["mbit/s", "mbit", "mbps"]),
                "delay" => (&mut delay, &["ms"]),
                "jitter" => (&mut jitter, &["ms"]),
                other => {
                    return Err(usage(format!(
                        "unknown key `{other}`: expected rate, delay or jitter"
                    )));
                }
            };
            if slot.is_some() {
                return Err(usage(format!("`{}` given twice", key.trim())));
            }
            *slot = Some(number(value, units).ok_or_else(|| {
                usage(format!(
                    "`{part}`: expected a number{}",
                    if units[0] == "ms" {
                        " of ms"
                    } else {
                        " of Mbit/s"
                    }
                ))
            })?);
        }
        let rate = rate.ok_or_else(|| usage("no rate: expected rate=<Mbit/s>".to_owned()))?;
        let profile = LinkProfile {
            name: "custom".to_owned(),
            rate_mbit_s: rate,
            delay_ms: delay.unwrap_or(0.0),
            jitter_ms: jitter.unwrap_or(0.0),
        };
        profile.check().map_err(usage)?;
        Ok(profile)
    }

    /// Whether the numbers are in range (rate 0.1..=10000 Mbit/s, delay 0..=2000 ms,
    /// jitter 0..=delay); else what is wrong.
    pub fn check(&self) -> Result<(), String> {
        let (rate, delay, jitter) = (self.rate_mbit_s, self.delay_ms, self.jitter_ms);
        if !RATE_RANGE_MBIT_S.contains(&rate) {
            return Err(format!(
                "rate {rate} Mbit/s is out of range: expected 0.1..=10000 Mbit/s"
            ));
        }
        if !DELAY_RANGE_MS.contains(&delay) {
            return Err(format!(
                "delay {delay} ms is out of range: expected 0..=2000 ms"
            ));
        }
        if !(0.0..=delay).contains(&jitter) {
            return Err(format!(
                "jitter {jitter} ms is out of range: expected 0..=delay ({delay} ms)"
            ));
        }
        Ok(())
    }
}

/// `value` as a finite number, with one of `units` (case-insensitive) or none after it.
fn number(value: &str, units: &[&str]) -> Option<f64> {
    let value = value.trim().to_ascii_lowercase();
    let digits = units
        .iter()
        .find_map(|unit| value.strip_suffix(unit))
        .unwrap_or(&value)
        .trim();
    digits.parse::<f64>().ok().filter(|v| v.is_finite())
}

impl fmt::Display for LinkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} Mbit/s, {} ± {} ms)",
            self.name, self.rate_mbit_s, self.delay_ms, self.jitter_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_profiles_parse_and_print() {
        let wifi = LinkProfile::parse("wifi").unwrap();
        assert_eq!(wifi, LinkProfile::wifi());
        assert_eq!(wifi.to_string(), "wifi (50 Mbit/s, 5 ± 2 ms)");
        let weak = LinkProfile::parse("weak-wifi").unwrap();
        assert_eq!(weak, LinkProfile::weak_wifi());
        assert_eq!(weak.to_string(), "weak-wifi (8 Mbit/s, 20 ± 10 ms)");
    }

    #[test]
    fn a_custom_profile_parses_with_or_without_units() {
        let p = LinkProfile::parse("rate=20mbit,delay=10ms,jitter=3ms").unwrap();
        assert_eq!(
            (p.name.as_str(), p.rate_mbit_s, p.delay_ms, p.jitter_ms),
            ("custom", 20.0, 10.0, 3.0)
        );
        assert_eq!(p.to_string(), "custom (20 Mbit/s, 10 ± 3 ms)");
        let p = LinkProfile::parse("rate=2.5, delay=40").unwrap();
        assert_eq!((p.rate_mbit_s, p.delay_ms, p.jitter_ms), (2.5, 40.0, 0.0));
        let p = LinkProfile::parse("jitter=1ms,rate=100Mbit/s,delay=1ms").unwrap();
        assert_eq!((p.rate_mbit_s, p.delay_ms, p.jitter_ms), (100.0, 1.0, 1.0));
    }

    #[test]
    fn a_profile_made_by_hand_is_checked_too() {
        let mut p = LinkProfile::wifi();
        assert_eq!(p.check(), Ok(()));
        p.jitter_ms = f64::NAN;
        assert_eq!(
            p.check(),
            Err("jitter NaN ms is out of range: expected 0..=delay (5 ms)".to_owned())
        );
        p.rate_mbit_s = 0.0;
        assert!(p.check().is_err_and(|e| e.starts_with("rate 0 Mbit/s")));
    }

    #[test]
    fn bad_links_are_refused_naming_the_bad_part() {
        for (text, error) in [
            (
                "lte",
                "--link `lte`: unknown link: expected wifi, weak-wifi or rate=..,delay=..,jitter=..",
            ),
            (
                "rate=0.05",
                "--link `rate=0.05`: rate 0.05 Mbit/s is out of range: expected 0.1..=10000 Mbit/s",
            ),
            (
                "rate=20000mbit",
                "rate 20000 Mbit/s is out of range: expected 0.1..=10000 Mbit/s",
            ),
            (
                "rate=20,delay=2500ms",
                "delay 2500 ms is out of range: expected 0..=2000 ms",
            ),
            (
                "rate=20,delay=-1",
                "delay -1 ms is out of range: expected 0..=2000 ms",
            ),
            (
                "rate=20,delay=5,jitter=6",
                "jitter 6 ms is out of range: expected 0..=delay (5 ms)",
            ),
            ("rate=20,jitter=1", "jitter 1 ms is out of range"),
            ("delay=5", "no rate: expected rate=<Mbit/s>"),
            ("rate=fast", "`rate=fast`: expected a number of Mbit/s"),
            ("rate=20,delay=5s", "`delay=5s`: expected a number of ms"),
            (
                "rate=20,loss=1",
                "unknown key `loss`: expected rate, delay or jitter",
            ),
            ("rate=20,rate=30", "`rate` given twice"),
            ("rate=20,delay", "`delay`: expected key=value"),
            ("rate=nan", "expected a number of Mbit/s"),
        ] {
            let e = LinkProfile::parse(text).expect_err(text);
            assert!(matches!(e, BenchError::Usage(_)), "{text}: {e:?}");
            assert!(e.to_string().contains(error), "{text}: {e}");
        }
    }
}

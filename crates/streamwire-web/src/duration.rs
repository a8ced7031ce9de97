//! A duration as a setting: read and shown as people write it (`10s`, `250ms`, `1m 30s`),
//! not as serde's `{"secs": 10, "nanos": 0}`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A [`Duration`] that serializes as humantime text (`10s`) and reads it back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl FromStr for HumanDuration {
    type Err = humantime::DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        humantime::parse_duration(text.trim()).map(HumanDuration)
    }
}

impl From<Duration> for HumanDuration {
    fn from(duration: Duration) -> Self {
        HumanDuration(duration)
    }
}

impl serde::Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|error| {
            serde::de::Error::custom(format!(
                "`{text}` is not a duration ({error}): write e.g. `10s`, `250ms`, `1m 30s`"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_reads_and_shows_as_people_write_it() {
        let ten = HumanDuration(Duration::from_secs(10));
        assert_eq!(serde_json::to_value(ten).unwrap(), "10s");
        assert_eq!(
            serde_json::from_str::<HumanDuration>("\"10s\"").unwrap(),
            ten
        );
        assert_eq!(
            "1m 30s".parse::<HumanDuration>().unwrap().0,
            Duration::from_secs(90)
        );
        let error = serde_json::from_str::<HumanDuration>("\"soon\"").unwrap_err();
        assert!(error.to_string().contains("write e.g. `10s`"), "{error}");
    }
}

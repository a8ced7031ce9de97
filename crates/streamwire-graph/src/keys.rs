//! The global keys of a blueprint: one table, one row per key.
//!
//! A global key (`compression`, `jpeg_quality`, ...) is a blueprint-wide setting that a
//! blueprint file sets at its top level, `-o key=value` and the environment
//! (`STREAMWIRE_*`) set on any blueprint, and `config` lists with its value and help. Each
//! is declared once, as a [`GlobalKey`] row here (as zenoh-config's `validated_struct!`
//! gives the file format, the key paths and the checks from one declaration): its name,
//! its environment variable, what it accepts, its default, an example, how a file's value
//! is read, its check as text, and how it applies to a [`Blueprint`]. Every reader goes
//! through [`global_keys`] and [`global_key`]: the file loader (and [`GlobalValues`], the
//! top-level keys a file sets), the command line's `-o`, its environment and its
//! `config`. Adding a key is adding a row to `GLOBAL_KEYS`.
//!
//! Beside the rows, `streams.<stream>.<setting>` ([`STREAM_KEY`], read by
//! [`stream_key`]) sets one stream's settings.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::blueprint::Blueprint;
use crate::error::Problem;
use crate::settings::{Compression, Report, StreamSettings};

/// One global key: every path that reads, checks, shows or applies it goes through its
/// row.
///
/// The rows are [`global_keys`]; the functions are private, so a row is declared here
/// (rows declared elsewhere, e.g. by a registry, would join that list, not a second one).
pub struct GlobalKey {
    /// The key: `-o compression=off`, a blueprint file's top-level `compression:`.
    pub key: &'static str,
    /// The environment variable that sets it.
    pub env: &'static str,
    /// What it accepts, for people (`config`'s table and help).
    pub accepts: &'static str,
    /// What `config` shows when nobody sets it.
    pub default: &'static str,
    /// A value it accepts, as text (every reader's test sets it).
    pub example: &'static str,
    /// How a blueprint file's error about its value names it (`` `jpeg_quality` (1-100)``).
    pub file_label: &'static str,
    /// A file's value, read as its type (the file's own check), in its written form.
    file_value: fn(Value) -> Result<Value, serde_json::Error>,
    /// Checks a value given as text (`-o`, the environment): its canonical text, or what
    /// is valid.
    check: fn(&str) -> Result<String, String>,
    /// Sets a value, checked already (by `check`, or as a file reads it), on a blueprint.
    set: fn(&mut Blueprint, &str) -> Result<(), String>,
}

impl GlobalKey {
    /// Checks a value given as text; `Err` says what is valid.
    pub fn check(&self, value: &str) -> Result<(), String> {
        (self.check)(value.trim()).map(drop)
    }

    /// Checks a value given as text and sets it on `blueprint` (one made by code or from
    /// a file).
    pub fn apply(&self, blueprint: &mut Blueprint, value: &str) -> Result<(), String> {
        let value = (self.check)(value.trim())?;
        (self.set)(blueprint, &value)
    }

    /// A file's value of this key (as JSON) in its written form, or why the file's type
    /// of it refuses it.
    pub fn read_file_value(&self, value: Value) -> Result<Value, serde_json::Error> {
        (self.file_value)(value)
    }
}

impl fmt::Debug for GlobalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalKey")
            .field("key", &self.key)
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// The global keys, in the order people read them.
pub fn global_keys() -> impl Iterator<Item = &'static GlobalKey> {
    GLOBAL_KEYS.iter()
}

/// The row of global key `key`.
pub fn global_key(key: &str) -> Option<&'static GlobalKey> {
    global_keys().find(|g| g.key == key)
}

/// The key that sets one stream's settings, as people read it.
pub const STREAM_KEY: &str = "streams.<stream>.<setting>";

/// Whether `key` is global (a row of the table, or `streams.<stream>.<setting>`), not one
/// of a blueprint's own keys.
pub fn is_global(key: &str) -> bool {
    global_key(key).is_some() || key.starts_with("streams.")
}

/// A per-stream key (`streams.<stream>.<setting>`) and its value: the stream and its
/// settings. The stream itself is checked when the blueprint is built (an unknown stream
/// is a build error with a suggestion).
pub fn stream_key(key: &str, value: &str) -> Result<(String, StreamSettings), String> {
    let rest = key.strip_prefix("streams.").unwrap_or(key);
    let Some((stream, setting)) = rest
        .rsplit_once('.')
        .filter(|(stream, setting)| !stream.is_empty() && !setting.is_empty())
    else {
        return Err(format!(
            "`{key}`: write `streams.<stream>.<setting>`, e.g. `streams.color_image.jpeg_quality=60`"
        ));
    };
    let settings = StreamSettings::from_str(&format!("{setting}={value}"))
        .map_err(|e| format!("`{key}`: {e}"))?;
    Ok((stream.to_owned(), settings))
}

/// The table.
static GLOBAL_KEYS: &[GlobalKey] = &[
    GlobalKey {
        key: "compression",
        env: "STREAMWIRE_COMPRESSION",
        accepts: "auto | on | off",
        default: "auto",
        example: "off",
        file_label: "`compression`",
        file_value: typed::<Compression>,
        check: parsed::<Compression>,
        set: |blueprint, value| {
            blueprint.compression(value.parse().map_err(|e| format!("{e}"))?);
            Ok(())
        },
    },
    GlobalKey {
        key: "jpeg_quality",
        env: "STREAMWIRE_JPEG_QUALITY",
        accepts: "1..=100",
        default: CODEC_DEFAULT,
        example: "60",
        file_label: "`jpeg_quality` (1-100)",
        file_value: typed::<u8>,
        check: |value| quality("jpeg_quality", value),
        set: |blueprint, value| codec_default(blueprint, "jpeg_quality", value),
    },
    GlobalKey {
        key: "max_width",
        env: "STREAMWIRE_MAX_WIDTH",
        accepts: "a width in pixels, >= 1",
        default: CODEC_DEFAULT,
        example: "640",
        file_label: "`max_width`",
        file_value: typed::<u32>,
        check: max_width,
        set: |blueprint, value| codec_default(blueprint, "max_width", value),
    },
    GlobalKey {
        key: "max_bitrate",
        env: "STREAMWIRE_MAX_BITRATE",
        accepts: "a bit rate (6.4Mbit/s, 800k) or none",
        default: CODEC_DEFAULT,
        example: "6.4Mbit/s",
        file_label: "`max_bitrate` (a bit rate, e.g. `6.4Mbit/s`)",
        file_value: typed::<streamwire_core::ParamValue>,
        check: max_bitrate,
        set: |blueprint, value| codec_default(blueprint, "max_bitrate", value),
    },
    GlobalKey {
        key: "min_quality",
        env: "STREAMWIRE_MIN_QUALITY",
        accepts: "1..=100",
        default: CODEC_DEFAULT,
        example: "30",
        file_label: "`min_quality` (1-100)",
        file_value: typed::<u8>,
        check: |value| quality("min_quality", value),
        set: |blueprint, value| codec_default(blueprint, "min_quality", value),
    },
    GlobalKey {
        key: "lossy_pixels",
        env: "STREAMWIRE_LOSSY_PIXELS",
        accepts: "ignore | warn | error",
        default: "warn",
        example: "error",
        file_label: "`lossy_pixels`",
        file_value: typed::<Report>,
        check: parsed::<Report>,
        set: |blueprint, value| {
            blueprint.lossy_pixels(value.parse().map_err(|e| format!("{e}"))?);
            Ok(())
        },
    },
];

/// What `config` shows for a codec parameter nobody set.
const CODEC_DEFAULT: &str = "(the codec's default)";

/// A file's value read as `T` (serde's check and error), written back as `T` writes it.
fn typed<T: Serialize + DeserializeOwned>(value: Value) -> Result<Value, serde_json::Error> {
    serde_json::to_value(serde_json::from_value::<T>(value)?)
}

/// A value of a type that reads text (`FromStr`, whose error lists what is valid).
fn parsed<T>(value: &str) -> Result<String, String>
where
    T: FromStr + fmt::Display,
    T::Err: fmt::Display,
{
    T::from_str(value)
        .map(|v| v.to_string())
        .map_err(|e| e.to_string())
}

/// A blueprint-wide codec parameter: the codec checks it when the blueprint is built.
fn codec_default(blueprint: &mut Blueprint, key: &str, value: &str) -> Result<(), String> {
    blueprint.codec_default(key, value);
    Ok(())
}

/// A JPEG quality setting (`key`), 1..=100.
fn quality(key: &str, value: &str) -> Result<String, String> {
    match value.parse::<u8>() {
        Ok(quality @ 1..=100) => Ok(quality.to_string()),
        _ => Err(format!(
            "invalid {key} `{value}`: expected a whole number in 1..=100"
        )),
    }
}

fn max_width(value: &str) -> Result<String, String> {
    match value.parse::<u32>() {
        Ok(width) if width >= 1 => Ok(width.to_string()),
        _ => Err(format!(
            "invalid max_width `{value}`: expected a width in pixels, >= 1"
        )),
    }
}

/// A budget is range-checked here, before anything starts (1 kbit/s to 100 Gbit/s).
fn max_bitrate(value: &str) -> Result<String, String> {
    if value != "none" {
        let bits = streamwire_core::bitrate::parse_bitrate(value)
            .map_err(|reason| format!("invalid max_bitrate: {reason}"))?;
        streamwire_core::bitrate::check_budget(bits)
            .map_err(|error| format!("invalid max_bitrate: {error}"))?;
    }
    Ok(value.to_owned())
}

/// The global keys a blueprint file sets at its top level, each value as the file writes
/// it (read by its row, so only values the row accepts are held).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GlobalValues {
    values: BTreeMap<&'static str, Value>,
}

impl GlobalValues {
    /// No key set.
    pub fn new() -> GlobalValues {
        GlobalValues::default()
    }

    /// Sets `key` to `value` (as a file writes it: `60`, `"off"`); `Err` when `key` is not
    /// a global key or its row refuses the value.
    pub fn set(&mut self, key: &str, value: Value) -> Result<(), String> {
        let row = global_key(key).ok_or_else(|| format!("`{key}` is not a global key"))?;
        let value = row
            .read_file_value(value)
            .map_err(|e| format!("{}: {e}", row.file_label))?;
        self.insert_read(row, value);
        Ok(())
    }

    /// Holds `value`, which `row` read.
    pub(crate) fn insert_read(&mut self, row: &'static GlobalKey, value: Value) {
        self.values.insert(row.key, value);
    }

    /// The value of `key`, as text, when it is set.
    pub fn get(&self, key: &str) -> Option<String> {
        self.values.get(key).map(value_text)
    }

    /// The keys set, each with its value as text, in the table's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static GlobalKey, String)> + '_ {
        global_keys().filter_map(|row| Some((row, self.get(row.key)?)))
    }

    /// Whether no key is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Sets every value on `blueprint`; a value its row cannot set (none, as only values
    /// the row read are held) is a problem of the build.
    pub(crate) fn apply_to(&self, blueprint: &mut Blueprint) {
        for (row, value) in self.iter() {
            if let Err(reason) = (row.set)(blueprint, &value) {
                blueprint.problems.push(Problem::InvalidGlobal {
                    key: row.key.to_owned(),
                    value,
                    reason,
                });
            }
        }
    }
}

/// A file's value as text: a string as it is, anything else as JSON writes it.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl Serialize for GlobalValues {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.values.len()))?;
        for row in global_keys() {
            if let Some(value) = self.values.get(row.key) {
                map.serialize_entry(row.key, value)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for GlobalValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = GlobalValues;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of global key to value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<GlobalValues, A::Error> {
                let mut out = GlobalValues::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value::<Value>()?;
                    if global_key(&key).is_none() {
                        return Err(de::Error::custom(format_args!("unknown field `{key}`")));
                    }
                    out.set(&key, value).map_err(de::Error::custom)?;
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_accepts_its_example_as_text_and_as_a_file_value() {
        for row in global_keys() {
            assert!(row.check(row.example).is_ok(), "{}", row.key);
            assert!(row.check("nonsense").is_err(), "{}", row.key);
            let mut blueprint = Blueprint::new();
            assert_eq!(
                row.apply(&mut blueprint, row.example),
                Ok(()),
                "{}",
                row.key
            );
            // As a file writes it: a number is a number.
            let written = serde_json::from_str(row.example)
                .unwrap_or_else(|_| Value::String(row.example.to_owned()));
            let mut values = GlobalValues::new();
            values.set(row.key, written).unwrap();
            assert_eq!(values.get(row.key).as_deref(), Some(row.example));
            let mut blueprint = Blueprint::new();
            values.apply_to(&mut blueprint);
            assert!(blueprint.problems.is_empty(), "{}", row.key);
        }
    }

    #[test]
    fn the_table_names_each_key_and_variable_once() {
        let mut keys: Vec<&str> = global_keys().map(|g| g.key).collect();
        let mut vars: Vec<&str> = global_keys().map(|g| g.env).collect();
        keys.sort_unstable();
        keys.dedup();
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(keys.len(), GLOBAL_KEYS.len());
        assert_eq!(vars.len(), GLOBAL_KEYS.len());
        assert!(vars.iter().all(|v| v.starts_with("STREAMWIRE_")));
    }

    #[test]
    fn values_round_trip_in_the_tables_order() {
        let mut values = GlobalValues::new();
        values.set("lossy_pixels", Value::from("error")).unwrap();
        values.set("compression", Value::from("off")).unwrap();
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(json, r#"{"compression":"off","lossy_pixels":"error"}"#);
        assert_eq!(serde_json::from_str::<GlobalValues>(&json).unwrap(), values);
        assert!(serde_json::from_str::<GlobalValues>(r#"{"compresion":"off"}"#).is_err());
        assert!(values.set("jpeg_quality", Value::from(300)).is_err());
    }
}

//! Settings as text: the one parser that the command line, blueprint files and
//! `-o key=value` share.
//!
//! Every setting type parses (`FromStr`) what its `Display` prints, and serializes with
//! serde to that same text (composite settings such as [`Qos`](crate::Qos) serialize as a
//! table of those texts, and read either form). Keywords are matched ignoring ASCII case,
//! with `-` and `_` interchangeable: `best-effort`, `best_effort` and `BEST_EFFORT` are one
//! value. A refusal is a [`ParseError`] that lists the values that would have been accepted.
//!
//! ```
//! use streamwire::{History, Qos, Reliability};
//! let qos: Qos = "best_effort, keep_last(1)".parse()?;
//! assert_eq!(qos.reliability, Reliability::BestEffort);
//! assert_eq!(qos.history, History::KeepLast(1));
//! assert_eq!(qos.to_string(), "best_effort, volatile, keep_last(1)");
//!
//! let error = "bset_effort".parse::<Reliability>().unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "unknown reliability `bset_effort`: expected one of `reliable`, `best_effort`"
//! );
//! # Ok::<(), streamwire::text::ParseError>(())
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{self, Deserializer, MapAccess, Visitor};

/// Text that is not a valid value of a setting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A word that is not one of the setting's values.
    #[error("unknown {setting} `{input}`: expected one of {expected}")]
    UnknownValue {
        /// What was being parsed, e.g. `compression`.
        setting: &'static str,
        /// The text as given.
        input: String,
        /// The accepted values, e.g. "`auto`, `on`, `off`".
        expected: String,
    },
    /// Known words in a shape that does not parse (a missing number, a part given twice).
    #[error("invalid {setting} `{input}`: {reason}")]
    Invalid {
        /// What was being parsed, e.g. `qos`.
        setting: &'static str,
        /// The text as given.
        input: String,
        /// What is wrong, and what to write instead.
        reason: String,
    },
}

impl ParseError {
    /// A refusal of `input` as a `setting`, for `reason`.
    pub fn invalid(setting: &'static str, input: &str, reason: impl Into<String>) -> ParseError {
        ParseError::Invalid {
            setting,
            input: input.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Matches `input` against the `(keyword, value)` pairs of a setting, ignoring ASCII case,
/// surrounding whitespace and the difference between `-` and `_`; a refusal lists the
/// keywords.
///
/// ```
/// use streamwire::text::parse_keyword;
///
/// let on = parse_keyword("switch", " ON ", &[("on", true), ("off", false)])?;
/// assert!(on);
/// # Ok::<(), streamwire::text::ParseError>(())
/// ```
pub fn parse_keyword<T: Copy>(
    setting: &'static str,
    input: &str,
    keywords: &[(&str, T)],
) -> Result<T, ParseError> {
    let wanted = normalize(input);
    keywords
        .iter()
        .find(|(keyword, _)| normalize(keyword) == wanted)
        .map(|(_, value)| *value)
        .ok_or_else(|| ParseError::UnknownValue {
            setting,
            input: input.trim().to_owned(),
            expected: keywords
                .iter()
                .map(|(keyword, _)| format!("`{keyword}`"))
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// True when `input` is `keyword` under the rules of [`parse_keyword`].
pub fn is_keyword(input: &str, keyword: &str) -> bool {
    normalize(input) == normalize(keyword)
}

fn normalize(text: &str) -> String {
    text.trim()
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Serde support for setting types, used by this crate and the graph crate. Not a public
/// API: it may change in any release.
#[doc(hidden)]
pub mod serde_text {
    use super::*;

    /// Serializes `value` as its `Display` text.
    pub fn serialize<T: fmt::Display, S: serde::Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    /// Deserializes a `T` from its text, with `T`'s parse error as the message.
    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: fmt::Display,
        D: Deserializer<'de>,
    {
        deserializer.deserialize_str(TextVisitor::<T>(PhantomData))
    }

    /// Deserializes a `T` from its text or from a table read as `Table`.
    pub fn deserialize_text_or_table<'de, T, Table, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr,
        T::Err: fmt::Display,
        Table: serde::Deserialize<'de> + Into<T>,
        D: Deserializer<'de>,
    {
        deserializer.deserialize_any(TextOrTableVisitor::<T, Table>(PhantomData))
    }

    struct TextVisitor<T>(PhantomData<fn() -> T>);

    impl<T> Visitor<'_> for TextVisitor<T>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a setting as text")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
            text.parse().map_err(E::custom)
        }
    }

    struct TextOrTableVisitor<T, Table>(PhantomData<fn() -> (T, Table)>);

    impl<'de, T, Table> Visitor<'de> for TextOrTableVisitor<T, Table>
    where
        T: FromStr,
        T::Err: fmt::Display,
        Table: serde::Deserialize<'de> + Into<T>,
    {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a setting as text or as a table")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
            text.parse().map_err(E::custom)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            Table::deserialize(de::value::MapAccessDeserializer::new(map)).map(Into::into)
        }
    }
}

/// Implements `Serialize` and `Deserialize` for a type through its `Display` and `FromStr`.
#[doc(hidden)]
#[macro_export]
macro_rules! __serde_as_text {
    ($type:ty) => {
        impl ::serde::Serialize for $type {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $crate::text::serde_text::serialize(self, serializer)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $type {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                $crate::text::serde_text::deserialize(deserializer)
            }
        }
    };
}

//! Layered configuration: a blueprint's knobs from its file, the environment and `-o`,
//! each value with where it came from.
//!
//! Keys: `compression` (`auto|on|off`), `jpeg_quality` (1-100), `max_width` (pixels),
//! `lossy_pixels` (`ignore|warn|error`), `streams.<stream>.<setting>` (a stream's
//! `compression`, `codec` or codec parameter), and the blueprint's own: `<instance>.<field>`
//! for a file's `#[config]` fields, `<field>` for a registered blueprint's config type.
//! Sources, in increasing precedence: the file, the environment (`STREAMWIRE_COMPRESSION`,
//! `STREAMWIRE_JPEG_QUALITY`, `STREAMWIRE_MAX_WIDTH`, `STREAMWIRE_LOSSY_PIXELS`, and the
//! opt-out `STREAMWIRE_COMPRESS_IMAGES=0`), then `-o key=value` (in order). Per-stream
//! beats global, as the planner applies them.

use std::fmt;
use std::str::FromStr;

use streamwire_graph::{Compression, Report, StreamSettings};
use streamwire_names::did_you_mean;

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Nobody set it.
    Default,
    /// A blueprint file, at this line (when found).
    File {
        /// The file.
        path: String,
        /// The line of the key, 1-based.
        line: Option<usize>,
    },
    /// An environment variable.
    Env(String),
    /// `-o key=value` on the command line.
    Flag,
    /// The registered blueprint's config type (its `Default`).
    Registered,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File {
                path,
                line: Some(l),
            } => write!(f, "{path}:{l}"),
            Source::File { path, line: None } => f.write_str(path),
            Source::Env(var) => write!(f, "env {var}"),
            Source::Flag => f.write_str("-o"),
            Source::Registered => f.write_str("blueprint default"),
        }
    }
}

/// One setting: its key, its value as text, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// `jpeg_quality`, `streams.color_image.jpeg_quality`, `camera.fps`.
    pub key: String,
    /// The value, as text.
    pub value: String,
    /// Where it came from.
    pub source: Source,
}

/// A configuration mistake: what was given, by whom, and what is valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// Who gave it (`-o`, `env STREAMWIRE_...`, `file:line`).
    pub origin: Source,
    /// What is wrong and what is valid.
    pub message: String,
}

/// The global keys, with what they accept.
pub const GLOBAL_KEYS: &[(&str, &str)] = &[
    ("compression", "auto | on | off"),
    ("jpeg_quality", "1..=100"),
    ("max_width", "a width in pixels, >= 1"),
    ("lossy_pixels", "ignore | warn | error"),
];

/// The environment variables read (besides `RUST_LOG`), and their keys.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("STREAMWIRE_COMPRESSION", "compression"),
    ("STREAMWIRE_JPEG_QUALITY", "jpeg_quality"),
    ("STREAMWIRE_MAX_WIDTH", "max_width"),
    ("STREAMWIRE_LOSSY_PIXELS", "lossy_pixels"),
];

/// `STREAMWIRE_*` variables that are not configuration (read by other tools).
const OTHER_ENV_VARS: &[&str] = &["STREAMWIRE_DATA", "STREAMWIRE_LOG"];

/// Checks a global value; `Err` says what is valid.
pub fn check_global(key: &str, value: &str) -> Result<(), String> {
    let value = value.trim();
    match key {
        "compression" => Compression::from_str(value)
            .map(drop)
            .map_err(|e| e.to_string()),
        "lossy_pixels" => Report::from_str(value).map(drop).map_err(|e| e.to_string()),
        "jpeg_quality" => match value.parse::<u8>() {
            Ok(1..=100) => Ok(()),
            _ => Err(format!(
                "invalid jpeg_quality `{value}`: expected a whole number in 1..=100"
            )),
        },
        "max_width" => match value.parse::<u32>() {
            Ok(w) if w >= 1 => Ok(()),
            _ => Err(format!(
                "invalid max_width `{value}`: expected a width in pixels, >= 1"
            )),
        },
        _ => Err(format!("`{key}` is not a global setting")),
    }
}

/// Checks a per-stream key (`streams.<stream>.<setting>`) and value; the stream itself is
/// checked when the blueprint is built (an unknown stream is a build error with a
/// suggestion).
pub fn check_stream(key: &str, value: &str) -> Result<(String, StreamSettings), String> {
    let rest = key.strip_prefix("streams.").unwrap_or(key);
    let Some((stream, setting)) = rest.rsplit_once('.') else {
        return Err(format!(
            "`{key}`: write `streams.<stream>.<setting>`, e.g. `streams.color_image.jpeg_quality=60`"
        ));
    };
    if stream.is_empty() || setting.is_empty() {
        return Err(format!(
            "`{key}`: write `streams.<stream>.<setting>`, e.g. `streams.color_image.jpeg_quality=60`"
        ));
    }
    let settings = StreamSettings::from_str(&format!("{setting}={value}"))
        .map_err(|e| format!("`{key}`: {e}"))?;
    Ok((stream.to_owned(), settings))
}

/// `-o key=value` into a setting.
pub fn parse_flag(text: &str) -> Result<Setting, ConfigError> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(ConfigError {
            origin: Source::Flag,
            message: format!(
                "`-o {text}` has no `=`: write `-o key=value`, e.g. `-o jpeg_quality=60`, \
                 `-o streams.color_image.max_width=640` or `-o camera.fps=15`"
            ),
        });
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError {
            origin: Source::Flag,
            message: format!("`-o {text}` has no key before `=`"),
        });
    }
    Ok(Setting {
        key: key.to_owned(),
        value: value.trim().to_owned(),
        source: Source::Flag,
    })
}

/// The settings the environment gives, from `vars` (`std::env::vars()` in a binary).
pub fn from_env(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<Setting>, ConfigError> {
    let mut out = Vec::new();
    let mut compress_images: Option<(String, bool)> = None;
    let mut vars: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| k.starts_with("STREAMWIRE_"))
        .collect();
    vars.sort();
    for (var, value) in vars {
        if OTHER_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        if var == "STREAMWIRE_COMPRESS_IMAGES" {
            let on = match value.trim() {
                "0" | "false" | "no" | "off" => false,
                "1" | "true" | "yes" | "on" => true,
                other => {
                    return Err(ConfigError {
                        origin: Source::Env(var),
                        message: format!("invalid value `{other}`: expected 0 or 1"),
                    });
                }
            };
            compress_images = Some((var, on));
            continue;
        }
        let Some((_, key)) = ENV_VARS.iter().find(|(v, _)| *v == var) else {
            let mut valid: Vec<&str> = ENV_VARS.iter().map(|(v, _)| *v).collect();
            valid.push("STREAMWIRE_COMPRESS_IMAGES");
            let hint = did_you_mean(&var, valid.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            return Err(ConfigError {
                origin: Source::Env(var.clone()),
                message: format!(
                    "unknown variable{hint}; the variables are: {}",
                    valid.join(", ")
                ),
            });
        };
        check_global(key, &value).map_err(|message| ConfigError {
            origin: Source::Env(var.clone()),
            message,
        })?;
        out.push(Setting {
            key: (*key).to_owned(),
            value: value.trim().to_owned(),
            source: Source::Env(var),
        });
    }
    if let Some((var, false)) = compress_images {
        // The opt-out is `compression=off`; the two forms must not disagree.
        if let Some(other) = out.iter().find(|s| s.key == "compression")
            && other.value != "off"
        {
            return Err(ConfigError {
                origin: Source::Env(var),
                message: format!(
                    "`STREAMWIRE_COMPRESS_IMAGES=0` turns compression off, but \
                     `{}` asks for `compression={}`: unset one of them",
                    other.source, other.value
                ),
            });
        }
        out.push(Setting {
            key: "compression".to_owned(),
            value: "off".to_owned(),
            source: Source::Env(var),
        });
    }
    Ok(out)
}

/// The key the user probably meant, among `valid`.
pub fn suggest<'a>(key: &str, valid: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(key, valid)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

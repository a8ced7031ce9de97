//! Layered configuration: a blueprint's knobs from its file, the environment and `-o`,
//! each value with where it came from.
//!
//! Keys: the global settings, one table of them ([`GLOBAL_SETTINGS`]: `compression`
//! (`auto|on|off`), `jpeg_quality` (1-100), `max_width` (pixels), `max_bitrate` (a bit
//! rate: the JPEG streams' budget), `min_quality` (its quality floor), `lossy_pixels`
//! (`ignore|warn|error`), each with its environment variable, aliases, check, default and
//! how it applies), `streams.<stream>.<setting>` (a stream's `compression`, `codec` or
//! codec parameter), and the blueprint's own: `<instance>.<field>` for a file's
//! `#[config]` fields, `<field>` for a registered blueprint's config type. Sources, in
//! increasing precedence: the file, the environment (`STREAMWIRE_COMPRESSION`,
//! `STREAMWIRE_JPEG_QUALITY`, `STREAMWIRE_MAX_WIDTH`, `STREAMWIRE_LOSSY_PIXELS`, and the
//! opt-out `STREAMWIRE_COMPRESS_IMAGES=0`, an alias of `compression=off`), then
//! `-o key=value` (in order). Per-stream beats global, as the planner applies them.

use std::fmt;
use std::str::FromStr;

use streamwire_graph::{Blueprint, BlueprintFile, Compression, Report, StreamSettings};
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

/// One global setting. Every path that reads, checks, shows or applies a global key goes
/// through its row of [`GLOBAL_SETTINGS`]: `-o`, the environment (and its aliases), a
/// blueprint file's own value, `config`'s defaults, the help of `config`, the lists in
/// error messages, and the blueprint it applies to (made by code or from a file alike).
pub struct GlobalSetting {
    /// The key: `-o compression=off`, a blueprint file's top-level `compression:`.
    pub key: &'static str,
    /// The environment variable that sets it.
    pub env: &'static str,
    /// Other variables that set it, each with how its values map to this key's.
    pub aliases: &'static [EnvAlias],
    /// What it accepts, for people.
    pub accepts: &'static str,
    /// What `config` shows when nobody sets it.
    pub default: &'static str,
    /// Checks a value (`None`) or checks and applies it to a blueprint (`Some`).
    check_apply: fn(&str, Option<&mut Blueprint>) -> Result<(), String>,
    /// Its value in a blueprint file, when the file sets it.
    in_file: fn(&BlueprintFile) -> Option<String>,
}

/// A second environment variable for a global setting, with values of its own.
pub struct EnvAlias {
    /// The variable, e.g. `STREAMWIRE_COMPRESS_IMAGES`.
    pub var: &'static str,
    /// What it accepts, for people.
    pub accepts: &'static str,
    /// What it does when it sets the key, said for people (`turns compression off`).
    pub effect: &'static str,
    /// Its value as the key's: `Ok(Some(value))`, `Ok(None)` (sets nothing), or what is valid.
    map: fn(&str) -> Result<Option<&'static str>, String>,
}

impl GlobalSetting {
    /// Checks a value; `Err` says what is valid.
    pub fn check(&self, value: &str) -> Result<(), String> {
        (self.check_apply)(value.trim(), None)
    }

    /// Checks a value and sets it on `blueprint` (one made by code or from a file).
    pub fn apply(&self, blueprint: &mut Blueprint, value: &str) -> Result<(), String> {
        (self.check_apply)(value.trim(), Some(blueprint))
    }

    /// Its value in `file`, as text, when the file sets it.
    pub fn in_file(&self, file: &BlueprintFile) -> Option<String> {
        (self.in_file)(file)
    }
}

impl EnvAlias {
    /// Its value as the setting's: `Ok(None)` when the value sets nothing.
    pub fn map(&self, value: &str) -> Result<Option<&'static str>, String> {
        (self.map)(value.trim())
    }
}

/// The global settings: the one table of them.
pub static GLOBAL_SETTINGS: &[GlobalSetting] = &[
    GlobalSetting {
        key: "compression",
        env: "STREAMWIRE_COMPRESSION",
        aliases: &[EnvAlias {
            var: "STREAMWIRE_COMPRESS_IMAGES",
            accepts: "0 (compression off) or 1 (no change)",
            effect: "turns compression off",
            map: compress_images,
        }],
        accepts: "auto | on | off",
        default: "auto",
        check_apply: compression,
        in_file: |file| file.compression.map(|c| c.to_string()),
    },
    GlobalSetting {
        key: "jpeg_quality",
        env: "STREAMWIRE_JPEG_QUALITY",
        aliases: &[],
        accepts: "1..=100",
        default: CODEC_DEFAULT,
        check_apply: jpeg_quality,
        in_file: |file| file.jpeg_quality.map(|q| q.to_string()),
    },
    GlobalSetting {
        key: "max_width",
        env: "STREAMWIRE_MAX_WIDTH",
        aliases: &[],
        accepts: "a width in pixels, >= 1",
        default: CODEC_DEFAULT,
        check_apply: max_width,
        in_file: |file| file.max_width.map(|w| w.to_string()),
    },
    GlobalSetting {
        key: "max_bitrate",
        env: "STREAMWIRE_MAX_BITRATE",
        aliases: &[],
        accepts: "a bit rate (6.4Mbit/s, 800k) or none",
        default: CODEC_DEFAULT,
        check_apply: max_bitrate,
        in_file: |file| file.max_bitrate.as_ref().map(ToString::to_string),
    },
    GlobalSetting {
        key: "min_quality",
        env: "STREAMWIRE_MIN_QUALITY",
        aliases: &[],
        accepts: "1..=100",
        default: CODEC_DEFAULT,
        check_apply: min_quality,
        in_file: |file| file.min_quality.map(|q| q.to_string()),
    },
    GlobalSetting {
        key: "lossy_pixels",
        env: "STREAMWIRE_LOSSY_PIXELS",
        aliases: &[],
        accepts: "ignore | warn | error",
        default: "warn",
        check_apply: lossy_pixels,
        in_file: |file| file.lossy_pixels.map(|r| r.to_string()),
    },
];

/// What `config` shows for a codec parameter nobody set.
const CODEC_DEFAULT: &str = "(the codec's default)";

fn compression(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    let compression = Compression::from_str(value).map_err(|e| e.to_string())?;
    if let Some(blueprint) = blueprint {
        blueprint.compression(compression);
    }
    Ok(())
}

/// `STREAMWIRE_COMPRESS_IMAGES`: the opt-out, `0` is `compression=off`, `1` changes nothing.
fn compress_images(value: &str) -> Result<Option<&'static str>, String> {
    match value {
        "0" | "false" | "no" | "off" => Ok(Some("off")),
        "1" | "true" | "yes" | "on" => Ok(None),
        other => Err(format!("invalid value `{other}`: expected 0 or 1")),
    }
}

fn jpeg_quality(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    let Ok(quality @ 1..=100) = value.parse::<u8>() else {
        return Err(format!(
            "invalid jpeg_quality `{value}`: expected a whole number in 1..=100"
        ));
    };
    if let Some(blueprint) = blueprint {
        blueprint.codec_default("jpeg_quality", quality);
    }
    Ok(())
}

fn max_width(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    let width = match value.parse::<u32>() {
        Ok(width) if width >= 1 => width,
        _ => {
            return Err(format!(
                "invalid max_width `{value}`: expected a width in pixels, >= 1"
            ));
        }
    };
    if let Some(blueprint) = blueprint {
        blueprint.codec_default("max_width", width);
    }
    Ok(())
}

/// A budget is range-checked here, before anything starts (1 kbit/s to 100 Gbit/s).
fn max_bitrate(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    if value != "none" {
        let bits = streamwire_msgs::parse_bitrate(value)
            .map_err(|reason| format!("invalid max_bitrate: {reason}"))?;
        streamwire_msgs::BitrateBudget::new(
            bits,
            streamwire_msgs::BitrateBudget::DEFAULT_MIN_QUALITY,
        )
        .map_err(|error| format!("invalid max_bitrate: {error}"))?;
    }
    if let Some(blueprint) = blueprint {
        blueprint.codec_default("max_bitrate", value);
    }
    Ok(())
}

fn min_quality(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    let Ok(quality @ 1..=100) = value.parse::<u8>() else {
        return Err(format!(
            "invalid min_quality `{value}`: expected a whole number in 1..=100"
        ));
    };
    if let Some(blueprint) = blueprint {
        blueprint.codec_default("min_quality", quality);
    }
    Ok(())
}

fn lossy_pixels(value: &str, blueprint: Option<&mut Blueprint>) -> Result<(), String> {
    let report = Report::from_str(value).map_err(|e| e.to_string())?;
    if let Some(blueprint) = blueprint {
        blueprint.lossy_pixels(report);
    }
    Ok(())
}

/// The row of global key `key`.
pub fn global(key: &str) -> Option<&'static GlobalSetting> {
    GLOBAL_SETTINGS.iter().find(|g| g.key == key)
}

/// Whether `key` is global (a row of the table, or `streams.<stream>.<setting>`), not one
/// of a blueprint's own keys.
pub fn is_global(key: &str) -> bool {
    global(key).is_some() || key.starts_with("streams.")
}

/// The global keys, then `streams.<stream>.<setting>`, then `own`: the keys an unknown-key
/// error lists.
pub fn valid_keys(own: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut keys: Vec<String> = GLOBAL_SETTINGS.iter().map(|g| g.key.to_owned()).collect();
    keys.push("streams.<stream>.<setting>".to_owned());
    keys.extend(own);
    keys
}

/// The environment variables read as configuration: each setting's own, then the aliases.
pub fn env_vars() -> Vec<&'static str> {
    let own = GLOBAL_SETTINGS.iter().map(|g| g.env);
    let aliases = GLOBAL_SETTINGS
        .iter()
        .flat_map(|g| g.aliases.iter().map(|a| a.var));
    own.chain(aliases).collect()
}

/// The global settings for people: `config`'s help.
pub fn help_text() -> String {
    let width = GLOBAL_SETTINGS
        .iter()
        .map(|g| g.key.len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("Global keys (-o KEY=VALUE, or the environment):\n");
    for g in GLOBAL_SETTINGS {
        out.push_str(&format!(
            "  {:width$}  {}; default {}\n  {:width$}  env {}",
            g.key, g.accepts, g.default, "", g.env
        ));
        for alias in g.aliases {
            out.push_str(&format!(", or {}: {}", alias.var, alias.accepts));
        }
        out.push('\n');
    }
    out.push_str(
        "  streams.<stream>.<setting>: a stream's compression, codec or codec parameter\n",
    );
    out
}

/// `STREAMWIRE_*` variables that are not configuration (read by other tools).
const OTHER_ENV_VARS: &[&str] = &[
    "STREAMWIRE_DATA",
    // The largest blueprint file read (`check`, `config`, `run` of a file).
    crate::resolve::MAX_BLUEPRINT_BYTES_VAR,
    "STREAMWIRE_LOG",
    // The test suite's: every test must run (`.ci/run` sets it for every process it starts).
    "STREAMWIRE_REQUIRE",
    // Where the ROS 2 interop tests find their reference implementations.
    "STREAMWIRE_ROS2_PYTHON",
    "STREAMWIRE_ROS2_NODE_MODULES",
    // Where the MCAP interop tests find mcap and rosbags.
    "STREAMWIRE_MCAP_PYTHON",
];

/// Checks a global value; `Err` says what is valid.
pub fn check_global(key: &str, value: &str) -> Result<(), String> {
    match global(key) {
        Some(setting) => setting.check(value),
        None => Err(format!("`{key}` is not a global setting")),
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
    // Aliases apply after the variables of their own key, which they must not contradict.
    let mut from_aliases: Vec<(&EnvAlias, String, Setting)> = Vec::new();
    let mut vars: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| k.starts_with("STREAMWIRE_"))
        .collect();
    vars.sort();
    for (var, value) in vars {
        if OTHER_ENV_VARS.contains(&var.as_str()) {
            continue;
        }
        let error = |message: String| ConfigError {
            origin: Source::Env(var.clone()),
            message,
        };
        if let Some(setting) = GLOBAL_SETTINGS.iter().find(|g| g.env == var) {
            setting.check(&value).map_err(error)?;
            out.push(Setting {
                key: setting.key.to_owned(),
                value: value.trim().to_owned(),
                source: Source::Env(var),
            });
        } else if let Some((setting, alias)) = alias_of(&var) {
            if let Some(mapped) = alias.map(&value).map_err(error)? {
                let setting = Setting {
                    key: setting.key.to_owned(),
                    value: mapped.to_owned(),
                    source: Source::Env(var.clone()),
                };
                from_aliases.push((alias, value.trim().to_owned(), setting));
            }
        } else {
            let valid = env_vars();
            return Err(error(format!(
                "unknown variable{}; the variables are: {}",
                suggest(&var, valid.iter().copied()),
                valid.join(", ")
            )));
        }
    }
    for (alias, given, setting) in from_aliases {
        if let Some(other) = out
            .iter()
            .find(|s| s.key == setting.key && s.value != setting.value)
        {
            return Err(ConfigError {
                origin: setting.source,
                message: format!(
                    "`{}={given}` {}, but `{}` asks for `{}={}`: unset one of them",
                    alias.var, alias.effect, other.source, other.key, other.value
                ),
            });
        }
        out.push(setting);
    }
    Ok(out)
}

/// The setting whose alias `var` is.
fn alias_of(var: &str) -> Option<(&'static GlobalSetting, &'static EnvAlias)> {
    GLOBAL_SETTINGS.iter().find_map(|g| {
        g.aliases
            .iter()
            .find(|a| a.var == var)
            .map(|alias| (g, alias))
    })
}

/// The key the user probably meant, among `valid`.
pub fn suggest<'a>(key: &str, valid: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(key, valid)
        .map(|s| format!(" (did you mean `{s}`?)"))
        // infallible: no close key is no hint, not a failure
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Result<Vec<Setting>, ConfigError> {
        from_env(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
    }

    #[test]
    fn every_variable_of_the_table_sets_its_key() {
        let values = [
            ("compression", "off"),
            ("jpeg_quality", "60"),
            ("max_width", "640"),
            ("max_bitrate", "6.4Mbit/s"),
            ("min_quality", "30"),
            ("lossy_pixels", "error"),
        ];
        assert_eq!(values.len(), GLOBAL_SETTINGS.len());
        for (key, value) in values {
            let row = global(key).unwrap();
            let settings = env(&[(row.env, value)]).unwrap();
            assert_eq!(settings.len(), 1);
            assert_eq!(settings[0].key, key);
            assert_eq!(settings[0].value, value);
            assert_eq!(settings[0].source, Source::Env(row.env.to_owned()));
            assert!(check_global(key, "nonsense").is_err(), "{key}");
        }
    }

    #[test]
    fn the_compress_images_opt_out_is_an_alias_of_compression_off() {
        assert!(env_vars().contains(&"STREAMWIRE_COMPRESS_IMAGES"));
        let off = env(&[("STREAMWIRE_COMPRESS_IMAGES", "0")]).unwrap();
        assert_eq!(off.len(), 1);
        assert_eq!(
            (off[0].key.as_str(), off[0].value.as_str()),
            ("compression", "off")
        );
        assert_eq!(env(&[("STREAMWIRE_COMPRESS_IMAGES", "1")]).unwrap(), vec![]);
        let bad = env(&[("STREAMWIRE_COMPRESS_IMAGES", "maybe")]).unwrap_err();
        assert_eq!(bad.message, "invalid value `maybe`: expected 0 or 1");
        // It agrees with the key's own variable, or it is an error.
        let agreed = env(&[
            ("STREAMWIRE_COMPRESS_IMAGES", "0"),
            ("STREAMWIRE_COMPRESSION", "off"),
        ]);
        assert_eq!(agreed.unwrap().len(), 2);
        assert!(
            env(&[
                ("STREAMWIRE_COMPRESS_IMAGES", "0"),
                ("STREAMWIRE_COMPRESSION", "on"),
            ])
            .is_err()
        );
    }

    #[test]
    fn the_help_lists_every_key_variable_and_alias() {
        let help = help_text();
        for row in GLOBAL_SETTINGS {
            assert!(help.contains(row.key) && help.contains(row.env), "{help}");
            for alias in row.aliases {
                assert!(help.contains(alias.var), "{help}");
            }
        }
        insta::assert_snapshot!(help);
    }
}

//! Layered configuration: a blueprint's knobs from its file, the environment and `-o`,
//! each value with where it came from.
//!
//! Keys: the global keys, one table of them in the graph crate
//! ([`global_keys`]: `compression`, `jpeg_quality`,
//! `max_width`, `max_bitrate`, `min_quality`, `lossy_pixels`, each with its environment
//! variable, check, default and how it applies; the CLI adds only its aliases,
//! [`ENV_ALIASES`]), `streams.<stream>.<setting>` (a stream's `compression`, `codec` or
//! codec parameter), and the blueprint's own: `<instance>.<field>` for a file's
//! `#[config]` fields, `<field>` for a registered blueprint's config type. Sources, in
//! increasing precedence: the file, the environment (each key's `STREAMWIRE_*` variable,
//! and the opt-out `STREAMWIRE_COMPRESS_IMAGES=0`, an alias of `compression=off`), then
//! `-o key=value` (in order). Per-stream beats global, as the planner applies them.

use std::fmt;

use streamwire_graph::keys::STREAM_KEY;
use streamwire_graph::{GlobalKey, global_key, global_keys};
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

/// A second environment variable for a global key, with values of its own: the CLI's
/// own, beside the key's row of [`global_keys`] (which holds everything else about it).
pub struct EnvAlias {
    /// The variable, e.g. `STREAMWIRE_COMPRESS_IMAGES`.
    pub var: &'static str,
    /// The global key it sets.
    pub key: &'static str,
    /// What it accepts, for people.
    pub accepts: &'static str,
    /// What it does when it sets the key, said for people (`turns compression off`).
    pub effect: &'static str,
    /// Its value as the key's: `Ok(Some(value))`, `Ok(None)` (sets nothing), or what is valid.
    map: fn(&str) -> Result<Option<&'static str>, String>,
}

impl EnvAlias {
    /// Its value as the key's: `Ok(None)` when the value sets nothing.
    pub fn map(&self, value: &str) -> Result<Option<&'static str>, String> {
        (self.map)(value.trim())
    }
}

/// The environment's aliases of global keys.
pub static ENV_ALIASES: &[EnvAlias] = &[EnvAlias {
    var: "STREAMWIRE_COMPRESS_IMAGES",
    key: "compression",
    accepts: "0 (compression off) or 1 (no change)",
    effect: "turns compression off",
    map: compress_images,
}];

/// `STREAMWIRE_COMPRESS_IMAGES`: the opt-out, `0` is `compression=off`, `1` changes nothing.
fn compress_images(value: &str) -> Result<Option<&'static str>, String> {
    match value {
        "0" | "false" | "no" | "off" => Ok(Some("off")),
        "1" | "true" | "yes" | "on" => Ok(None),
        other => Err(format!("invalid value `{other}`: expected 0 or 1")),
    }
}

/// The aliases of global key `key`.
fn aliases_of(key: &str) -> impl Iterator<Item = &'static EnvAlias> + '_ {
    ENV_ALIASES.iter().filter(move |a| a.key == key)
}

/// The global keys, then `streams.<stream>.<setting>`, then `own`: the keys an unknown-key
/// error lists.
pub fn valid_keys(own: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut keys: Vec<String> = global_keys().map(|g| g.key.to_owned()).collect();
    keys.push(STREAM_KEY.to_owned());
    keys.extend(own);
    keys
}

/// The environment variables read as configuration: each key's own, then the aliases.
pub fn env_vars() -> Vec<&'static str> {
    let own = global_keys().map(|g| g.env);
    let aliases = global_keys().flat_map(|g| aliases_of(g.key).map(|a| a.var));
    own.chain(aliases).collect()
}

/// The global keys for people: `config`'s help.
pub fn help_text() -> String {
    let width = global_keys().map(|g| g.key.len()).max().unwrap_or(0);
    let mut out = String::from("Global keys (-o KEY=VALUE, or the environment):\n");
    for g in global_keys() {
        out.push_str(&format!(
            "  {:width$}  {}; default {}\n  {:width$}  env {}",
            g.key, g.accepts, g.default, "", g.env
        ));
        for alias in aliases_of(g.key) {
            out.push_str(&format!(", or {}: {}", alias.var, alias.accepts));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "  {STREAM_KEY}: a stream's compression, codec or codec parameter\n"
    ));
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
        if let Some(setting) = global_keys().find(|g| g.env == var) {
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

/// The key whose alias `var` is.
fn alias_of(var: &str) -> Option<(&'static GlobalKey, &'static EnvAlias)> {
    let alias = ENV_ALIASES.iter().find(|a| a.var == var)?;
    Some((global_key(alias.key)?, alias))
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
        for row in global_keys() {
            let settings = env(&[(row.env, row.example)]).unwrap();
            assert_eq!(settings.len(), 1);
            assert_eq!(settings[0].key, row.key);
            assert_eq!(settings[0].value, row.example);
            assert_eq!(settings[0].source, Source::Env(row.env.to_owned()));
            let bad = env(&[(row.env, "nonsense")]).unwrap_err();
            assert_eq!(bad.origin, Source::Env(row.env.to_owned()));
        }
    }

    #[test]
    fn every_alias_names_a_global_key() {
        for alias in ENV_ALIASES {
            assert!(global_key(alias.key).is_some(), "{}", alias.var);
            assert!(env_vars().contains(&alias.var), "{}", alias.var);
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
        for row in global_keys() {
            assert!(help.contains(row.key) && help.contains(row.env), "{help}");
        }
        for alias in ENV_ALIASES {
            assert!(help.contains(alias.var), "{help}");
        }
        insta::assert_snapshot!(help);
    }
}

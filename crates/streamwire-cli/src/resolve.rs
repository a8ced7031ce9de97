//! A target (a registered blueprint's name, or a blueprint file) made into a blueprint with
//! every layer of configuration applied: the blueprint's own values, the environment, `-o`.
//!
//! One path for both kinds once the blueprint exists: the global layers (the rows of
//! [`global_keys`] and `streams.*`) are applied to the built [`Blueprint`] by
//! [`apply_globals`], whether code or a file made it. What differs is what comes before:
//! a blueprint's own keys (a code blueprint's config type fields, a file's
//! `<instance>.<field>`) are applied before it is built, because they are what builds it,
//! and the lowest layer of the global keys is the table's defaults for code (its builder
//! sets what it sets, unseen) but the file's own values, with their lines, for a file.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use streamwire_core::ModuleConfig;
use streamwire_graph::{
    Blueprint, BlueprintFile, FileFormat, KeyLines, Problem, global_key, global_keys, keys,
};

use crate::config::{self, ConfigError, Setting, Source};
use crate::{Cli, IntoBlueprint};

/// How a code blueprint is made from the layers.
pub(crate) type BuildFn = Box<dyn Fn(&[Setting]) -> Result<Built, anyhow::Error>>;

/// A blueprint registered by name.
pub(crate) struct Registered {
    pub(crate) name: String,
    pub(crate) about: String,
    pub(crate) kind: RegisteredKind,
}

pub(crate) enum RegisteredKind {
    /// Built by code from a serde config type.
    Code {
        /// The config type's default, as JSON (its keys are the valid `-o` keys).
        defaults: serde_json::Map<String, Value>,
        build: BuildFn,
    },
    /// A YAML blueprint shipped in the binary.
    File { text: String },
}

/// What a target resolves to, before it runs.
pub(crate) struct Built {
    pub(crate) blueprint: Blueprint,
    /// The effective configuration, for `config`.
    pub(crate) settings: Vec<Setting>,
    /// What each key that declares a range accepts (`camera.fps`: `finite, 0.01..=1000.0`),
    /// for `config`.
    pub(crate) accepts: BTreeMap<String, &'static str>,
}

/// The variable that sets the largest blueprint file read, in bytes.
pub(crate) const MAX_BLUEPRINT_BYTES_VAR: &str = "STREAMWIRE_MAX_BLUEPRINT_BYTES";

/// The largest blueprint file read: `STREAMWIRE_MAX_BLUEPRINT_BYTES`, else the default
/// (4 MiB).
fn max_blueprint_bytes(env: &[(String, String)]) -> anyhow::Result<u64> {
    match env.iter().find(|(k, _)| k == MAX_BLUEPRINT_BYTES_VAR) {
        None => Ok(BlueprintFile::DEFAULT_MAX_BYTES),
        Some((_, value)) => match value.trim().parse::<u64>() {
            Ok(limit @ 1..) => Ok(limit),
            _ => Err(ConfigError {
                origin: Source::Env(MAX_BLUEPRINT_BYTES_VAR.to_owned()),
                message: format!(
                    "invalid value `{value}`: expected a number of bytes, 1..={}",
                    u64::MAX
                ),
            }
            .into()),
        },
    }
}

impl Cli {
    /// A target (registered name or file) with every configuration layer applied.
    pub(crate) fn resolve(
        &self,
        target: &str,
        env: &[(String, String)],
        flags: &[String],
    ) -> anyhow::Result<Built> {
        let mut layers = config::from_env(env.iter().cloned())?;
        for flag in flags {
            layers.push(config::parse_flag(flag)?);
        }
        if let Some(registered) = self.blueprints.iter().find(|b| b.name == target) {
            let built = match &registered.kind {
                RegisteredKind::Code { build, .. } => build(&layers)?,
                RegisteredKind::File { text } => {
                    let path = format!("<blueprint {}>", registered.name);
                    let file = BlueprintFile::parse(text, FileFormat::Yaml, Path::new(&path))?;
                    from_file(file, text, &path, &layers)?
                }
            };
            check_settings(&built)?;
            return Ok(built);
        }
        let path = Path::new(target);
        let looks_like_file = path.exists()
            || matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            );
        if !looks_like_file {
            let names: Vec<&str> = self.blueprints.iter().map(|b| b.name.as_str()).collect();
            bail!(
                "no blueprint `{target}`{}: the registered blueprints are: {} (or give a \
                 blueprint file: .yaml, .yml, .json)",
                config::suggest(target, names.iter().copied()),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            );
        }
        let limit = max_blueprint_bytes(env)?;
        let text = BlueprintFile::read(path, limit, MAX_BLUEPRINT_BYTES_VAR)
            .with_context(|| format!("cannot read blueprint file {}", path.display()))?;
        let file = BlueprintFile::parse(&text, FileFormat::of(path), path)?;
        let built = from_file(file, &text, &path.display().to_string(), &layers)?;
        check_settings(&built)?;
        Ok(built)
    }
}

/// The settings that must hold before any worker starts (every instance's settings in
/// their declared ranges, every placement a name zenoh can carry), each refusal with the
/// key, the value, the range and who set it (`-o`, the environment, `file:line`).
fn check_settings(built: &Built) -> anyhow::Result<()> {
    let Err(error) = built.blueprint.check_settings() else {
        return Ok(());
    };
    let lines: Vec<String> = error
        .problems
        .iter()
        .map(|problem| match problem {
            Problem::InvalidConfig {
                instance,
                problem:
                    streamwire_core::ConfigProblem::OutOfRange {
                        field,
                        value,
                        accepts,
                    },
                ..
            } => {
                // Named by its key and who set it, when a key of the layers names it (a
                // file's `<instance>.<field>`, a code blueprint's key of the same name).
                let key = format!("{instance}.{field}");
                match built.settings.iter().find(|s| s.key == key) {
                    Some(setting) => ConfigError {
                        origin: setting.source.clone(),
                        message: format!("`{key}` = {value} is out of range: it accepts {accepts}"),
                    }
                    .to_string(),
                    None => problem.to_string(),
                }
            }
            other => other.to_string(),
        })
        .collect();
    bail!("{}", lines.join("\n"))
}

/// The builder of a code blueprint `name`: `C::default()` (flattened in `defaults`) changed
/// by the layers of its own keys, built by `build`, then the global layers on top.
pub(crate) fn code_blueprint<C, F, R>(
    name: String,
    defaults: serde_json::Map<String, Value>,
    build: F,
) -> BuildFn
where
    C: Serialize + DeserializeOwned + Default + 'static,
    F: Fn(C) -> R + 'static,
    R: IntoBlueprint,
{
    Box::new(move |layers: &[Setting]| {
        let (globals, own): (Vec<Setting>, Vec<Setting>) = layers
            .iter()
            .cloned()
            .partition(|s| keys::is_global(&s.key));
        let (object, mut effective) = own_code_keys(&name, &defaults, &own)?;
        let config: C = read_config(unflatten(object), "", &own, &format!("blueprint `{name}`"))?;
        let mut blueprint = build(config)
            .into_blueprint()
            // The whole chain: a blueprint's error says what it is, its sources why.
            .map_err(|e| anyhow!("blueprint `{name}`: {}", streamwire_core::log::chain(&*e)))?;
        effective.extend(apply_globals(&mut blueprint, default_globals(), &globals)?);
        Ok(Built {
            blueprint,
            settings: effective,
            accepts: global_accepts(),
        })
    })
}

/// A code blueprint's own keys: its config's defaults with the layers on top, and the
/// effective settings.
fn own_code_keys(
    name: &str,
    defaults: &serde_json::Map<String, Value>,
    own: &[Setting],
) -> anyhow::Result<(serde_json::Map<String, Value>, Vec<Setting>)> {
    let mut object = defaults.clone();
    let mut effective: Vec<Setting> = defaults
        .iter()
        .map(|(k, v)| Setting {
            key: k.clone(),
            value: value_text(v),
            source: Source::Registered,
        })
        .collect();
    for s in own {
        let Some(old) = object.get(&s.key) else {
            let valid = config::valid_keys(defaults.keys().cloned());
            return Err(ConfigError {
                origin: s.source.clone(),
                message: format!(
                    "unknown key `{}` for blueprint `{name}`{}; the keys are: {}",
                    s.key,
                    config::suggest(&s.key, valid.iter().map(String::as_str)),
                    valid.join(", ")
                ),
            }
            .into());
        };
        if let Some(refused) = non_finite(None, &s.key, old, s) {
            return Err(refused.into());
        }
        let value = parse_value(&s.value, old);
        object.insert(s.key.clone(), value);
        set_effective(&mut effective, s);
    }
    Ok((object, effective))
}

/// The global layers (checked here) applied in order to `blueprint`, over `base` (every
/// global key's value before them); returns the effective global settings.
fn apply_globals(
    blueprint: &mut Blueprint,
    base: Vec<Setting>,
    layers: &[Setting],
) -> anyhow::Result<Vec<Setting>> {
    let mut effective = base;
    for s in layers {
        let err = |message: String| ConfigError {
            origin: s.source.clone(),
            message,
        };
        if s.key.starts_with("streams.") {
            let (stream, settings) = keys::stream_key(&s.key, &s.value).map_err(err)?;
            blueprint.stream_override(&stream, &settings);
        } else {
            match global_key(&s.key) {
                Some(global) => global.apply(blueprint, &s.value).map_err(err)?,
                None => return Err(err(format!("`{}` is not a global setting", s.key)).into()),
            }
        }
        set_effective(&mut effective, s);
    }
    Ok(effective)
}

/// What each global key accepts.
fn global_accepts() -> BTreeMap<String, &'static str> {
    global_keys()
        .map(|g| (g.key.to_owned(), g.accepts))
        .collect()
}

/// Every global key at its default: a code blueprint's lowest layer.
fn default_globals() -> Vec<Setting> {
    global_keys()
        .map(|g| Setting {
            key: g.key.to_owned(),
            value: g.default.to_owned(),
            source: Source::Default,
        })
        .collect()
}

/// A blueprint file with the environment and `-o` layers on top.
fn from_file(
    mut file: BlueprintFile,
    text: &str,
    path: &str,
    layers: &[Setting],
) -> anyhow::Result<Built> {
    // infallible: the file was parsed already; without line numbers its settings are still named by key
    let lines = KeyLines::of(text).unwrap_or_default();
    let at = |keys: &[&str]| Source::File {
        path: path.to_owned(),
        line: lines.line(keys),
    };
    let (globals, own): (Vec<Setting>, Vec<Setting>) = layers
        .iter()
        .cloned()
        .partition(|s| keys::is_global(&s.key));
    let base = file_globals(&file, &at);
    let mut effective = own_file_keys(&mut file, &own, &at)?;
    let mut accepts = global_accepts();
    for (name, module) in &file.instances.0 {
        for range in module.config_ranges() {
            accepts.insert(format!("{name}.{}", range.field), range.accepts);
        }
    }
    let mut blueprint = file.into_blueprint();
    effective.extend(apply_globals(&mut blueprint, base, &globals)?);
    Ok(Built {
        blueprint,
        settings: effective,
        accepts,
    })
}

/// A file's own values of the global keys (or their defaults) and of its streams' settings:
/// a file blueprint's lowest layer.
fn file_globals(file: &BlueprintFile, at: &dyn Fn(&[&str]) -> Source) -> Vec<Setting> {
    let mut out: Vec<Setting> = global_keys()
        .map(|g| match file.globals.get(g.key) {
            Some(value) => Setting {
                key: g.key.to_owned(),
                value,
                source: at(&[g.key]),
            },
            None => Setting {
                key: g.key.to_owned(),
                value: g.default.to_owned(),
                source: Source::Default,
            },
        })
        .collect();
    for (stream, settings) in &file.streams {
        let text_form = settings.to_string();
        let pairs = text_form
            .split(',')
            .map(str::trim)
            .filter_map(|pair| pair.split_once('='));
        for (k, v) in pairs {
            out.push(Setting {
                key: format!("streams.{stream}.{k}"),
                value: v.to_owned(),
                source: at(&["streams", stream]),
            });
        }
    }
    out
}

/// A file's own keys (`<instance>.<field>`): each instance's config edited as JSON by the
/// layers, then read back; returns the effective settings of those keys.
fn own_file_keys(
    file: &mut BlueprintFile,
    own: &[Setting],
    at: &dyn Fn(&[&str]) -> Source,
) -> anyhow::Result<Vec<Setting>> {
    let mut objects = Vec::new();
    for (name, module) in &file.instances.0 {
        objects.push((name.clone(), config_object(name, &**module)?));
    }
    // A field the file leaves out has the module's default.
    let source = |name: &str, field: &str| match at(&["instances", name, field]) {
        Source::File { line: None, .. } => Source::Default,
        source => source,
    };
    let (effective, changed) = edit_instances(objects, own, &source)?;
    for (name, module) in changed {
        if let Some(slot) = file.instances.0.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = module;
        }
    }
    Ok(effective)
}

/// The builder of a code blueprint `name` made without a config type of its own
/// ([`Cli::blueprint_fn`]): its own keys are its instances' `#[config]` fields
/// (`<instance>.<field>`), at the values its code gave them (the modules' declared
/// defaults where it took those), changed by the layers as a file's are; then the global
/// layers on top.
pub(crate) fn modules_blueprint<F, R>(name: String, build: F) -> BuildFn
where
    F: Fn() -> R + 'static,
    R: IntoBlueprint,
{
    Box::new(move |layers: &[Setting]| {
        let (globals, own): (Vec<Setting>, Vec<Setting>) = layers
            .iter()
            .cloned()
            .partition(|s| keys::is_global(&s.key));
        let mut blueprint = build()
            .into_blueprint()
            .map_err(|e| anyhow!("blueprint `{name}`: {}", streamwire_core::log::chain(&*e)))?;
        let mut objects = Vec::new();
        let mut accepts = global_accepts();
        for (instance, module) in blueprint.instance_values() {
            // A module without file support (an internal one) has no settings to give.
            let Some(config) = module.as_config() else {
                continue;
            };
            objects.push((instance.to_owned(), config_object(instance, config)?));
            for range in module.config_ranges() {
                accepts.insert(format!("{instance}.{}", range.field), range.accepts);
            }
        }
        let (mut effective, changed) =
            edit_instances(objects, &own, &|_: &str, _: &str| Source::Registered)?;
        for (instance, module) in changed {
            let mut module: Box<dyn streamwire_core::ModuleValue> = module;
            if !blueprint.set_config(&instance, &mut *module) {
                bail!("blueprint `{name}`: instance `{instance}` changed its module type");
            }
        }
        effective.extend(apply_globals(&mut blueprint, default_globals(), &globals)?);
        Ok(Built {
            blueprint,
            settings: effective,
            accepts,
        })
    })
}

/// Instance `name`'s config as a JSON object (its `type` and its `#[config]` fields).
fn config_object(
    name: &str,
    module: &dyn ModuleConfig,
) -> anyhow::Result<serde_json::Map<String, Value>> {
    match serde_json::to_value(module)? {
        Value::Object(map) => Ok(map),
        _ => bail!("instance `{name}` did not serialize as a map"),
    }
}

/// Each changed instance's name and its module read back with the new settings.
type EditedInstances = Vec<(String, Box<dyn ModuleConfig>)>;

/// Instances' configs (`objects`, each its name and JSON object) edited by the layers of
/// their keys (`<instance>.<field>`): the effective settings of those keys (each value
/// not given by a layer from `source`) and each changed instance's module read back.
fn edit_instances(
    mut objects: Vec<(String, serde_json::Map<String, Value>)>,
    own: &[Setting],
    source: &dyn Fn(&str, &str) -> Source,
) -> anyhow::Result<(Vec<Setting>, EditedInstances)> {
    let mut effective: Vec<Setting> = Vec::new();
    for (name, map) in &objects {
        for (k, v) in map.iter().filter(|(k, _)| *k != "type") {
            effective.push(Setting {
                key: format!("{name}.{k}"),
                value: value_text(v),
                source: source(name, k),
            });
        }
    }
    let mut changed = vec![false; objects.len()];
    for s in own {
        let (index, field) = instance_field(&objects, s)?;
        let map = &mut objects[index].1;
        if let Some(old) = map.get(field) {
            if let Some(refused) = non_finite(Some(map), field, old, s) {
                return Err(refused.into());
            }
            let value = parse_value(&s.value, old);
            map.insert(field.to_owned(), value);
        }
        changed[index] = true;
        set_effective(&mut effective, s);
    }
    let mut modules = Vec::new();
    for ((name, map), changed) in objects.into_iter().zip(changed) {
        if !changed {
            continue;
        }
        let module: Box<dyn ModuleConfig> = read_config(
            Value::Object(map),
            &name,
            own,
            &format!("instance `{name}`"),
        )?;
        modules.push((name, module));
    }
    Ok((effective, modules))
}

/// `T` read from `value`: a mistake names the key at fault (`camera.fps`, its path under
/// `prefix`) and who set it (`-o`, a file's line), not only what serde expected.
fn read_config<T: DeserializeOwned>(
    value: Value,
    prefix: &str,
    layers: &[Setting],
    what: &str,
) -> anyhow::Result<T> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let key = match (prefix, path.as_str()) {
            (_, ".") => prefix.to_owned(),
            ("", path) => path.to_owned(),
            (prefix, path) => format!("{prefix}.{path}"),
        };
        let inner = error.into_inner();
        // A module's config read through its type tag keeps no path: the one setting of
        // that instance given is the one at fault.
        let of_instance: Vec<&Setting> = layers
            .iter()
            .filter(|s| !prefix.is_empty() && s.key.starts_with(&format!("{prefix}.")))
            .collect();
        let at_fault = layers
            .iter()
            .rev()
            .find(|s| s.key == key)
            .or(match of_instance.as_slice() {
                [one] if key == prefix => Some(*one),
                _ => None,
            })
            // A code blueprint's config struct may keep no path either (a flattened
            // field): the one setting given is the one at fault.
            .or(match layers {
                [one] if key.is_empty() || key == prefix => Some(one),
                _ => None,
            });
        match at_fault {
            Some(s) => ConfigError {
                origin: s.source.clone(),
                message: format!("invalid `{}` `{}`: {inner}", s.key, s.value),
            }
            .into(),
            None if key.is_empty() || key == prefix => {
                let given: Vec<String> = layers
                    .iter()
                    .map(|s| format!("`{}={}`", s.key, s.value))
                    .collect();
                match given.as_slice() {
                    [] => anyhow!("invalid configuration of {what}: {inner}"),
                    _ => anyhow!(
                        "invalid configuration of {what} (one of {}): {inner}",
                        given.join(", ")
                    ),
                }
            }
            None => anyhow!("invalid configuration of {what}: `{key}`: {inner}"),
        }
    })
}

/// NaN or an infinity given to a number setting (`-o camera.fps=NaN`): JSON cannot hold
/// it, so it is refused here, with what the setting accepts when its module (`map`, an
/// instance of a file) declares it.
fn non_finite(
    map: Option<&serde_json::Map<String, Value>>,
    field: &str,
    old: &Value,
    setting: &Setting,
) -> Option<ConfigError> {
    let number = setting.value.parse::<f64>().ok()?;
    if number.is_finite() || !(old.is_number() || old.is_null()) {
        return None;
    }
    let accepts = map
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str)
        .and_then(streamwire_core::registration)
        .and_then(|r| r.accepts(field))
        .map_or_else(|| "finite numbers".to_owned(), str::to_owned);
    Some(ConfigError {
        origin: setting.source.clone(),
        message: format!(
            "`{}` = {number:?} is out of range: it accepts {accepts}",
            setting.key
        ),
    })
}

/// Which instance (its index in `objects`) and config field `setting`'s key names; an
/// unknown one is an error listing the valid keys.
fn instance_field<'a>(
    objects: &[(String, serde_json::Map<String, Value>)],
    setting: &'a Setting,
) -> anyhow::Result<(usize, &'a str)> {
    let unknown = |what: String| -> anyhow::Error {
        let own = objects.iter().flat_map(|(n, m)| {
            m.keys()
                .filter(|k| *k != "type")
                .map(move |k| format!("{n}.{k}"))
        });
        let valid = config::valid_keys(own);
        ConfigError {
            origin: setting.source.clone(),
            message: format!(
                "{what}{}; the keys are: {}",
                config::suggest(&setting.key, valid.iter().map(String::as_str)),
                valid.join(", ")
            ),
        }
        .into()
    };
    let key = &setting.key;
    let Some((instance, field)) = key.rsplit_once('.') else {
        return Err(unknown(format!("unknown key `{key}`")));
    };
    let Some(index) = objects.iter().position(|(n, _)| n == instance) else {
        // `web.config.listen`: a module's settings were once one nested value (the web
        // relay's `config`); each is a key of its own now.
        let plain = objects.iter().find(|(n, m)| {
            key.strip_prefix(n.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
                && m.contains_key(field)
        });
        if let Some((name, _)) = plain {
            return Err(ConfigError {
                origin: setting.source.clone(),
                message: format!(
                    "unknown key `{key}`: `{name}`'s settings are plain keys \
                     `<instance>.<field>`: write `{name}.{field}`"
                ),
            }
            .into());
        }
        return Err(unknown(format!(
            "unknown key `{key}`: no instance `{instance}`"
        )));
    };
    if !objects[index].1.contains_key(field) {
        return Err(unknown(format!(
            "unknown key `{key}`: `{instance}` has no config field `{field}`"
        )));
    }
    Ok((index, field))
}

/// `{"camera": {"fps": 20}}` as `{"camera.fps": 20}`: every leaf a `-o` key.
pub(crate) fn flatten(map: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                for (k, v) in flatten(inner) {
                    out.insert(format!("{key}.{k}"), v);
                }
            }
            other => {
                out.insert(key, other);
            }
        }
    }
    out
}

/// The inverse of [`flatten`].
fn unflatten(flat: serde_json::Map<String, Value>) -> Value {
    fn insert(map: &mut serde_json::Map<String, Value>, parts: &[&str], value: Value) {
        match parts {
            [] => {}
            [last] => {
                map.insert((*last).to_owned(), value);
            }
            [first, rest @ ..] => {
                let entry = map
                    .entry((*first).to_owned())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(serde_json::Map::new());
                }
                if let Value::Object(inner) = entry {
                    insert(inner, rest, value);
                }
            }
        }
    }
    let mut root = serde_json::Map::new();
    for (key, value) in flat {
        let parts: Vec<&str> = key.split('.').collect();
        insert(&mut root, &parts, value);
    }
    Value::Object(root)
}

fn set_effective(effective: &mut Vec<Setting>, s: &Setting) {
    effective.retain(|e| e.key != s.key);
    effective.push(s.clone());
}

/// A `-o` value as JSON, read the way the old value is typed: a string field takes the
/// text as it is, a list takes JSON or comma-separated text (`A,B`), anything else is
/// parsed as YAML/JSON scalar text (`15`, `true`, `0.5`).
fn parse_value(text: &str, old: &Value) -> Value {
    if old.is_string() {
        return Value::String(text.to_owned());
    }
    serde_json::from_str(text).unwrap_or_else(|_| match old {
        // A list of strings as people write one on a command line: `A,B`.
        Value::Array(_) => text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| Value::String(item.to_owned()))
            .collect(),
        _ => Value::String(text.to_owned()),
    })
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CLI with one registered blueprint file, `yaml`.
    fn cli(yaml: &str) -> Cli {
        Cli::new("streamwire", "test").blueprint_file("bp", "a test blueprint", yaml)
    }

    /// The setting of `key` that `config` lists for `bp`, given `env` and `flags`.
    fn listed(cli: &Cli, env: &[(&str, &str)], flags: &[String], key: &str) -> Setting {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let built = cli.resolve("bp", &env, flags).unwrap();
        assert_eq!(built.accepts.get(key), global_key(key).map(|g| &g.accepts));
        built.settings.into_iter().find(|s| s.key == key).unwrap()
    }

    /// A module declaring its settings' defaults and ranges, as an application's does: a
    /// code blueprint of it needs no config type of its own.
    #[derive(streamwire_macros::Module)]
    #[module(crate = streamwire_core)]
    struct Ticker {
        ticks: streamwire_core::Out<streamwire_msgs::Twist>,
        /// Ticks per second.
        #[config(default = 20.0, finite, range = 0.1..=100.0)]
        rate: f64,
        /// Said with each tick.
        #[config(default = "tick".to_owned())]
        label: String,
        /// Shared with the code that built the blueprint: kept when `-o` changes a setting.
        #[state]
        shared: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl streamwire_core::Node for Ticker {
        fn trigger(&self) -> streamwire_core::Trigger {
            streamwire_core::Trigger::rate(self.rate)
        }

        fn step(&mut self, _cx: &mut streamwire_core::Context<'_>) -> streamwire_core::NodeResult {
            Ok(())
        }
    }

    /// A CLI with blueprint `ticks`: one `Ticker` at its declared settings, added by code,
    /// its state holding `shared`.
    fn ticks(shared: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Cli {
        use streamwire_core::Module as _;
        Cli::new("streamwire", "test").blueprint_fn("ticks", "a ticker", move || {
            let mut blueprint = Blueprint::new();
            let mut ticker = Ticker::declared().unwrap();
            ticker.shared = shared.clone();
            blueprint.add("ticker", ticker);
            blueprint
        })
    }

    /// `key`'s effective value in `built`.
    fn value_of(built: &Built, key: &str) -> String {
        let setting = built.settings.iter().find(|s| s.key == key);
        setting.map(|s| s.value.clone()).unwrap_or_default()
    }

    /// A code blueprint without a config type: its keys are its instances' settings, at
    /// the modules' declared defaults, listed by `config` with what they accept; `-o`
    /// changes the module value (its state kept) before anything runs.
    #[test]
    fn a_code_blueprint_takes_its_settings_from_its_modules() {
        let shared = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(7));
        let cli = ticks(shared.clone());
        let built = cli.resolve("ticks", &[], &[]).unwrap();
        assert_eq!(value_of(&built, "ticker.rate"), "20.0");
        let config =
            crate::commands::config::render_settings("ticks", &built.settings, &built.accepts);
        insta::assert_snapshot!("code_blueprint_of_modules_config", config);

        let flags = ["ticker.rate=50".to_owned(), "ticker.label=tock".to_owned()];
        let mut built = cli.resolve("ticks", &[], &flags).unwrap();
        assert_eq!(value_of(&built, "ticker.rate"), "50");
        let (_, module) = built.blueprint.instance_values().next().unwrap();
        let value = serde_json::to_value(module.as_config().unwrap()).unwrap();
        assert_eq!(
            (&value["rate"], &value["label"]),
            (&50.0.into(), &"tock".into())
        );
        let runnable = std::mem::take(&mut built.blueprint)
            .into_runnable()
            .unwrap();
        let (_, mut modules) = runnable.into_parts();
        let ticker = modules[0].as_any_mut().downcast_mut::<Ticker>().unwrap();
        assert!(
            std::sync::Arc::ptr_eq(&ticker.shared, &shared),
            "the state was replaced"
        );
    }

    /// A setting out of its declared range, of the wrong type, or named the old nested
    /// way is refused before anything runs, each naming the key.
    #[test]
    fn a_code_blueprints_module_settings_are_checked_naming_the_key() {
        let cli = ticks(std::sync::Arc::default());
        let refused = |flag: &str| match cli.resolve("ticks", &[], &[flag.to_owned()]) {
            Ok(_) => panic!("`{flag}` was taken"),
            Err(error) => format!("{error:#}"),
        };
        insta::assert_snapshot!(
            "code_blueprint_of_modules_refusals",
            [
                "ticker.rate=1000",
                "ticker.rate=fast",
                "ticker.config.rate=5",
                "ticker.speed=5",
            ]
            .map(|flag| format!("-o {flag}: {}", refused(flag)))
            .join("\n")
        );
    }

    /// Every row of the table is read by every reader (a blueprint file's top level, the
    /// environment, `-o`) and shown by `config` (its table and its help): a key known to
    /// one of them and not another fails here.
    #[test]
    fn every_global_key_is_known_to_every_reader() {
        let empty = cli("instances: {}\n");
        let help = config::help_text();
        for row in global_keys() {
            let key = row.key;
            let default = listed(&empty, &[], &[], key);
            assert_eq!(
                (default.value.as_str(), default.source),
                (row.default, Source::Default)
            );
            let file = cli(&format!("{key}: {}\ninstances: {{}}\n", row.example));
            let from_file = listed(&file, &[], &[], key);
            let at_line_1 = Source::File {
                path: "<blueprint bp>".to_owned(),
                line: Some(1),
            };
            assert_eq!(
                (from_file.value.as_str(), from_file.source),
                (row.example, at_line_1)
            );
            let from_env = listed(&empty, &[(row.env, row.example)], &[], key);
            let env = Source::Env(row.env.to_owned());
            assert_eq!(
                (from_env.value.as_str(), from_env.source),
                (row.example, env)
            );
            let flag = [format!("{key}={}", row.example)];
            let from_flag = listed(&empty, &[], &flag, key);
            assert_eq!(
                (from_flag.value.as_str(), from_flag.source),
                (row.example, Source::Flag)
            );
            assert!(help.contains(key) && help.contains(row.env), "{help}");
            assert!(config::valid_keys([]).contains(&key.to_owned()), "{key}");
            assert!(config::env_vars().contains(&row.env), "{key}");
        }
    }
}

//! Blueprint files: a blueprint as YAML or JSON, loaded into a [`Blueprint`] and saved back.
//!
//! ```yaml
//! compression: auto          # auto | on | off
//! auto_table: { same_host: compress }  # what auto does per locality (default raw
//!                            # in-process and same-host, compress cross-host)
//! jpeg_quality: 75           # blueprint-wide codec defaults, beaten per stream
//! max_bitrate: 6.4Mbit/s     # a bit-rate budget for every JPEG stream (min_quality: its floor)
//! supervision: restart:3     # a worker that dies: stop (default) | restart | restart:N
//! instances:                 # name -> module (its tag under `type`, then its #[config])
//!   camera: { type: Camera, fps: 15 }
//!   detector: { type: Detector, threshold: 0.5 }
//! placement:                 # instance -> `process` or `host/process`
//!   detector: perception
//! streams:                   # per-stream settings, as `StreamSettings` text or a table
//!   color_image: "jpeg_quality=60"
//! connect:                   # explicit connections, `instance.port` (field names)
//!   - { from: camera.color_image, to: detector.frames }
//! remap:                     # instance -> { stream: new_stream }
//!   detector: { color_image: front/color_image }
//! ```
//!
//! Modules are found by their tag (`#[derive(Module)]` registers every module type linked
//! into the binary); an unknown tag is an error listing the registered ones.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use streamwire_core::ModuleConfig;

use crate::blueprint::Blueprint;

mod load;
use crate::keys::GlobalValues;
use crate::settings::{AutoTable, Placement, StreamSettings, Supervision};
pub use load::FileProblem;

/// The contents of a blueprint file.
// Unknown keys are refused by `globals`, which reads every key the others leave (serde
// does not combine `deny_unknown_fields` with `flatten`).
#[derive(Serialize, Deserialize, Default)]
pub struct BlueprintFile {
    /// Connect inputs to outputs by stream name and message type (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub autoconnect: bool,
    /// The global keys it sets (`compression`, `jpeg_quality`, ...: the rows of
    /// [`global_keys`](crate::keys::global_keys)), at the file's top level.
    #[serde(flatten)]
    pub globals: GlobalValues,
    /// What `auto` does per locality: a table (`{ same_host: compress }`, keys left out
    /// keep their defaults) or text (`same-host compress`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_table: Option<AutoTable>,
    /// What a distributed run does when a worker dies (`stop|restart|restart:N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervision: Option<Supervision>,
    /// The module instances, in file order.
    pub instances: Instances,
    /// Where instances run (default `localhost/main`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub placement: BTreeMap<String, Placement>,
    /// Per-stream settings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub streams: BTreeMap<String, StreamSettings>,
    /// Explicit connections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect: Vec<NamedConnection>,
    /// Stream remaps per instance: `{ old_stream: new_stream }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub remap: BTreeMap<String, BTreeMap<String, String>>,
}

fn yes() -> bool {
    true
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_true(b: &bool) -> bool {
    *b
}

/// An explicit connection, `instance.port` to `instance.port`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedConnection {
    /// The output.
    pub from: String,
    /// The input.
    pub to: String,
}

/// The instances of a blueprint file: name -> module, in file order.
#[derive(Default)]
pub struct Instances(pub Vec<(String, Box<dyn ModuleConfig>)>);

impl Instances {
    /// The module of instance `name`.
    pub fn get(&self, name: &str) -> Option<&dyn ModuleConfig> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, m)| &**m)
    }

    /// The instance names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }
}

impl fmt::Debug for Instances {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(n, m)| (n, m.tag())))
            .finish()
    }
}

impl fmt::Debug for BlueprintFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The file's own text is the readable form.
        match self.to_yaml() {
            Ok(yaml) => f.write_str(&yaml),
            Err(_) => f
                .debug_struct("BlueprintFile")
                .field("instances", &self.instances)
                .finish_non_exhaustive(),
        }
    }
}

impl Serialize for Instances {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, module) in &self.0 {
            map.serialize_entry(name, module)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Instances {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Instances;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of instance name to `{ type: <module tag>, <config>... }`")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Instances, A::Error> {
                let mut out: Vec<(String, Box<dyn ModuleConfig>)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!(
                            "instance `{name}` is defined twice"
                        )));
                    }
                    // Not wrapped: the YAML error keeps its exact location, and `parse`
                    // names the entry from it.
                    let module = map.next_value::<Box<dyn ModuleConfig>>()?;
                    out.push((name, module));
                }
                Ok(Instances(out))
            }
        }
        deserializer.deserialize_map(V)
    }
}

/// Where each key of a blueprint file is written, by key path (`["instances", "camera",
/// "fps"]`), as YAML's parser saw it (block and flow style alike; JSON is read as the YAML
/// it also is). Provenance of a file's values (`file:line`) and the instance named in a
/// parse error come from here.
///
/// ```
/// use streamwire_graph::KeyLines;
///
/// let text = "jpeg_quality: 60\ninstances:\n  camera: { type: Camera, fps: 15 }\n";
/// let lines = KeyLines::of(text).unwrap();
/// assert_eq!(lines.line(&["jpeg_quality"]), Some(1));
/// assert_eq!(lines.line(&["instances", "camera", "fps"]), Some(3));
/// assert_eq!(lines.instance_at(3, 30), Some("camera"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyLines {
    /// Key path, line and column (1-based), in document order.
    keys: Vec<(Vec<String>, u64, u64)>,
}

impl KeyLines {
    /// The keys of `text`; `None` when it is not well-formed YAML (or JSON).
    pub fn of(text: &str) -> Option<KeyLines> {
        let tree: KeyTree = serde_saphyr::from_str(text).ok()?;
        let mut lines = KeyLines::default();
        tree.collect(&mut Vec::new(), &mut lines.keys);
        Some(lines)
    }

    /// The line of the key at `path`, 1-based.
    pub fn line(&self, path: &[&str]) -> Option<usize> {
        self.keys
            .iter()
            .find(|(p, _, _)| p.iter().map(String::as_str).eq(path.iter().copied()))
            .and_then(|(_, line, _)| usize::try_from(*line).ok())
    }

    /// The instance (an entry of `instances:`) whose text holds `line`, `column` (1-based).
    pub fn instance_at(&self, line: u64, column: u64) -> Option<&str> {
        let at = (line, column);
        let instances = self
            .keys
            .iter()
            .position(|(p, _, _)| p.len() == 1 && p[0] == "instances")?;
        let mut found = None;
        for (path, l, c) in &self.keys[instances + 1..] {
            if (*l, *c) > at {
                break;
            }
            if path.len() == 1 {
                // The next top-level key comes before the point: it is not in an entry.
                return None;
            }
            if path.len() == 2 {
                found = Some(path[1].as_str());
            }
        }
        found
    }
}

/// A YAML document reduced to its keys and their places.
enum KeyTree {
    Map(Vec<(serde_saphyr::Spanned<String>, KeyTree)>),
    Seq(Vec<KeyTree>),
    Leaf,
}

impl KeyTree {
    fn collect(&self, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, u64, u64)>) {
        match self {
            KeyTree::Map(entries) => {
                for (key, value) in entries {
                    path.push(key.value.clone());
                    out.push((path.clone(), key.referenced.line(), key.referenced.column()));
                    value.collect(path, out);
                    path.pop();
                }
            }
            KeyTree::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(format!("[{i}]"));
                    item.collect(path, out);
                    path.pop();
                }
            }
            KeyTree::Leaf => {}
        }
    }
}

impl<'de> Deserialize<'de> for KeyTree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyTree;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyTree, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<serde_saphyr::Spanned<String>>()? {
                    entries.push((key, map.next_value::<KeyTree>()?));
                }
                Ok(KeyTree::Map(entries))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<KeyTree, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<KeyTree>()? {
                    items.push(item);
                }
                Ok(KeyTree::Seq(items))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<KeyTree, D::Error> {
                KeyTree::deserialize(d)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<KeyTree, D::Error> {
                KeyTree::deserialize(d)
            }
            fn visit_bool<E>(self, _: bool) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_i128<E>(self, _: i128) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_u128<E>(self, _: u128) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_bytes<E>(self, _: &[u8]) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_unit<E>(self) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
            fn visit_none<E>(self) -> Result<KeyTree, E> {
                Ok(KeyTree::Leaf)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Why a blueprint file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a regular file, or is over the size limit (refused unread), or
    /// grew past it while read.
    #[error(transparent)]
    Input(#[from] streamwire_core::input::InputError),
    /// The text is not a valid blueprint: every mistake found (syntax, unknown module
    /// type or setting, bad value, a name that is not an instance), each with its place.
    #[error("{}", Problems(path, problems))]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Its mistakes, in the order of the text.
        problems: Vec<FileProblem>,
    },
    /// The file could not be written as text.
    #[error("cannot save the blueprint: {0}")]
    Save(String),
}

/// The problems of one file as text: each with `file:line:column` and a caret.
struct Problems<'a>(&'a Path, &'a [FileProblem]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.0.display().to_string();
        if self.1.len() > 1 {
            writeln!(f, "{} problems in {path}:", self.1.len())?;
        }
        for (i, problem) in self.1.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            problem.render(f, &path)?;
        }
        Ok(())
    }
}

/// The format of a blueprint file, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// `.yaml`, `.yml`.
    Yaml,
    /// `.json`.
    Json,
}

impl FileFormat {
    /// By extension: `.json` is JSON, anything else YAML.
    pub fn of(path: &Path) -> FileFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => FileFormat::Json,
            _ => FileFormat::Yaml,
        }
    }
}

impl BlueprintFile {
    /// The largest blueprint file read by default: 4 MiB, some thousand times the largest
    /// blueprint shipped here, far below what would strain memory.
    pub const DEFAULT_MAX_BYTES: u64 = 4 << 20;

    /// Reads and parses `path` (YAML, or JSON for `.json`): a regular file of at most
    /// [`DEFAULT_MAX_BYTES`](Self::DEFAULT_MAX_BYTES).
    pub fn load(path: &Path) -> Result<BlueprintFile, FileError> {
        let text = Self::read(
            path,
            Self::DEFAULT_MAX_BYTES,
            "BlueprintFile::DEFAULT_MAX_BYTES",
        )?;
        BlueprintFile::parse(&text, FileFormat::of(path), path)
    }

    /// The text of blueprint file `path`, when it is a regular file of at most `limit`
    /// bytes (checked before it is opened; `setting` names the limit in errors).
    pub fn read(path: &Path, limit: u64, setting: &'static str) -> Result<String, FileError> {
        Ok(streamwire_core::input::read_bounded_text(
            path, limit, setting,
        )?)
    }

    /// Parses `text`; `path` names it in errors, which list every mistake of the file.
    /// JSON is read as the YAML it also is (`format` is the same for both).
    pub fn parse(text: &str, _format: FileFormat, path: &Path) -> Result<BlueprintFile, FileError> {
        load::load(text).map_err(|problems| FileError::Invalid {
            path: path.to_owned(),
            problems,
        })
    }

    /// The file as YAML (module `type:` first, then its config fields).
    pub fn to_yaml(&self) -> Result<String, FileError> {
        serde_saphyr::to_string(self).map_err(|e| FileError::Save(e.to_string()))
    }

    /// The file as pretty JSON.
    pub fn to_json(&self) -> Result<String, FileError> {
        serde_json::to_string_pretty(self).map_err(|e| FileError::Save(e.to_string()))
    }

    /// A copy, through JSON (module values are not `Clone`).
    pub fn try_clone(&self) -> Result<BlueprintFile, FileError> {
        let json = serde_json::to_string(self).map_err(|e| FileError::Save(e.to_string()))?;
        serde_json::from_str(&json).map_err(|e| FileError::Save(e.to_string()))
    }

    /// Builds the [`Blueprint`]: instances (a name `ns/name` is added in namespace
    /// `ns`), placement, remaps, connections, settings. Mistakes in names are reported
    /// by `build`, with everything else.
    pub fn into_blueprint(self) -> Blueprint {
        let mut blueprint = Blueprint::new();
        for (name, module) in self.instances.0 {
            let (namespace, short) = name.rsplit_once('/').unwrap_or(("", name.as_str()));
            let value: Box<dyn streamwire_core::ModuleValue> = module;
            blueprint.add_value(namespace, short, value);
        }
        if self.autoconnect {
            blueprint.autoconnect();
        }
        self.globals.apply_to(&mut blueprint);
        if let Some(table) = self.auto_table {
            blueprint.auto_table(table);
        }
        if let Some(s) = self.supervision {
            blueprint.supervision(s);
        }
        for (instance, placement) in self.placement {
            blueprint.place_named(&instance, placement);
        }
        for (instance, remaps) in self.remap {
            for (from, to) in remaps {
                blueprint.remap_stream(&instance, &from, &to);
            }
        }
        for c in &self.connect {
            blueprint.connect_named(&c.from, &c.to);
        }
        for (stream, settings) in self.streams {
            blueprint.stream(&stream, settings);
        }
        blueprint
    }
}

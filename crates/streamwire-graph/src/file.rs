//! Blueprint files: a blueprint as YAML or JSON, loaded into a [`Blueprint`] and saved back.
//!
//! ```yaml
//! compression: auto          # auto | on | off
//! jpeg_quality: 75           # blueprint-wide codec defaults, beaten per stream
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
use crate::settings::{Compression, Placement, Report, StreamSettings, Supervision};

/// The contents of a blueprint file.
#[derive(Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct BlueprintFile {
    /// Connect inputs to outputs by stream name and message type (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub autoconnect: bool,
    /// Global compression (default `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<Compression>,
    /// Blueprint-wide JPEG quality (1-100) for every JPEG stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jpeg_quality: Option<u8>,
    /// Blueprint-wide maximum width of encoded images (downscaled above it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<u32>,
    /// What to do about lossy pixels (`ignore|warn|error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lossy_pixels: Option<Report>,
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

/// The instance whose entry (under `instances:`) holds line `line` (1-based) of a YAML
/// text: entries are the keys indented one level below `instances:`.
fn instance_at_line(text: &str, line: usize) -> Option<String> {
    let mut in_instances = false;
    let mut current = None;
    for (number, raw) in text.lines().enumerate() {
        let indent = raw.len() - raw.trim_start().len();
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent == 0 {
            in_instances = trimmed.starts_with("instances:");
            current = None;
        } else if in_instances
            && indent <= 2
            && let Some((key, _)) = trimmed.split_once(':')
        {
            current = Some(key.trim().to_owned());
        }
        if number + 1 == line {
            return if in_instances { current } else { None };
        }
    }
    None
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
    /// The text is not a valid blueprint (syntax, unknown tag, bad field); the message
    /// says where (line and column) and what is valid.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// The file could not be written as text.
    #[error("cannot save the blueprint: {0}")]
    Save(String),
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
    /// Reads and parses `path` (YAML, or JSON for `.json`).
    pub fn load(path: &Path) -> Result<BlueprintFile, FileError> {
        let text = std::fs::read_to_string(path).map_err(|source| FileError::Io {
            path: path.to_owned(),
            source,
        })?;
        BlueprintFile::parse(&text, FileFormat::of(path), path)
    }

    /// Parses `text`; `path` names it in errors.
    pub fn parse(text: &str, format: FileFormat, path: &Path) -> Result<BlueprintFile, FileError> {
        let result = match format {
            FileFormat::Yaml => serde_saphyr::from_str(text).map_err(|e| {
                let entry = e
                    .location()
                    .and_then(|l| usize::try_from(l.line()).ok())
                    .and_then(|line| instance_at_line(text, line));
                match entry {
                    Some(name) => format!("in instance `{name}`: {e}"),
                    None => e.to_string(),
                }
            }),
            FileFormat::Json => serde_json::from_str(text).map_err(|e| e.to_string()),
        };
        result.map_err(|message| FileError::Parse {
            path: path.to_owned(),
            message,
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
        if let Some(c) = self.compression {
            blueprint.compression(c);
        }
        if let Some(q) = self.jpeg_quality {
            blueprint.codec_default("jpeg_quality", q);
        }
        if let Some(w) = self.max_width {
            blueprint.codec_default("max_width", w);
        }
        if let Some(s) = self.supervision {
            blueprint.supervision(s);
        }
        if let Some(r) = self.lossy_pixels {
            blueprint.lossy_pixels(r);
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

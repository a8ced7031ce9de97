//! The demo blueprint: a camera (the replay of a folder of frames, or the simulated
//! world's camera), the world's depth, lidar and odometry, a detector, a mapper, a byte
//! consumer and two busy sinks, placed over several processes.
//!
//! # CPU budget
//!
//! At its defaults (the simulated camera at 1280x720 and 20 fps, depth and lidar at 10 Hz,
//! odometry at 50 Hz, two busy sinks at 10 CPU-ms a frame, the robot layout's four worker
//! processes) the demo needs about **one core**, so that it keeps its rates on a two-core
//! machine with room for other work. Measured (`streamwire run demo --duration 60`,
//! release, a 2-core machine whose load average was 6 from two other sessions' builds;
//! CPU from the report's instance table, the total from `time`): 62.0 s of CPU in 60.4 s,
//! 1.03 cores; per second: the camera 195 ms (9.8 ms a frame), the two busy sinks 200 ms
//! each, the mapper 49, the recorder 37, the depth sensor 24, the detector 11, the lidar
//! 6; the remaining 300 ms are the JPEG encode (one per frame, about 6 ms) and its two
//! decodes (about 1.8 ms each), zstd for depth, and the transport. Each CPU-ms of
//! `busy.work_ms` adds 40 ms a second (two sinks at 20 fps): at the former default of 20
//! the demo needed 1.34 cores and, on that loaded machine, the busy sinks received only
//! 91% of the frames (99.8% at 10).
//!
//! ```
//! use streamwire_modules::demo::{DemoConfig, demo_blueprint};
//! let mut config = DemoConfig::default();
//! config.set("camera.fps", "10")?;
//! config.set("busy.work_ms", "5")?;
//! let plan = demo_blueprint(&config)?.build()?;
//! assert!(plan.to_string().contains("encode color_image"));
//! assert!(config.set("camera.colour", "red").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::PathBuf;

use crate::prelude::*;
use serde::{Deserialize, Serialize};

use crate::detector::Detector;
use crate::mapper::Mapper;
use crate::replay::{ReplayError, ReplaySource};
use crate::sinks::{BusySink, ByteConsumer};
use crate::world::{SimCamera, SimDepth, SimLidar, SimOdometry};

/// Where the demo's instances run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Everything in one process: zero-copy, no codec but the byte consumer's encode.
    OneProcess,
    /// Sensors and perception on the robot (two processes), the second busy sink and the
    /// byte consumer on a base station.
    #[default]
    Robot,
    /// The robot layout with the camera in a process of its own (`robot/camera`) and the
    /// mapper in another (`robot/mapping`): five workers with the relay, the camera's
    /// frames encoded once in the camera's process and decoded once in each process that
    /// wants pixels.
    Split,
}

/// The simulated camera's settings (`camera.*`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CameraConfig {
    /// Frames per second.
    pub fps: f64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Default for CameraConfig {
    fn default() -> Self {
        CameraConfig {
            fps: 20.0,
            width: 1280,
            height: 720,
        }
    }
}

/// The replay's settings (`replay.*`); with a `dir`, the replay replaces the simulated
/// camera.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    /// The folder of frames (none: the simulated camera).
    pub dir: Option<PathBuf>,
    /// Frames per second if the folder has no timestamps file.
    pub fps: Option<f64>,
    /// Start again after the last frame.
    pub looping: bool,
    /// Playback speed.
    pub rate: f64,
    /// Publish the files' JPEG bytes as they are.
    pub pass_through: bool,
    /// Play at most this many frames.
    pub limit: Option<u64>,
    /// An MCAP file's topics to play on the replay's outputs, `topic=output` comma
    /// separated (`/camera/color/image_raw/compressed=color_image`); the rest map by name
    /// and type. MCAP files only.
    pub map: String,
    /// Skip the MCAP file's first this-many seconds. MCAP files only.
    pub start_s: f64,
    /// Play this many seconds of the MCAP file (none: to its end). MCAP files only.
    pub duration_s: Option<f64>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            dir: None,
            fps: None,
            looping: true,
            rate: 1.0,
            pass_through: false,
            limit: None,
            map: String::new(),
            start_s: 0.0,
            duration_s: None,
        }
    }
}

/// Whether `path` names an MCAP file (`.mcap`), which a replay plays with a
/// [`ReplayFormat`] instead of a folder's frames.
pub fn is_mcap(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("mcap"))
}

impl ReplayConfig {
    /// Refuses the MCAP-only keys for a folder of frames.
    pub(crate) fn check_folder(&self) -> Result<(), DemoError> {
        let bad = |key: &str, value: String| DemoError::BadValue {
            key: key.to_owned(),
            value,
            reason: "applies to MCAP files only (`replay.dir` is a folder)".to_owned(),
        };
        if !self.map.is_empty() {
            return Err(bad("replay.map", self.map.clone()));
        }
        if self.start_s != 0.0 {
            return Err(bad("replay.start_s", self.start_s.to_string()));
        }
        if let Some(duration) = self.duration_s {
            return Err(bad("replay.duration_s", duration.to_string()));
        }
        Ok(())
    }

    /// The replay source these settings describe, playing `dir` (not yet scanned).
    pub fn source(&self, dir: &std::path::Path) -> ReplaySource {
        ReplaySource {
            dir: dir.to_owned(),
            fps: self.fps,
            looping: self.looping,
            rate: self.rate,
            pass_through: self.pass_through,
            limit: self.limit,
            ..ReplaySource::default()
        }
    }
}

/// A sensor's rate (`depth.*`, `lidar.*`, `odometry.*`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateConfig {
    /// Messages per second.
    pub hz: f64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig { hz: 10.0 }
    }
}

/// The busy sinks' work (`busy.*`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BusyConfig {
    /// CPU milliseconds of filtering per frame, each sink.
    pub work_ms: f64,
}

impl Default for BusyConfig {
    /// 10 CPU-ms a frame each: 0.4 of a core for the two at 20 fps, within the demo's
    /// budget of one core (see the [module docs](self)).
    fn default() -> Self {
        BusyConfig { work_ms: 10.0 }
    }
}

/// Where the sinks write their recordings (`record.*`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecordConfig {
    /// A folder for `<instance>.jsonl` files (none: no recording).
    pub dir: Option<PathBuf>,
}

impl RecordConfig {
    /// Where instance `name` records (none without a folder).
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|dir| dir.join(format!("{name}.jsonl")))
    }
}

/// Everything the demo lets a user set, by dotted key (`camera.fps`, `replay.dir`,
/// `replay.fps`, `busy.work_ms`, ...; [`DemoConfig::keys`] lists them). Deserializes from
/// a blueprint file's table; [`DemoConfig::set`] takes `-o key=value` text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DemoConfig {
    /// Placement: `robot` (default) or `one_process`.
    pub layout: Layout,
    /// Global compression: `auto`, `on`, `off`.
    pub compression: Compression,
    /// What `auto` does per locality (`auto_table.same_host`, ...: `raw` or `compress`).
    /// The demo compresses same-host links too, where the framework's default keeps them
    /// raw (cheaper between two processes of one host; RFC.md, open question 1): the demo
    /// is there to show the wire at work, one encode in the camera's process and one
    /// decode in each process that wants pixels. `-o auto_table.same_host=raw` runs it
    /// with the framework's default.
    pub auto_table: AutoTable,
    /// What to do about inputs that get lossy pixels: `ignore`, `warn`, `error`.
    pub lossy_pixels: Report,
    /// The simulated world's seed.
    pub seed: u64,
    /// The simulated camera.
    pub camera: CameraConfig,
    /// The replay (replaces the camera when `replay.dir` is set).
    pub replay: ReplayConfig,
    /// The depth sensor's rate.
    pub depth: RateConfig,
    /// The lidar's rate.
    pub lidar: RateConfig,
    /// The odometry's rate.
    pub odometry: RateConfig,
    /// The busy sinks.
    pub busy: BusyConfig,
    /// Recordings.
    pub record: RecordConfig,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            layout: Layout::Robot,
            compression: Compression::Auto,
            auto_table: AutoTable::default().with(Locality::SameHost, WireFormat::Compressed),
            lossy_pixels: Report::Warn,
            seed: 1,
            camera: CameraConfig::default(),
            replay: ReplayConfig::default(),
            depth: RateConfig { hz: 10.0 },
            lidar: RateConfig { hz: 10.0 },
            odometry: RateConfig { hz: 50.0 },
            busy: BusyConfig::default(),
            record: RecordConfig::default(),
        }
    }
}

/// Why a demo setting was refused or the blueprint could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError {
    /// A key the demo does not have.
    #[error("unknown demo key `{key}`; valid keys: {}", valid.join(", "))]
    UnknownKey {
        /// The key given.
        key: String,
        /// Every valid key.
        valid: Vec<String>,
    },
    /// A value the key cannot take.
    #[error("demo key `{key}` cannot be `{value}`: {reason}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Why.
        reason: String,
    },
    /// The replay folder cannot be played.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The replay's recording file cannot be played.
    #[error("the {format} replay cannot start")]
    Format {
        /// The recording's format (`MCAP`).
        format: &'static str,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `replay.dir` is an MCAP file, and the blueprint was given no format that reads it.
    #[error(
        "`replay.dir` {0} is an MCAP file: this binary reads none (its blueprints were \
         given no MCAP replay format: `ReplayFormat`)"
    )]
    NoMcap(PathBuf),
}

/// The demo's sensors an MCAP replay can stand in for: the camera and, where the file has
/// them, the depth camera, the lidar and the odometry.
const SENSOR_OUTPUTS: [&str; 4] = ["color_image", "depth", "cloud", "odometry"];

/// A recording format `replay.dir` may name besides a folder of frames (MCAP, in the
/// stock binary). This crate reads no recording format itself: a binary that links one
/// hands it to [`demo_blueprint_with`] and
/// [`bench_blueprint_with`](crate::replay_bench::bench_blueprint_with).
pub trait ReplayFormat {
    /// Whether `path` is a file of this format.
    fn reads(&self, path: &std::path::Path) -> bool;

    /// The recorded rate of the topic a replay of `path` with `replay`'s settings plays on
    /// `color_image`, frames per second.
    fn camera_hz(&self, replay: &ReplayConfig, path: &std::path::Path) -> Result<f64, DemoError>;

    /// Adds the replay of `path` with `replay`'s settings as instance `name`, playing
    /// those of `outputs` its topics map to (`color_image` at least), the others left
    /// unplayed; returns the outputs played. The file is read here, so a file that cannot
    /// play fails before the run.
    fn add(
        &self,
        bp: &mut Blueprint,
        replay: &ReplayConfig,
        name: &str,
        path: &std::path::Path,
        outputs: &[&'static str],
    ) -> Result<Vec<&'static str>, DemoError>;
}

/// The format of `formats` that reads `path`; `None` for a folder (or anything else a
/// folder replay is asked to play), an error for an MCAP file no format reads.
pub(crate) fn replay_format<'a>(
    formats: &[&'a dyn ReplayFormat],
    path: &std::path::Path,
) -> Result<Option<&'a dyn ReplayFormat>, DemoError> {
    match formats.iter().find(|format| format.reads(path)) {
        Some(format) => Ok(Some(*format)),
        None if is_mcap(path) => Err(DemoError::NoMcap(path.to_owned())),
        None => Ok(None),
    }
}

fn leaves(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(&key, v, out);
            }
        }
        _ => out.push(prefix.to_owned()),
    }
}

impl DemoConfig {
    /// Every settable key, sorted.
    pub fn keys() -> Vec<String> {
        let mut keys = Vec::new();
        if let Ok(value) = serde_json::to_value(DemoConfig::default()) {
            leaves("", &value, &mut keys);
        }
        keys.sort();
        keys
    }

    /// Sets `key` (dotted, e.g. `camera.fps`) from text: a number, `true`/`false`,
    /// `none` (unset an optional key), or a string.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), DemoError> {
        let valid = DemoConfig::keys();
        if !valid.iter().any(|k| k == key) {
            return Err(DemoError::UnknownKey {
                key: key.to_owned(),
                valid,
            });
        }
        let bad = |reason: String| DemoError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            reason,
        };
        let parsed = match value.trim() {
            "none" | "null" => serde_json::Value::Null,
            text => serde_json::from_str(text)
                .ok()
                .filter(|v: &serde_json::Value| !v.is_object() && !v.is_array())
                .unwrap_or_else(|| serde_json::Value::String(text.to_owned())),
        };
        let mut last_error = String::new();
        for candidate in [parsed, serde_json::Value::String(value.trim().to_owned())] {
            let mut tree = serde_json::to_value(&*self).map_err(|e| bad(e.to_string()))?;
            let mut slot = &mut tree;
            for part in key.split('.') {
                slot = slot
                    .get_mut(part)
                    .ok_or_else(|| bad("no such key".to_owned()))?;
            }
            *slot = candidate;
            match serde_json::from_value::<DemoConfig>(tree) {
                Ok(config) => {
                    *self = config;
                    return Ok(());
                }
                Err(e) => last_error = e.to_string(),
            }
        }
        Err(bad(last_error))
    }
}

/// The demo blueprint for `config`. With `replay.dir` set, the folder is checked (names
/// and timestamps) here, so a folder that cannot play fails before the run. A recording
/// file needs [`demo_blueprint_with`] and its format.
pub fn demo_blueprint(config: &DemoConfig) -> Result<Blueprint, DemoError> {
    demo_blueprint_with(config, &[])
}

/// The demo blueprint for `config`, whose `replay.dir` may also name a file that one of
/// `formats` reads (the stock binary's: MCAP).
pub fn demo_blueprint_with(
    config: &DemoConfig,
    formats: &[&dyn ReplayFormat],
) -> Result<Blueprint, DemoError> {
    let mut bp = Blueprint::new();
    let record = |name: &str| config.record.path(name);
    let camera_name = "camera";
    let camera_placement = Placement::process("sensors").on_host("robot");
    let camera_of = |layout: Layout| match layout {
        Layout::Split => Placement::process("camera").on_host("robot"),
        _ => camera_placement.clone(),
    };
    // The sensors an MCAP file stands in for (none for the simulated world).
    let mut from_file = Vec::new();
    let format = match &config.replay.dir {
        Some(path) => replay_format(formats, path)?,
        None => None,
    };
    match (&config.replay.dir, format) {
        (Some(path), Some(format)) => {
            from_file = format.add(&mut bp, &config.replay, camera_name, path, &SENSOR_OUTPUTS)?;
            if config.layout != Layout::OneProcess {
                bp.place_named(camera_name, camera_of(config.layout));
            }
        }
        (Some(dir), None) => {
            config.replay.check_folder()?;
            let replay = config.replay.source(dir);
            replay.scan()?;
            let camera = bp.add(camera_name, replay);
            if config.layout != Layout::OneProcess {
                bp.place(&camera, camera_of(config.layout));
            }
        }
        (None, _) => {
            let camera = bp.add(
                camera_name,
                SimCamera {
                    width: config.camera.width,
                    height: config.camera.height,
                    fps: config.camera.fps,
                    seed: config.seed,
                    ..SimCamera::default()
                },
            );
            if config.layout != Layout::OneProcess {
                bp.place(&camera, camera_of(config.layout));
            }
        }
    }
    // The simulated sensors the file does not stand in for.
    let mut sensors = Vec::new();
    if !from_file.contains(&"depth") {
        let depth = SimDepth {
            fps: config.depth.hz,
            seed: config.seed,
            ..SimDepth::default()
        };
        bp.add("depth", depth);
        sensors.push("depth");
    }
    if !from_file.contains(&"cloud") {
        let lidar = SimLidar {
            hz: config.lidar.hz,
            seed: config.seed,
            ..SimLidar::default()
        };
        bp.add("lidar", lidar);
        sensors.push("lidar");
    }
    if !from_file.contains(&"odometry") {
        let odometry = SimOdometry {
            hz: config.odometry.hz,
            seed: config.seed,
            ..SimOdometry::default()
        };
        bp.add("odometry", odometry);
        sensors.push("odometry");
    }
    let detector = bp.add("detector", Detector::default());
    let mapper = bp.add("mapper", Mapper::default());
    let busy_robot = bp.add(
        "busy_robot",
        BusySink {
            work_ms: config.busy.work_ms,
            path: record("busy_robot"),
            ..BusySink::default()
        },
    );
    let busy_base = bp.add(
        "busy_base",
        BusySink {
            work_ms: config.busy.work_ms,
            path: record("busy_base"),
            ..BusySink::default()
        },
    );
    let recorder = bp.add(
        "recorder",
        ByteConsumer {
            path: record("recorder"),
            ..ByteConsumer::default()
        },
    );
    if config.layout != Layout::OneProcess {
        let perception = Placement::process("perception").on_host("robot");
        let mapping = match config.layout {
            Layout::Split => Placement::process("mapping").on_host("robot"),
            _ => perception.clone(),
        };
        let base = Placement::process("base").on_host("base_station");
        for sensor in sensors {
            bp.place_named(sensor, camera_placement.clone());
        }
        bp.place(&detector, perception.clone())
            .place(&mapper, mapping)
            .place(&busy_robot, perception)
            .place(&busy_base, base.clone())
            .place(&recorder, base);
    }
    bp.compression(config.compression)
        .auto_table(config.auto_table)
        .lossy_pixels(config.lossy_pixels)
        .autoconnect();
    Ok(bp)
}

//! The replay benchmark's blueprints: `basic`, `full` and `heavy`, each in mode `raw` or
//! `codec`, where the only difference between the modes is the compression of the colour
//! stream (every other stream stays as the framework's defaults leave it: the control).
//!
//! - **basic**: the camera and one busy sink, 2 workers (`camera`, `sink`).
//! - **full**: the camera, depth, lidar and odometry in `sensors`; the detector in
//!   `perception`, the mapper in `mapping`, an operator's viewer in `ui` and a recorder of
//!   pixels in `logger`: 4 processing modules over 5 workers, 3 of which want pixels.
//! - **heavy**: full plus 4 busy sinks, placed round-robin over `perception`, `ui`,
//!   `logger` and a process of their own (`sinks`), so a frame is encoded once and
//!   decoded once in each of 4 processes.
//!
//! Every process is on host `robot`, unless `hosts` is `split`: then the operator's side
//! (the detector, the viewer, the logger and the busy sinks placed with them; in `basic`
//! the sink) is on host `laptop`, across a link from the robot, and the mapper, which
//! takes depth, cloud and odometry, stays on the robot with its sensors, so the colour
//! stream is the only one that crosses ([`HostSplit`]). Every colour consumer but the
//! detector records its arrivals (`record.dir`). The camera is a [`ReplaySource`](crate::replay::ReplaySource)
//! of `replay.dir`, or the simulated camera without one.
//!
//! ```
//! use streamwire_modules::replay_bench::{BenchBlueprint, ImageMode, ReplayBenchConfig, bench_blueprint};
//! let mut config = ReplayBenchConfig::default();
//! config.mode = ImageMode::Codec;
//! let plan = bench_blueprint(BenchBlueprint::Heavy, &config)?.build()?;
//! // One encode, in the camera's process; one decode in each of 4 processes.
//! assert_eq!(plan.codec_nodes().count(), 5);
//! config.mode = ImageMode::Raw;
//! let plan = bench_blueprint(BenchBlueprint::Heavy, &config)?.build()?;
//! assert_eq!(plan.codec_nodes().count(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::prelude::*;
use serde::{Deserialize, Serialize};

use crate::demo::{DemoError, RateConfig, RecordConfig, ReplayConfig, ReplayFormat, replay_format};
use crate::detector::Detector;
use crate::mapper::Mapper;
use crate::sinks::{BusySink, RecordingSink};
use crate::world::{SimCamera, SimDepth, SimLidar, SimOdometry};

/// Which of the three benchmark blueprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchBlueprint {
    /// Camera and one busy sink, 2 workers.
    Basic,
    /// Camera, depth, lidar, odometry and 4 processing modules over 5 workers.
    Full,
    /// Full plus 4 busy sinks, 6 workers.
    Heavy,
}

impl BenchBlueprint {
    /// All three, smallest first.
    pub const ALL: [BenchBlueprint; 3] = [
        BenchBlueprint::Basic,
        BenchBlueprint::Full,
        BenchBlueprint::Heavy,
    ];

    /// The names they are registered under, in the order of [`BenchBlueprint::ALL`]: the
    /// blueprints `bench replay` runs (a binary hands them to the benchmark's CLI plugin,
    /// which does not depend on this crate: `ReplayBench::new`).
    pub const REGISTERED_NAMES: [&'static str; 3] = ["replay-basic", "replay-full", "replay-heavy"];

    /// The name it is registered under: `replay-basic`, `replay-full`, `replay-heavy`.
    pub fn registered_name(self) -> &'static str {
        match self {
            BenchBlueprint::Basic => Self::REGISTERED_NAMES[0],
            BenchBlueprint::Full => Self::REGISTERED_NAMES[1],
            BenchBlueprint::Heavy => Self::REGISTERED_NAMES[2],
        }
    }

    /// The busy sinks it has unless `sinks` says otherwise.
    pub fn default_sinks(self) -> usize {
        match self {
            BenchBlueprint::Basic => 1,
            BenchBlueprint::Full => 0,
            BenchBlueprint::Heavy => 4,
        }
    }

    /// Its name: `basic`, `full`, `heavy`.
    pub fn name(self) -> &'static str {
        match self {
            BenchBlueprint::Basic => "basic",
            BenchBlueprint::Full => "full",
            BenchBlueprint::Heavy => "heavy",
        }
    }
}

impl fmt::Display for BenchBlueprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BenchBlueprint {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BenchBlueprint::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                format!("unknown benchmark blueprint `{s}`: expected basic, full or heavy")
            })
    }
}

/// Where the processes are.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum HostSplit {
    /// Every process on host `robot`.
    #[default]
    One,
    /// The operator's processes (`perception`, `ui`, `logger`; `sink` in `basic`) on host
    /// `laptop`, the rest on `robot`.
    Split,
}

impl HostSplit {
    /// The host of `process` (a process of the benchmark blueprints).
    pub fn host_of(self, process: &str) -> &'static str {
        match (self, process) {
            (HostSplit::Split, "perception" | "ui" | "logger" | "sink") => "laptop",
            _ => "robot",
        }
    }
}

impl fmt::Display for HostSplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HostSplit::One => "one",
            HostSplit::Split => "split",
        })
    }
}

/// How the colour stream travels between processes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ImageMode {
    /// Pixels (compression off for `color_image`).
    #[default]
    Raw,
    /// JPEG (compression on for `color_image`: one encode in the camera's process, one
    /// decode in each process that wants pixels).
    Codec,
    /// As `auto` decides per link: pixels between the processes of one host, JPEG between
    /// hosts (the default locality table).
    Auto,
}

impl fmt::Display for ImageMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageMode::Raw => "raw",
            ImageMode::Codec => "codec",
            ImageMode::Auto => "auto",
        })
    }
}

impl FromStr for ImageMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "raw" => Ok(ImageMode::Raw),
            "codec" => Ok(ImageMode::Codec),
            "auto" => Ok(ImageMode::Auto),
            _ => Err(format!("unknown mode `{s}`: expected raw, codec or auto")),
        }
    }
}

/// The benchmark blueprints' keys (`mode`, `hosts`, `sinks`, `work_ms`, `replay.*`,
/// `record.*`, `jpeg_quality`, sensor rates).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayBenchConfig {
    /// `raw`, `codec` or `auto`.
    pub mode: ImageMode,
    /// `one` (every process on `robot`) or `split` (the operator's side on `laptop`).
    pub hosts: HostSplit,
    /// Busy sinks (none: the blueprint's own number, 1 / 0 / 4).
    pub sinks: Option<usize>,
    /// CPU milliseconds of image work per frame, each busy sink.
    pub work_ms: f64,
    /// JPEG quality in mode `codec`.
    pub jpeg_quality: u8,
    /// Play the camera at this many frames per second (none: as recorded, or
    /// `replay.fps`). A folder with a timestamps file is played faster or slower
    /// (`replay.rate` is scaled), so its frames keep their recorded spacing.
    pub fps: Option<f64>,
    /// The camera: a folder of frames (none: the simulated camera at 20 fps).
    pub replay: ReplayConfig,
    /// Where every consumer writes its arrivals (`<instance>.jsonl`).
    pub record: RecordConfig,
    /// The depth sensor's rate (full and heavy).
    pub depth: RateConfig,
    /// The lidar's rate (full and heavy).
    pub lidar: RateConfig,
    /// The odometry's rate (full and heavy).
    pub odometry: RateConfig,
}

impl Default for ReplayBenchConfig {
    fn default() -> Self {
        ReplayBenchConfig {
            mode: ImageMode::Raw,
            hosts: HostSplit::One,
            sinks: None,
            work_ms: 20.0,
            jpeg_quality: 75,
            fps: None,
            replay: ReplayConfig::default(),
            record: RecordConfig::default(),
            depth: RateConfig { hz: 10.0 },
            lidar: RateConfig { hz: 10.0 },
            odometry: RateConfig { hz: 50.0 },
        }
    }
}

/// The blueprint `kind` for `config`; a replay folder that cannot play fails here. A
/// recording file needs [`bench_blueprint_with`] and its format.
pub fn bench_blueprint(
    kind: BenchBlueprint,
    config: &ReplayBenchConfig,
) -> Result<Blueprint, DemoError> {
    bench_blueprint_with(kind, config, &[])
}

/// The blueprint `kind` for `config`, whose `replay.dir` may also name a file that one of
/// `formats` reads (the stock binary's: MCAP).
pub fn bench_blueprint_with(
    kind: BenchBlueprint,
    config: &ReplayBenchConfig,
    formats: &[&dyn ReplayFormat],
) -> Result<Blueprint, DemoError> {
    let mut bp = Blueprint::new();
    // On `robot`, unless `hosts: split` moves the operator's processes to `laptop`.
    let placed = |process: &str| Placement::process(process).on_host(config.hosts.host_of(process));
    let record = |name: &str| config.record.path(name);
    let camera_process = match kind {
        BenchBlueprint::Basic => "camera",
        _ => "sensors",
    };
    let format = match &config.replay.dir {
        Some(path) => replay_format(formats, path)?,
        None => None,
    };
    match (&config.replay.dir, format) {
        (Some(path), Some(format)) => {
            // The camera only; `fps` scales the rate from the colour topic's recorded one.
            let mut replay = config.replay.clone();
            if let Some(fps) = config.fps {
                replay.rate = config.replay.rate * fps / format.camera_hz(&replay, path)?;
            }
            format.add(&mut bp, &replay, "camera", path, &["color_image"])?;
            bp.place_named("camera", placed(camera_process));
        }
        (Some(dir), None) => {
            config.replay.check_folder()?;
            let mut replay = config.replay.source(dir);
            replay.fps = config.fps.or(config.replay.fps);
            let schedule = replay.scan()?;
            if let Some(fps) = config.fps
                && schedule.recorded
                && schedule.loop_s > 0.0
            {
                let recorded_fps = schedule.frames.len() as f64 / schedule.loop_s;
                replay.rate = config.replay.rate * fps / recorded_fps;
                replay.scan()?;
            }
            let camera = bp.add("camera", replay);
            bp.place(&camera, placed(camera_process));
        }
        (None, _) => {
            let camera = bp.add(
                "camera",
                SimCamera {
                    fps: config.fps.unwrap_or(20.0),
                    ..SimCamera::default()
                },
            );
            bp.place(&camera, placed(camera_process));
        }
    }

    // Where busy sinks go, in turn.
    let sink_processes: &[&str] = match kind {
        BenchBlueprint::Basic => &["sink"],
        _ => &["perception", "ui", "logger", "sinks"],
    };
    if kind != BenchBlueprint::Basic {
        let sensors = placed("sensors");
        let depth = bp.add(
            "depth",
            SimDepth {
                fps: config.depth.hz,
                ..SimDepth::default()
            },
        );
        let lidar = bp.add(
            "lidar",
            SimLidar {
                hz: config.lidar.hz,
                ..SimLidar::default()
            },
        );
        let odometry = bp.add(
            "odometry",
            SimOdometry {
                hz: config.odometry.hz,
                ..SimOdometry::default()
            },
        );
        let detector = bp.add("detector", Detector::default());
        let mapper = bp.add("mapper", Mapper::default());
        let viewer = bp.add(
            "viewer",
            RecordingSink {
                path: record("viewer"),
                ..RecordingSink::default()
            },
        );
        let logger = bp.add(
            "logger",
            RecordingSink {
                path: record("logger"),
                ..RecordingSink::default()
            },
        );
        bp.place(&depth, sensors.clone())
            .place(&lidar, sensors.clone())
            .place(&odometry, sensors)
            .place(&detector, placed("perception"))
            .place(&mapper, placed("mapping"))
            .place(&viewer, placed("ui"))
            .place(&logger, placed("logger"));
        // Depth stays raw in both modes: only the colour stream differs.
        bp.stream("depth", StreamSettings::new().compression(Compression::Off));
    }
    let sinks = config.sinks.unwrap_or(kind.default_sinks());
    for i in 0..sinks {
        let name = format!("busy_{i}");
        let sink = bp.add(
            &name,
            BusySink {
                work_ms: config.work_ms,
                path: record(&name),
                ..BusySink::default()
            },
        );
        bp.place(&sink, placed(sink_processes[i % sink_processes.len()]));
    }
    let color = match config.mode {
        ImageMode::Raw => StreamSettings::new().compression(Compression::Off),
        ImageMode::Auto => StreamSettings::new()
            .compression(Compression::Auto)
            .param("jpeg_quality", config.jpeg_quality),
        // The camera's process holds no colour consumer, so `on` compresses exactly the
        // links between processes.
        ImageMode::Codec => StreamSettings::new()
            .compression(Compression::On)
            .param("jpeg_quality", config.jpeg_quality),
    };
    bp.stream("color_image", color).autoconnect();
    Ok(bp)
}

#[cfg(test)]
mod tests {
    use streamwire_graph::{CodecKind, Plan};

    use super::*;

    fn plan(kind: BenchBlueprint, mode: ImageMode) -> Plan {
        let config = ReplayBenchConfig {
            mode,
            ..ReplayBenchConfig::default()
        };
        bench_blueprint(kind, &config)
            .expect("blueprint")
            .build()
            .expect("plan")
    }

    /// (encodes, decodes) of `stream` in `plan`.
    fn codecs(plan: &Plan, stream: &str) -> (usize, usize) {
        let of = |kind: CodecKind| {
            plan.codec_nodes()
                .filter(|n| n.stream == stream && n.kind == kind)
                .count()
        };
        (of(CodecKind::Encode), of(CodecKind::Decode))
    }

    #[test]
    fn registered_names_are_replay_and_the_name() {
        // `streamwire-replay-bench` runs `replay-<name>` for `--blueprint <name>`.
        let names: Vec<String> = BenchBlueprint::ALL
            .iter()
            .map(|b| format!("replay-{b}"))
            .collect();
        assert_eq!(names, BenchBlueprint::REGISTERED_NAMES);
        for b in BenchBlueprint::ALL {
            assert_eq!(b.registered_name(), format!("replay-{}", b.name()));
        }
    }

    #[test]
    fn codec_mode_encodes_once_and_decodes_once_per_process_that_wants_pixels() {
        for (kind, decodes, processes) in [
            (BenchBlueprint::Basic, 1, 2),
            (BenchBlueprint::Full, 3, 5),
            (BenchBlueprint::Heavy, 4, 6),
        ] {
            let plan = plan(kind, ImageMode::Codec);
            assert_eq!(codecs(&plan, "color_image"), (1, decodes), "{kind}\n{plan}");
            assert_eq!(plan.processes().len(), processes, "{kind}");
        }
    }

    #[test]
    fn raw_mode_has_no_colour_codec_and_depth_stays_raw_in_both() {
        for kind in BenchBlueprint::ALL {
            let raw = plan(kind, ImageMode::Raw);
            assert_eq!(codecs(&raw, "color_image"), (0, 0), "{kind}\n{raw}");
            assert_eq!(codecs(&raw, "depth"), (0, 0), "{kind}\n{raw}");
            let codec = plan(kind, ImageMode::Codec);
            assert_eq!(codecs(&codec, "depth"), (0, 0), "{kind}\n{codec}");
        }
    }

    #[test]
    fn split_hosts_put_the_operator_on_the_laptop_and_only_colour_crosses() {
        for (kind, laptop_decodes) in [
            (BenchBlueprint::Basic, 1),
            (BenchBlueprint::Full, 3),
            (BenchBlueprint::Heavy, 3),
        ] {
            let config = ReplayBenchConfig {
                mode: ImageMode::Auto,
                hosts: HostSplit::Split,
                ..ReplayBenchConfig::default()
            };
            let plan = bench_blueprint(kind, &config)
                .expect("blueprint")
                .build()
                .expect("plan");
            let summary = plan.summary();
            let crossing: std::collections::BTreeSet<&str> = summary
                .links
                .iter()
                .filter(|l| l.locality == "cross-host")
                .map(|l| l.stream.as_str())
                .collect();
            assert_eq!(
                crossing.into_iter().collect::<Vec<_>>(),
                ["color_image/compressed"],
                "{kind}\n{plan}"
            );
            // `auto`: one encode, a decode in each laptop process that wants pixels, and
            // pixels to the robot's own consumers (heavy's `sinks`).
            let laptop_decodes_planned = summary
                .codec_nodes
                .iter()
                .filter(|n| n.kind == CodecKind::Decode && n.placement.starts_with("laptop/"))
                .count();
            assert_eq!(
                codecs(&plan, "color_image"),
                (1, laptop_decodes),
                "{kind}\n{plan}"
            );
            assert_eq!(laptop_decodes_planned, laptop_decodes, "{kind}\n{plan}");
            let robot_pixels = summary.links.iter().any(|l| {
                l.locality == "same-host" && l.stream == "color_image" && l.codec.is_none()
            });
            assert_eq!(
                robot_pixels,
                kind == BenchBlueprint::Heavy,
                "{kind}\n{plan}"
            );
            // Depth, cloud and odometry stay with the mapper on the robot.
            assert!(
                summary
                    .instances
                    .iter()
                    .filter(|i| i.name == "mapper" || i.name == "camera")
                    .all(|i| i.placement.starts_with("robot/")),
                "{kind}\n{plan}"
            );
        }
    }

    #[test]
    fn names_parse_back() {
        for kind in BenchBlueprint::ALL {
            assert_eq!(kind.name().parse::<BenchBlueprint>(), Ok(kind));
        }
        assert!("medium".parse::<BenchBlueprint>().is_err());
        assert_eq!("codec".parse::<ImageMode>(), Ok(ImageMode::Codec));
        assert_eq!("auto".parse::<ImageMode>(), Ok(ImageMode::Auto));
        assert!("jpeg".parse::<ImageMode>().is_err());
    }
}

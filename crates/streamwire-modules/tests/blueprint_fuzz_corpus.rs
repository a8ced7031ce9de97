//! Replays the blueprint fuzz corpus (`fuzz/corpus/blueprint`) through the fuzz target's
//! own check (`fuzz/check.rs`) with its counting allocator: no blueprint file panics
//! streamwire-graph's parser with the built-in modules registered, takes more heap than
//! the limit, or loads and then does not save and load again the same.
//!
//! The seeds are the repository's example blueprint (examples/app/blueprints/robot.yaml,
//! whose modules are the example app's: here every instance is an unknown type), blueprints
//! of the built-in modules using every section of a file, each also as the JSON it saves
//! as, and files with mistakes. `cargo test -p streamwire-modules --test
//! blueprint_fuzz_corpus -- --ignored` writes them again (names `seed-*`).

#[path = "../fuzz/check.rs"]
mod check;

use std::path::{Path, PathBuf};

use streamwire_graph::{BlueprintFile, FileFormat};
use streamwire_testdata::alloc::CountingAlloc;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/blueprint")
}

#[test]
fn blueprint_fuzz_corpus_replays_cleanly() {
    let mut outcomes = Vec::new();
    for entry in std::fs::read_dir(corpus()).expect("corpus directory") {
        let path = entry.expect("corpus entry").path();
        let input = std::fs::read(&path).expect("corpus file");
        outcomes.push(check::check(&input));
    }
    let built = outcomes
        .iter()
        .filter(|o| **o == check::Outcome::Built)
        .count();
    println!("replayed {} inputs, {built} built", outcomes.len());
    assert!(
        outcomes.len() >= 12,
        "corpus has only {} inputs",
        outcomes.len()
    );
    // The built-in modules are registered (their seeds build): else the target fuzzes
    // unknown-type errors.
    assert!(built >= 4, "only {built} inputs built");
}

const DEMO: &str = "\
# The demo's sensors, perception and mapping, in two processes.
compression: auto
auto_table: { same_host: compress }
jpeg_quality: 75
max_width: 640
lossy_pixels: warn
supervision: restart:3
instances:
  camera: { type: SimCamera, width: 64, height: 48, fps: 15, seed: 2, hfov_deg: 90 }
  depth: { type: SimDepth }
  lidar: { type: SimLidar }
  odometry: { type: SimOdometry }
  detector: { type: Detector, min_pixels: 30, label: moving_object }
  mapper: { type: Mapper, resolution_m: 0.1, size_m: 16, publish_hz: 1 }
placement:
  detector: perception
  mapper: robot/mapping
streams:
  color_image: \"jpeg_quality=60\"
";

const CONNECTED: &str = "\
autoconnect: false
instances:
  camera:
    type: SimCamera
    width: 32
    height: 24
  front/detector:
    type: Detector
  sink:
    type: RecordingSink
connect:
  - { from: camera.color_image, to: front/detector.frames }
  - { from: camera.color_image, to: sink.frames }
remap:
  front/detector: { color_image: front/color_image }
";

const SINKS: &str = "\
instances:
  camera: { type: SimCamera, width: 32, height: 24 }
  odometry: { type: SimOdometry, hz: 50 }
  busy: { type: BusySink, work_ms: 2.5 }
  bytes: { type: ByteConsumer, keep: 4 }
remap:
  bytes: { color_image/compressed: color_image }
compression: off
";

const MISTAKES: &str = "\
compression: sometimes
instances:
  camera: { type: SimCamra, fps: fast }
  detector: { type: Detector, threshold: 3 }
placement:
  nobody: here
connect:
  - { from: camera.nothing, to: detector }
";

const ALIASES: &str = "\
instances:
  left: &camera { type: SimCamera, width: 32, height: 24 }
  right: { <<: *camera, seed: 7 }
remap:
  right: { color_image: right/color_image }
";

/// Writes the seeds (see the module's documentation).
#[test]
#[ignore = "writes the seed corpus: run by hand after a file format change"]
fn write_blueprint_seeds() {
    let dir = corpus();
    std::fs::create_dir_all(&dir).unwrap();
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/app/blueprints/robot.yaml");
    let mut seeds = vec![
        (
            "robot.yaml".to_owned(),
            std::fs::read_to_string(example).unwrap(),
        ),
        ("mistakes.yaml".to_owned(), MISTAKES.to_owned()),
        ("aliases.yaml".to_owned(), ALIASES.to_owned()),
        (
            "syntax.yaml".to_owned(),
            "instances: { camera: [".to_owned(),
        ),
        (
            "syntax.json".to_owned(),
            "{\"instances\": {\"camera\": ".to_owned(),
        ),
        ("empty.yaml".to_owned(), String::new()),
    ];
    for (name, text) in [("demo", DEMO), ("connected", CONNECTED), ("sinks", SINKS)] {
        let file = BlueprintFile::parse(text, FileFormat::Yaml, Path::new(name))
            .unwrap_or_else(|error| panic!("{error}"));
        seeds.push((format!("{name}.yaml"), text.to_owned()));
        seeds.push((format!("{name}.json"), file.to_json().unwrap()));
    }
    for (name, text) in seeds {
        check::check(text.as_bytes());
        std::fs::write(dir.join(format!("seed-{name}")), text).unwrap();
    }
}

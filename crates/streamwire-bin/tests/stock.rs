//! The stock `streamwire` binary: what it registers, and the demo run through it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use streamwire::Module;

const BIN: &str = env!("CARGO_BIN_EXE_streamwire");

#[expect(clippy::unwrap_used, reason = "test helper")]
fn streamwire(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("streamwire {args:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn list_shows_every_built_in_tag() {
    let out = streamwire(&["list"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Every module type the stock binary links, though nothing in its `main` names them.
    use streamwire_modules::{
        detector::Detector, mapper::Mapper, replay::ReplaySource, sinks, world,
    };
    for tag in [
        ReplaySource::TYPE_NAME,
        world::SimCamera::TYPE_NAME,
        world::SimDepth::TYPE_NAME,
        world::SimLidar::TYPE_NAME,
        world::SimOdometry::TYPE_NAME,
        Detector::TYPE_NAME,
        Mapper::TYPE_NAME,
        sinks::BusySink::TYPE_NAME,
        sinks::ByteConsumer::TYPE_NAME,
        sinks::RecordingSink::TYPE_NAME,
        streamwire_web::WebRelay::TYPE_NAME,
    ] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(tag)),
            "{tag} missing:\n{stdout}"
        );
    }
    assert!(stdout.contains("  demo  "), "{stdout}");
}

#[test]
fn run_demo_for_a_second() {
    let out = streamwire(&[
        "run",
        "demo",
        "--duration",
        "1",
        "-o",
        "jpeg_quality=60",
        "-o",
        "web.port=0",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with("run stopped after"), "{stdout}");
    assert!(stdout.contains("detector.frames"), "{stdout}");
}

#[test]
fn demo_graph_shows_the_global_quality() {
    let out = streamwire(&["graph", "demo", "-o", "jpeg_quality=60"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("jpeg_quality=60 (blueprint-wide)"),
        "{stdout}"
    );
    // Per stream beats global, and says so.
    let out = streamwire(&[
        "graph",
        "demo",
        "-o",
        "jpeg_quality=60",
        "-o",
        "streams.color_image.jpeg_quality=40",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("jpeg_quality=40 (set)"), "{stdout}");
    assert!(!stdout.contains("jpeg_quality=60"), "{stdout}");
}

//! The demo's configuration keys and blueprint.

use streamwire_modules::demo::{DemoConfig, DemoError, Layout, demo_blueprint};

#[test]
fn keys_set_and_refuse() {
    let mut config = DemoConfig::default();
    config.set("camera.fps", "12.5").unwrap();
    config.set("busy.work_ms", "3").unwrap();
    config.set("replay.fps", "15").unwrap();
    config.set("layout", "one_process").unwrap();
    config.set("compression", "off").unwrap();
    config.set("record.dir", "/tmp/rec").unwrap();
    assert_eq!(config.camera.fps, 12.5);
    assert_eq!(config.busy.work_ms, 3.0);
    assert_eq!(config.replay.fps, Some(15.0));
    assert_eq!(config.layout, Layout::OneProcess);
    assert_eq!(
        config.record.dir.as_deref(),
        Some(std::path::Path::new("/tmp/rec"))
    );
    config.set("replay.fps", "none").unwrap();
    assert_eq!(config.replay.fps, None);
    let keys = DemoConfig::keys();
    for key in ["camera.fps", "replay.dir", "replay.fps", "busy.work_ms"] {
        assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
    }
    // One name per setting: the codec's are the command line's global keys
    // (`jpeg_quality`, `max_width`), not the demo's own.
    assert!(!keys.iter().any(|k| k.starts_with("jpeg")), "{keys:?}");
    match config.set("camera.colour", "red") {
        Err(DemoError::UnknownKey { valid, .. }) => assert_eq!(valid, keys),
        other => panic!("{other:?}"),
    }
    let err = config.set("camera.fps", "fast").unwrap_err().to_string();
    assert!(err.contains("camera.fps") && err.contains("fast"), "{err}");
    assert!(config.set("layout", "sideways").is_err());
    // A blueprint file's table.
    let from_file: DemoConfig =
        serde_json::from_str(r#"{"camera": {"fps": 5}, "busy": {"work_ms": 1}}"#).unwrap();
    assert_eq!((from_file.camera.fps, from_file.camera.width), (5.0, 1280));
    assert!(serde_json::from_str::<DemoConfig>(r#"{"camra": {}}"#).is_err());
}

#[test]
fn both_layouts_build_and_the_robot_one_decodes_once_per_process() {
    for layout in [Layout::OneProcess, Layout::Robot] {
        let config = DemoConfig {
            layout,
            ..DemoConfig::default()
        };
        let plan = demo_blueprint(&config).unwrap().build().unwrap();
        plan.verify().unwrap();
        let text = plan.to_string();
        if layout == Layout::Robot {
            assert_eq!(text.matches("  encode color_image").count(), 1, "{text}");
            assert_eq!(text.matches("  decode color_image").count(), 2, "{text}");
            assert!(text.contains("3 processes"), "{text}");
        }
    }
}

#[test]
fn a_replay_folder_is_checked_when_the_blueprint_is_made() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0.jpg"), b"x").unwrap();
    let mut config = DemoConfig::default();
    config.replay.dir = Some(dir.path().to_owned());
    assert!(matches!(demo_blueprint(&config), Err(DemoError::Replay(_))));
    config.replay.fps = Some(10.0);
    let plan = demo_blueprint(&config).unwrap().build().unwrap();
    assert!(plan.to_string().contains("camera (ReplaySource)"));
}

/// Every stock blueprint (the demo in each layout, the three benchmark blueprints raw and
/// with the codec) plans with every check at its default: no output there fails a
/// consumer's QoS along its path (incompatible QoS, lossy path: both `Error` by default).
#[test]
fn stock_blueprints_pass_the_qos_checks_at_their_defaults() {
    use streamwire_modules::replay_bench::{
        BenchBlueprint, ImageMode, ReplayBenchConfig, bench_blueprint,
    };
    for layout in [Layout::OneProcess, Layout::Robot, Layout::Split] {
        let config = DemoConfig {
            layout,
            ..DemoConfig::default()
        };
        let blueprint = demo_blueprint(&config).unwrap();
        if let Err(error) = blueprint.build() {
            panic!("demo {layout:?}: {error}");
        }
    }
    for kind in BenchBlueprint::ALL {
        for mode in [ImageMode::Raw, ImageMode::Codec] {
            let config = ReplayBenchConfig {
                mode,
                ..ReplayBenchConfig::default()
            };
            let blueprint = bench_blueprint(kind, &config).unwrap();
            if let Err(error) = blueprint.build() {
                panic!("{} {mode:?}: {error}", kind.registered_name());
            }
        }
    }
}

//! Blueprint files: YAML and JSON round trips, and the errors a person meets.

use std::path::Path;

use streamwire::prelude::*;
use streamwire::{BlueprintFile, FileFormat};

/// A camera for the file tests.
#[derive(Module)]
pub struct FileCamera {
    /// Frames.
    pub color_image: Out<Compressed<Image>>,
    /// Frames per second.
    #[config]
    pub fps: u32,
    /// Its name.
    #[config]
    pub name: String,
}

/// A viewer for the file tests.
#[derive(Module)]
pub struct FileViewer {
    #[port(name = "color_image")]
    /// Frames.
    pub frames: In<Image>,
    /// Display scale.
    #[config]
    pub scale: f32,
    /// Frames seen.
    #[state]
    pub seen: u64,
}

const YAML: &str = "\
compression: auto
jpeg_quality: 70
instances:
  camera:
    type: FileCamera
    fps: 15
    name: front
  viewer:
    type: FileViewer
    scale: 0.5
placement:
  viewer: laptop/ui
streams:
  color_image: jpeg_quality=60
";

fn parse(text: &str, format: FileFormat) -> Result<BlueprintFile, String> {
    BlueprintFile::parse(text, format, Path::new("robot.yaml"))
        .map_err(|e| without_other_crates_modules(&e.to_string()))
}

/// `text` without the module types that another workspace member's features link into
/// this test binary (cargo unifies features in a workspace build: the stock binary's
/// `mcap` brings the MCAP recorder and source along), so that a snapshot reads the same
/// from `cargo test -p streamwire-graph` and from `cargo test --workspace`.
fn without_other_crates_modules(text: &str) -> String {
    text.replace(", McapRecorder, McapSource", "")
}

#[test]
fn yaml_round_trip() {
    let file = parse(YAML, FileFormat::Yaml).unwrap();
    let yaml = file.to_yaml().unwrap();
    insta::assert_snapshot!("yaml_round_trip", yaml);
    let again = parse(&yaml, FileFormat::Yaml).unwrap();
    assert_eq!(again.to_yaml().unwrap(), yaml);
    // Ports are rebuilt, config kept: the blueprint builds, with the per-stream quality.
    let plan = again.into_blueprint().build().unwrap();
    let text = plan.to_string();
    assert!(text.contains("jpeg_quality=60"), "{text}");
}

#[test]
fn json_round_trip() {
    let file = parse(YAML, FileFormat::Yaml).unwrap();
    let json = file.to_json().unwrap();
    insta::assert_snapshot!("json_round_trip", json);
    let again = parse(&json, FileFormat::Json).unwrap();
    assert_eq!(again.to_json().unwrap(), json);
    assert_eq!(again.to_yaml().unwrap(), file.to_yaml().unwrap());
}

#[test]
fn global_codec_default_is_beaten_per_stream() {
    let without_stream = YAML.replace("streams:\n  color_image: jpeg_quality=60\n", "");
    let plan = parse(&without_stream, FileFormat::Yaml)
        .unwrap()
        .into_blueprint()
        .build()
        .unwrap();
    assert!(
        plan.to_string()
            .contains("jpeg_quality=70 (blueprint-wide)"),
        "{plan}"
    );
    let plan = parse(YAML, FileFormat::Yaml)
        .unwrap()
        .into_blueprint()
        .build()
        .unwrap();
    assert!(!plan.to_string().contains("jpeg_quality=70"), "{plan}");
    assert!(plan.to_string().contains("jpeg_quality=60 (set)"), "{plan}");
}

#[test]
fn a_file_sets_the_auto_table_as_a_table_or_as_text() {
    // The viewer on this host: raw by default, compressed when the file says so.
    let same_host = YAML.replace("viewer: laptop/ui", "viewer: ui");
    let feed = |text: &str| {
        let plan = parse(text, FileFormat::Yaml)
            .unwrap()
            .into_blueprint()
            .build()
            .unwrap();
        let feed = plan.feed_of("viewer", "frames").unwrap();
        (feed.payload.is_encoded(), plan.codec_nodes().count())
    };
    // The viewer's feed is pixels either way: from the camera, or from a decoder.
    assert_eq!(feed(&same_host), (false, 0));
    for table in [
        "auto_table: { same_host: compress }\n",
        "auto_table: same-host compress\n",
    ] {
        let text = format!("{table}{same_host}");
        assert_eq!(feed(&text), (false, 2), "{table}");
        let file = parse(&text, FileFormat::Yaml).unwrap();
        let yaml = file.to_yaml().unwrap();
        assert!(
            yaml.contains("auto_table:") && yaml.contains("same_host: compress"),
            "{yaml}"
        );
    }
    assert!(
        parse(
            &format!("auto_table: {{ same_host: zip }}\n{same_host}"),
            FileFormat::Yaml
        )
        .unwrap_err()
        .contains("zip")
    );
}

#[test]
fn unknown_tag_names_the_entry_and_the_choices() {
    let text = YAML.replace("type: FileViewer", "type: FileViewr");
    insta::assert_snapshot!("unknown_tag", parse(&text, FileFormat::Yaml).unwrap_err());
}

#[test]
fn bad_field_lists_the_fields() {
    let text = YAML.replace("fps: 15", "fsp: 15");
    insta::assert_snapshot!("bad_field", parse(&text, FileFormat::Yaml).unwrap_err());
    let text = YAML.replace("fps: 15", "fps: fast");
    insta::assert_snapshot!(
        "mistyped_field",
        parse(&text, FileFormat::Yaml).unwrap_err()
    );
    let text = YAML.replace("    fps: 15\n", "");
    insta::assert_snapshot!("missing_field", parse(&text, FileFormat::Yaml).unwrap_err());
}

#[test]
fn json_errors_name_the_entry_too() {
    let json = parse(YAML, FileFormat::Yaml).unwrap().to_json().unwrap();
    let text = json.replace("\"FileViewer\"", "\"FileViewr\"");
    insta::assert_snapshot!(
        "json_unknown_tag",
        parse(&text, FileFormat::Json).unwrap_err()
    );
    let text = json.replace("\"fps\"", "\"fsp\"");
    insta::assert_snapshot!(
        "json_bad_field",
        parse(&text, FileFormat::Json).unwrap_err()
    );
}

#[test]
fn key_lines_follow_the_parser_in_block_and_flow_style() {
    let text = "\
# a comment that mentions fps: 99
instances:
  camera: { type: FileCamera, fps: 15, name: front }
  viewer:
    type: FileViewer
    scale: 0.5
streams:
  color_image: jpeg_quality=60
";
    let lines = streamwire::KeyLines::of(text).unwrap();
    assert_eq!(lines.line(&["instances", "camera", "fps"]), Some(3));
    assert_eq!(lines.line(&["instances", "viewer", "scale"]), Some(6));
    assert_eq!(lines.line(&["streams", "color_image"]), Some(8));
    assert_eq!(lines.line(&["instances", "camera", "scale"]), None);
    // A key's place, not a text match: the comment's `fps:` is no key.
    assert_eq!(lines.line(&["fps"]), None);
    assert_eq!(lines.instance_at(3, 20), Some("camera"));
    assert_eq!(lines.instance_at(6, 5), Some("viewer"));
    assert_eq!(lines.instance_at(8, 3), None);
    assert_eq!(streamwire::KeyLines::of("instances: [unclosed"), None);
}

#[test]
fn syntax_error_names_the_line() {
    let text = YAML.replace("  viewer: laptop/ui", "  viewer: [laptop/ui");
    insta::assert_snapshot!("syntax_error", parse(&text, FileFormat::Yaml).unwrap_err());
}

#[test]
fn bad_placement_and_unknown_stream_fail() {
    let text = YAML.replace("viewer: laptop/ui", "viewer: a/b/c");
    insta::assert_snapshot!("bad_placement", parse(&text, FileFormat::Yaml).unwrap_err());
    let text = YAML.replace("color_image: jpeg", "colour_image: jpeg");
    let err = parse(&text, FileFormat::Yaml)
        .unwrap()
        .into_blueprint()
        .build()
        .unwrap_err();
    insta::assert_snapshot!("unknown_stream", err);
}

#[test]
fn named_connection_mistakes() {
    let text = format!("{YAML}connect:\n  - {{ from: camera.colour_image, to: viewr.frames }}\n");
    insta::assert_snapshot!(
        "bad_connection",
        parse(&text, FileFormat::Yaml).unwrap_err()
    );
}

#[test]
fn every_mistake_of_a_file_at_once() {
    // A misspelt file setting, module type and placement, and a bad value: four
    // problems, each once, located, in the order of the text.
    let text = YAML
        .replace("jpeg_quality: 70", "jpeg_qualty: 70")
        .replace("type: FileViewer", "type: FileViewr")
        .replace("fps: 15", "fps: fast")
        .replace("viewer: laptop/ui", "veiwer: laptop/ui");
    let err = parse(&text, FileFormat::Yaml).unwrap_err();
    assert_eq!(err.matches("robot.yaml:").count(), 5, "{err}");
    insta::assert_snapshot!("every_mistake", err);
}

#[test]
fn every_bad_value_of_one_instance_is_reported() {
    // Serde stops at an instance's first bad value; the loader reads on without it.
    let text = YAML
        .replace("fps: 15", "fps: fast")
        .replace("name: front", "name: [1, 2]");
    let err = parse(&text, FileFormat::Yaml).unwrap_err();
    assert!(err.contains("setting `fps` of instance `camera`"), "{err}");
    assert!(err.contains("setting `name` of instance `camera`"), "{err}");
    assert_eq!(err.matches("of instance `camera`").count(), 2, "{err}");
}

#[test]
fn yaml_words_are_read_as_written() {
    // YAML 1.1 reads `off` as a boolean; a setting that takes the word gets the word.
    let text = YAML.replace("compression: auto", "compression: off");
    let file = parse(&text, FileFormat::Yaml).unwrap();
    assert_eq!(file.globals.get("compression").as_deref(), Some("off"));
    let text = format!("{YAML}autoconnect: false\n");
    assert!(!parse(&text, FileFormat::Yaml).unwrap().autoconnect);
}

#[test]
fn remap_and_top_level_mistakes_are_located() {
    let text = format!("{YAML}remap:\n  viewer: {{ colour_image: front }}\ncompresion: on\n");
    insta::assert_snapshot!("remap_and_key", parse(&text, FileFormat::Yaml).unwrap_err());
}

#[test]
fn registered_modules_include_these() {
    let tags: Vec<&str> = streamwire::registered_modules()
        .iter()
        .map(|r| r.tag)
        .collect();
    assert!(
        tags.contains(&"FileCamera") && tags.contains(&"FileViewer"),
        "{tags:?}"
    );
    let camera = streamwire::registered_modules()
        .into_iter()
        .find(|r| r.tag == "FileCamera")
        .unwrap();
    assert_eq!(camera.doc, "A camera for the file tests.");
    assert_eq!(camera.config_fields, ["fps", "name"]);
}

/// A plan keeps each instance's `#[config]` settings as a file holds them, for a
/// blueprint built in code too.
#[test]
fn a_plan_keeps_each_instances_settings() {
    let mut blueprint = Blueprint::new();
    blueprint.add(
        "camera",
        FileCamera {
            color_image: Out::new(),
            fps: 15,
            name: "front".into(),
        },
    );
    let plan = blueprint.build().expect("a plan");
    let camera = plan.instance_named("camera").expect("the camera");
    assert_eq!(
        camera.settings(),
        [
            ("fps".to_owned(), "15".to_owned()),
            ("name".to_owned(), "\"front\"".to_owned())
        ]
    );
}

/// Every global key is a top-level key of a file (read by its row, kept as written), and
/// the list of a file's settings names each.
#[test]
fn every_global_key_is_a_top_level_key_of_a_file() {
    let unknown = parse("compresion: on\ninstances: {}\n", FileFormat::Yaml).unwrap_err();
    for row in streamwire::global_keys() {
        let text = format!("{}: {}\ninstances: {{}}\n", row.key, row.example);
        let file = parse(&text, FileFormat::Yaml).unwrap();
        assert_eq!(file.globals.get(row.key).as_deref(), Some(row.example));
        let again = parse(&file.to_yaml().unwrap(), FileFormat::Yaml).unwrap();
        assert_eq!(again.globals, file.globals, "{}", row.key);
        assert!(unknown.contains(&format!(" {},", row.key)), "{unknown}");
    }
}

//! Plans and build errors, as a person reads them (insta snapshots), plus the codec
//! rules of RFC.md checked as behaviour (counts of codec nodes, what each input gets)
//! and as properties over random placements and settings.
#![expect(missing_docs, reason = "test fixtures, not an API")]

use proptest::prelude::*;
use streamwire::msgs::{Jpeg, Zstd};
use streamwire::prelude::*;
use streamwire::{CodecKind, Endpoint, LinkPayload, Note, Plan};

// ---------------------------------------------------------------------------------------
// Modules used by the scenarios.

/// A camera whose images the wire may compress.
#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Compressed<Image>>,
}

/// A camera that sends raw images only.
#[derive(Module)]
pub struct RawCamera {
    pub color_image: Out<Image>,
}

/// A depth camera (lossless codec by default).
#[derive(Module)]
pub struct DepthCamera {
    pub depth: Out<Compressed<DepthImage>>,
}

/// Wants pixels.
#[derive(Module)]
pub struct Viewer {
    #[port(name = "color_image")]
    pub frames: In<Image>,
}

/// Wants the JPEG bytes, under the ROS name of the encoded stream.
#[derive(Module)]
pub struct WebRelay {
    #[port(name = "color_image/compressed")]
    pub jpeg: In<Compressed<Image>>,
}

/// Wants exact (lossless) bytes of the colour stream.
#[derive(Module)]
pub struct Archiver {
    #[port(name = "color_image")]
    pub exact: In<Compressed<Image, Zstd>>,
}

/// Must never see lossy pixels.
#[derive(Module)]
pub struct Calibrator {
    #[port(name = "color_image", lossless)]
    pub frames: In<Image>,
}

/// Builds maps from exact depth.
#[derive(Module)]
pub struct Mapper {
    #[port(lossless)]
    pub depth: In<DepthImage>,
    #[port(optional)]
    pub odometry: In<Odometry>,
}

/// Produces point clouds.
#[derive(Module)]
pub struct Lidar {
    pub points: Out<PointCloud>,
}

/// Consumes point clouds under a name the lidar does not use.
#[derive(Module)]
pub struct Segmenter {
    #[port(name = "pointz")]
    pub cloud: In<PointCloud>,
}

/// Listens to `points` but wants images.
#[derive(Module)]
pub struct ImageOnPoints {
    #[port(name = "points")]
    pub frames: In<Image>,
}

/// Taps the streams it names while it runs (every stream when none), as a recorder does:
/// no ports, a declaration.
#[derive(Module)]
pub struct Tapper {
    #[config]
    pub streams: Vec<String>,
}

impl Node for Tapper {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }

    fn taps(&self) -> streamwire::Taps {
        streamwire::Taps::streams_or_all(&self.streams)
    }
}

fn camera() -> Camera {
    Camera {
        color_image: Out::new(),
    }
}
fn viewer() -> Viewer {
    Viewer { frames: In::new() }
}

/// Builds, checks the invariants, and returns the plan.
fn build(blueprint: &Blueprint) -> Plan {
    let plan = blueprint
        .build()
        .unwrap_or_else(|e| panic!("build failed:\n{e}"));
    if let Err(violations) = plan.verify() {
        panic!("plan violates its invariants: {violations:#?}\n{plan}");
    }
    plan
}

fn build_error(blueprint: &Blueprint) -> String {
    match blueprint.build() {
        Ok(plan) => panic!("expected a build error, got a plan:\n{plan}"),
        Err(e) => e.to_string(),
    }
}

fn count(plan: &Plan, kind: CodecKind) -> usize {
    plan.codec_nodes().filter(|c| c.kind == kind).count()
}

/// What feeds `instance.port`: `raw`, `decoded <codec>` or `bytes <codec>`.
fn fed_by(plan: &Plan, instance: &str, port: &str) -> String {
    let Some(link) = plan.feed_of(instance, port) else {
        return "nothing".to_owned();
    };
    match (link.from, link.payload) {
        (Endpoint::Port { .. }, LinkPayload::Message(_)) => "raw".to_owned(),
        (Endpoint::Codec(id), LinkPayload::Message(_)) => match plan.codec_node(id) {
            Some(c) => format!("decoded {}", c.codec.name()),
            None => format!("a missing codec node {id}"),
        },
        (_, LinkPayload::Encoded(c)) => format!("bytes {}", c.name()),
        (from, payload) => format!("{payload} from {from:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// The scenarios of the issue, one snapshot each.

#[test]
fn raw_to_pixels() {
    let mut bp = Blueprint::new();
    bp.add(
        "cam",
        RawCamera {
            color_image: Out::new(),
        },
    );
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    let plan = build(&bp);
    // A plain `Out<Image>` stays raw even across processes: only a stream setting compresses it.
    assert_eq!(plan.codec_nodes().count(), 0);
    assert_eq!(fed_by(&plan, "viewer", "frames"), "raw");
    insta::assert_snapshot!(plan);
}

#[test]
fn compressed_to_pixels_in_process() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("viewer", viewer());
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(
        plan.codec_nodes().count(),
        0,
        "in-process delivery is zero-copy"
    );
    assert_eq!(fed_by(&plan, "viewer", "frames"), "raw");
    insta::assert_snapshot!(plan);
}

#[test]
fn compressed_to_pixels_across_hosts() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(
        (
            count(&plan, CodecKind::Encode),
            count(&plan, CodecKind::Decode)
        ),
        (1, 1)
    );
    assert_eq!(fed_by(&plan, "viewer", "frames"), "decoded jpeg");
    insta::assert_snapshot!(plan);
}

/// One copy per link (issue 53): three processes of the laptop want the camera's pixels
/// and one more its bytes; the JPEG stream crosses to the laptop once, into the first
/// process by name, which hands it on to the others (each still decodes its own).
#[test]
fn a_stream_crosses_to_a_host_once_and_is_handed_on_there() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    for name in ["viewer", "detector", "logger"] {
        let instance = bp.add(name, viewer());
        bp.place(&instance, Placement::process(name).on_host("laptop"));
    }
    let web = bp.add("web", WebRelay { jpeg: In::new() });
    bp.place(&web, Placement::process("relay").on_host("laptop"));
    bp.autoconnect();
    let plan = build(&bp);
    let crossings = plan.crossings();
    assert_eq!(crossings.len(), 1, "{crossings:?}");
    let crossing = &crossings[0];
    assert_eq!(
        (crossing.stream.as_str(), crossing.host.as_str()),
        ("color_image/compressed", "laptop")
    );
    assert_eq!(
        crossing.receiver,
        Placement::process("detector").on_host("laptop")
    );
    let others: Vec<String> = crossing
        .forwarded_to
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(others, ["laptop/logger", "laptop/relay", "laptop/viewer"]);
    assert_eq!(
        crossing.forwarded_key(),
        "@host/laptop/color_image/compressed"
    );
    assert_eq!(
        count(&plan, CodecKind::Decode),
        3,
        "decoded once per process"
    );
    insta::assert_snapshot!(plan);
}

/// A module that taps streams while it runs says so in the plan: the printed plan lists
/// it under `taps` with its process (which a closed run lets subscribe to them), the
/// summary carries it; a module that declares none shows nothing.
#[test]
fn taps_declared_by_a_module_are_in_the_plan() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    let recorder = bp.add(
        "recorder",
        Tapper {
            streams: vec!["color_image".to_owned()],
        },
    );
    bp.place(&recorder, Placement::process("rec").on_host("laptop"));
    let census = bp.add("census", Tapper { streams: vec![] });
    bp.place(&census, Placement::process("rec").on_host("laptop"));
    bp.autoconnect();
    let plan = build(&bp);
    let taps = |name: &str| plan.instance_named(name).map(|i| i.taps().clone());
    assert_eq!(
        taps("recorder"),
        Some(streamwire::Taps::Streams(vec!["color_image".to_owned()]))
    );
    assert_eq!(taps("census"), Some(streamwire::Taps::All));
    assert_eq!(taps("viewer"), Some(streamwire::Taps::None));
    let summary = serde_json::to_value(plan.summary()).unwrap();
    assert_eq!(
        summary["instances"][2]["taps"],
        serde_json::json!({"streams": ["color_image"]})
    );
    assert_eq!(summary["instances"][3]["taps"], "all");
    assert!(summary["instances"][1].get("taps").is_none(), "{summary}");
    insta::assert_snapshot!(plan);
}

#[test]
fn compressed_to_bytes() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("web", WebRelay { jpeg: In::new() });
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(
        (
            count(&plan, CodecKind::Encode),
            count(&plan, CodecKind::Decode)
        ),
        (1, 0)
    );
    assert_eq!(fed_by(&plan, "web", "jpeg"), "bytes jpeg");
    insta::assert_snapshot!(plan);
}

#[test]
fn raw_to_bytes() {
    let mut bp = Blueprint::new();
    bp.add(
        "cam",
        RawCamera {
            color_image: Out::new(),
        },
    );
    bp.add("web", WebRelay { jpeg: In::new() });
    // Global off does not remove the encoder a byte consumer needs.
    bp.compression(Compression::Off);
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(
        (
            count(&plan, CodecKind::Encode),
            count(&plan, CodecKind::Decode)
        ),
        (1, 0)
    );
    assert_eq!(fed_by(&plan, "web", "jpeg"), "bytes jpeg");
    insta::assert_snapshot!(plan);
}

/// Three pixel consumers and one byte consumer in two processes on two other hosts:
/// one encode, one decode per receiving process.
fn fan_out() -> Blueprint {
    let mut bp = Blueprint::new();
    let cam = bp.add("cam", camera());
    bp.place(&cam, Placement::process("camera"));
    for name in ["detector", "tracker"] {
        let v = bp.add(name, viewer());
        bp.place(&v, Placement::process("perception").on_host("base_station"));
    }
    let display = bp.add("display", viewer());
    let web = bp.add("web", WebRelay { jpeg: In::new() });
    bp.place(&display, Placement::process("ui").on_host("laptop"));
    bp.place(&web, Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    bp
}

#[test]
fn fan_out_to_three_pixel_consumers_and_one_byte_consumer() {
    let plan = build(&fan_out());
    assert_eq!(
        count(&plan, CodecKind::Encode),
        1,
        "encode once, share the bytes"
    );
    assert_eq!(
        count(&plan, CodecKind::Decode),
        2,
        "one decode per receiving process"
    );
    for (instance, port, want) in [
        ("detector", "frames", "decoded jpeg"),
        ("tracker", "frames", "decoded jpeg"),
        ("display", "frames", "decoded jpeg"),
        ("web", "jpeg", "bytes jpeg"),
    ] {
        assert_eq!(fed_by(&plan, instance, port), want, "{instance}.{port}");
    }
    insta::assert_snapshot!(plan);
}

#[test]
fn fan_out_as_dot() {
    insta::assert_snapshot!(build(&fan_out()).to_dot());
}

#[test]
fn two_consumers_wanting_two_codecs() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let web = bp.add("web", WebRelay { jpeg: In::new() });
    let archive = bp.add("archive", Archiver { exact: In::new() });
    bp.place(&web, Placement::process("ui").on_host("laptop"));
    bp.place(
        &archive,
        Placement::process("recorder").on_host("base_station"),
    );
    bp.autoconnect();
    let plan = build(&bp);
    let mut encoded: Vec<_> = plan
        .codec_nodes()
        .map(|c| (c.codec.name(), c.encoded_stream.clone()))
        .collect();
    encoded.sort();
    assert_eq!(
        encoded,
        [
            ("jpeg", "color_image/compressed".to_owned()),
            ("zstd", "color_image/compressed/zstd".to_owned())
        ]
    );
    insta::assert_snapshot!(plan);
}

#[test]
fn lossless_input_keeps_its_link_raw() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let calibrator = bp.add("calibrator", Calibrator { frames: In::new() });
    let display = bp.add("display", viewer());
    bp.place(&calibrator, Placement::process("ui").on_host("laptop"));
    bp.place(&display, Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "calibrator", "frames"), "raw");
    assert_eq!(fed_by(&plan, "display", "frames"), "decoded jpeg");
    assert!(
        plan.notes()
            .iter()
            .any(|n| matches!(n, Note::LossyPixels { input, .. } if input == "display.frames"))
    );
    assert!(
        !plan
            .notes()
            .iter()
            .any(|n| matches!(n, Note::LossyPixels { input, .. } if input == "calibrator.frames"))
    );
    insta::assert_snapshot!(plan);
}

#[test]
fn depth_through_the_lossless_codec() {
    let mut bp = Blueprint::new();
    bp.add("depth_cam", DepthCamera { depth: Out::new() });
    let mapper = bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    bp.place(
        &mapper,
        Placement::process("mapping").on_host("base_station"),
    );
    bp.autoconnect();
    let plan = build(&bp);
    // Lossless codec: a lossless input may receive it compressed.
    assert_eq!(fed_by(&plan, "mapper", "depth"), "decoded zstd");
    assert!(
        !plan
            .notes()
            .iter()
            .any(|n| matches!(n, Note::LossyPixels { .. }))
    );
    insta::assert_snapshot!(plan);
}

// ---------------------------------------------------------------------------------------
// Settings.

#[test]
fn per_stream_setting_compresses_a_plain_output_with_parameters() {
    let mut bp = Blueprint::new();
    bp.add(
        "cam",
        RawCamera {
            color_image: Out::new(),
        },
    );
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    bp.stream(
        "color_image",
        StreamSettings::new()
            .compression(Compression::Auto)
            .codec::<Image, Jpeg>()
            .param("jpeg_quality", 90)
            .param("max_width", 640),
    );
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "viewer", "frames"), "decoded jpeg");
    insta::assert_snapshot!(plan);
}

#[test]
fn a_bit_rate_budget_is_in_the_plan_with_where_it_came_from() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    bp.codec_default("max_bitrate", "6.4M");
    bp.stream(
        "color_image",
        StreamSettings::new().param("min_quality", 30),
    );
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "viewer", "frames"), "decoded jpeg");
    insta::assert_snapshot!(plan);
}

#[test]
fn a_bad_bit_rate_budget_is_refused_at_build_naming_the_stream() {
    for (key, value) in [
        ("max_bitrate", "fast"),
        ("max_bitrate", "0"),
        ("max_bitrate", "200G"),
        ("min_quality", "90"),
    ] {
        let mut bp = Blueprint::new();
        bp.add("cam", camera());
        let viewer = bp.add("viewer", viewer());
        bp.place(&viewer, Placement::process("ui").on_host("laptop"));
        let mut settings = StreamSettings::new().param(key, value);
        if key == "min_quality" {
            settings = settings.param("max_bitrate", "1M");
        }
        bp.stream("color_image", settings);
        bp.autoconnect();
        let error = build_error(&bp);
        assert!(
            error.contains("color_image") && error.contains(key),
            "{error}"
        );
    }
}

#[test]
fn global_on_compresses_in_process_links_and_per_stream_off_beats_it() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("viewer", viewer());
    bp.add("depth_cam", DepthCamera { depth: Out::new() });
    bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    bp.compression(Compression::On);
    bp.stream("depth", StreamSettings::new().compression(Compression::Off));
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "viewer", "frames"), "decoded jpeg");
    assert_eq!(fed_by(&plan, "mapper", "depth"), "raw");
    insta::assert_snapshot!(plan);
}

#[test]
fn auto_keeps_same_host_links_raw_and_compresses_cross_host_ones() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let near = bp.add("near", viewer());
    let far = bp.add("far", viewer());
    bp.place(&near, Placement::process("ui"));
    bp.place(&far, Placement::process("ui").on_host("base_station"));
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "near", "frames"), "raw");
    assert_eq!(fed_by(&plan, "far", "frames"), "decoded jpeg");
    insta::assert_snapshot!(plan);
}

#[test]
fn auto_table_can_compress_same_host_links() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let near = bp.add("near", viewer());
    let far = bp.add("far", viewer());
    bp.place(&near, Placement::process("ui"));
    bp.place(&far, Placement::process("ui").on_host("base_station"));
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "near", "frames"), "decoded jpeg");
    assert_eq!(fed_by(&plan, "far", "frames"), "decoded jpeg");
    assert_eq!(count(&plan, CodecKind::Encode), 1, "one encode for both");
    insta::assert_snapshot!(plan);
}

#[test]
fn namespaces_remaps_and_explicit_connections() {
    let mut bp = Blueprint::new();
    let left = bp.namespace("left").add("cam", camera());
    let right = bp.namespace("right").add("cam", camera());
    // Explicit connection, whatever the names.
    let stereo = bp.add("stereo_viewer", viewer());
    bp.connect(right.color_image, stereo.frames);
    // A remap to an absolute name, matched by autoconnect.
    bp.remap(left.color_image, "/front/color_image");
    let front = bp.add("front_viewer", viewer());
    bp.remap(front.frames, "front/color_image");
    bp.autoconnect();
    let plan = build(&bp);
    assert_eq!(fed_by(&plan, "stereo_viewer", "frames"), "raw");
    assert_eq!(fed_by(&plan, "front_viewer", "frames"), "raw");
    let names: Vec<_> = plan.instances().map(|i| i.name.clone()).collect();
    assert_eq!(
        names,
        ["left/cam", "right/cam", "stereo_viewer", "front_viewer"]
    );
    insta::assert_snapshot!(plan);
}

#[test]
fn filters_do_not_feed_themselves() {
    /// Drops frames: an input and an output share the name `color_image`.
    #[derive(Module)]
    struct Throttle {
        #[port(name = "color_image")]
        pub input: In<Image>,
        #[port(name = "color_image")]
        pub output: Out<Image>,
    }
    let mut bp = Blueprint::new();
    bp.add(
        "throttle",
        Throttle {
            input: In::new(),
            output: Out::new(),
        },
    );
    bp.autoconnect();
    let message = build_error(&bp);
    assert!(message.contains("fed by nobody"), "{message}");
}

#[test]
fn optional_inputs_are_listed_and_can_be_errors() {
    let mut bp = Blueprint::new();
    bp.add("depth_cam", DepthCamera { depth: Out::new() });
    bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    bp.autoconnect();
    let plan = build(&bp);
    assert!(
        plan.notes()
            .iter()
            .any(|n| matches!(n, Note::UnfedOptional { input, .. } if input == "mapper.odometry"))
    );
    bp.unfed_optional(Report::Error);
    insta::assert_snapshot!(build_error(&bp));
}

// ---------------------------------------------------------------------------------------
// Build errors: each rendered as the user sees it.

#[test]
fn error_two_producers() {
    let mut bp = Blueprint::new();
    bp.add("front_cam", camera());
    bp.add("rear_cam", camera());
    bp.add("viewer", viewer());
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_one_name_two_message_types() {
    let mut bp = Blueprint::new();
    bp.add("lidar", Lidar { points: Out::new() });
    bp.add("confused", ImageOnPoints { frames: In::new() });
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_input_fed_by_nobody_with_a_suggestion() {
    let mut bp = Blueprint::new();
    bp.add("lidar", Lidar { points: Out::new() });
    bp.add("segmenter", Segmenter { cloud: In::new() });
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_input_fed_by_nobody_without_autoconnect() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("viewer", viewer());
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_input_connected_twice() {
    let mut bp = Blueprint::new();
    let a = bp.add("cam_a", camera());
    let b = bp.add(
        "cam_b",
        RawCamera {
            color_image: Out::new(),
        },
    );
    bp.remap(b.color_image, "other");
    let v = bp.add("viewer", viewer());
    bp.connect(a.color_image, v.frames)
        .connect(b.color_image, v.frames);
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_names() {
    let mut bp = Blueprint::new();
    bp.add("front-cam", camera());
    bp.add("viewer", viewer());
    bp.add("viewer", viewer());
    let v = bp.add("v2", viewer());
    bp.remap(v.frames, "color image");
    bp.remap_stream("viewr", "color_image", "x");
    bp.remap_stream("viewer", "colour_image", "x");
    bp.place_named("nobody", Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_handle_from_another_blueprint() {
    let mut other = Blueprint::new();
    let foreign = other.add("cam", camera());
    let mut bp = Blueprint::new();
    let v = bp.add("viewer", viewer());
    bp.connect(foreign.color_image, v.frames);
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn a_hand_made_handle_with_no_such_port_is_an_error_not_a_panic() {
    let mut bp = Blueprint::new();
    let cam = bp.add("cam", camera());
    let v = bp.add("viewer", viewer());
    let bogus: streamwire::PortHandle<In<Image>> = streamwire::PortHandle::new(v.id(), 7);
    bp.connect(cam.color_image, bogus);
    let message = build_error(&bp);
    assert!(
        message.contains("`connect` was given a port or instance this blueprint does not have"),
        "{message}"
    );
}

#[test]
fn error_lossless_input_and_forced_compression() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let calibrator = bp.add("calibrator", Calibrator { frames: In::new() });
    bp.place(&calibrator, Placement::process("ui").on_host("laptop"));
    bp.stream(
        "color_image",
        StreamSettings::new().compression(Compression::On),
    );
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_lossy_pixels_as_error() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let v = bp.add("viewer", viewer());
    bp.place(&v, Placement::process("ui").on_host("laptop"));
    bp.lossy_pixels(Report::Error);
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_codec_settings() {
    let mut bp = Blueprint::new();
    bp.add(
        "raw_cam",
        RawCamera {
            color_image: Out::new(),
        },
    );
    let v = bp.add("viewer", viewer());
    bp.place(&v, Placement::process("ui").on_host("laptop"));
    bp.add("depth_cam", DepthCamera { depth: Out::new() });
    let m = bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    bp.place(&m, Placement::process("ui").on_host("laptop"));
    bp.add("lidar", Lidar { points: Out::new() });
    // Compress a plain output without naming a codec.
    bp.stream(
        "color_image",
        StreamSettings::new().compression(Compression::On),
    );
    // A JPEG parameter out of range for depth's codec, and a typo in a stream name.
    bp.stream("depth", StreamSettings::new().param("level", 99));
    bp.stream("colour_image", StreamSettings::new());
    // A codec for another message.
    bp.stream("points", StreamSettings::new().codec::<Image, Jpeg>());
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_parameters_for_a_stream_without_a_codec() {
    let mut bp = Blueprint::new();
    bp.add(
        "cam",
        RawCamera {
            color_image: Out::new(),
        },
    );
    bp.stream(
        "color_image",
        StreamSettings::new().param("jpeg_quality", 90),
    );
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_unknown_codec_parameter() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.stream("color_image", StreamSettings::new().param("quality", 90));
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_encoded_name_taken() {
    /// Produces a stream named like the camera's encoded stream.
    #[derive(Module)]
    struct Impostor {
        #[port(name = "color_image/compressed")]
        pub jpeg: Out<CompressedImage>,
    }
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("impostor", Impostor { jpeg: Out::new() });
    let v = bp.add("viewer", viewer());
    bp.place(&v, Placement::process("ui").on_host("laptop"));
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_remap_makes_two_inputs_share_a_stream() {
    /// Two inputs.
    #[derive(Module)]
    struct Fusion {
        pub left: In<Image>,
        pub right: In<Image>,
    }
    let mut bp = Blueprint::new();
    let f = bp.add(
        "fusion",
        Fusion {
            left: In::new(),
            right: In::new(),
        },
    );
    bp.remap(f.right, "left");
    insta::assert_snapshot!(build_error(&bp));
}

// ---------------------------------------------------------------------------------------
// QoS: defaults by message kind, overrides, checks.

/// Wants every frame, reliably, and keeps a deeper queue.
#[derive(Module)]
pub struct Recorder {
    #[port(name = "color_image", reliable, depth = 30)]
    pub frames: In<Image>,
}

/// A camera whose output is reliable, so a reliable input may listen.
#[derive(Module)]
pub struct ReliableCamera {
    #[port(reliable)]
    pub color_image: Out<Compressed<Image>>,
}

/// Publishes odometry (state: reliable, volatile by default).
#[derive(Module)]
pub struct Base {
    pub odometry: Out<Odometry>,
}

/// Wants the odometry sent before it joined.
#[derive(Module)]
pub struct LateJoiner {
    #[port(transient_local)]
    pub odometry: In<Odometry>,
}

#[test]
fn qos_in_plans_defaults_by_kind_and_port_overrides() {
    let mut bp = Blueprint::new();
    bp.add(
        "cam",
        ReliableCamera {
            color_image: Out::new(),
        },
    );
    let recorder = bp.add("recorder", Recorder { frames: In::new() });
    bp.place(
        &recorder,
        Placement::process("recorder").on_host("base_station"),
    );
    bp.add("depth_cam", DepthCamera { depth: Out::new() });
    bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    bp.add(
        "base",
        Base {
            odometry: Out::new(),
        },
    );
    bp.autoconnect();
    let plan = build(&bp);
    let port = |instance: &str, field: &str| {
        let node = plan.instance_named(instance).unwrap();
        let port = node.port_named(field).unwrap();
        (port.qos, port.qos_origin.to_string())
    };
    let (recorder_qos, origin) = port("recorder", "frames");
    assert_eq!(recorder_qos.reliability, streamwire::Reliability::Reliable);
    assert_eq!(recorder_qos.history, streamwire::History::KeepLast(30));
    assert_eq!(
        origin,
        "#[port] reliability, depth; sensor defaults otherwise"
    );
    let (depth_qos, origin) = port("mapper", "depth");
    assert_eq!(depth_qos.history, streamwire::History::KeepLast(1));
    assert_eq!(origin, "sensor defaults");
    let (odometry_qos, origin) = port("mapper", "odometry");
    assert_eq!(odometry_qos.history, streamwire::History::KeepLast(10));
    assert_eq!(origin, "state defaults");
    // The encode node keeps what the strictest consumer it serves keeps (the recorder's
    // depth 30), with the producer's reliability and durability otherwise.
    let encoder = plan
        .codec_nodes()
        .find(|c| c.kind == CodecKind::Encode)
        .unwrap();
    let cam_qos = port("cam", "color_image").0;
    assert_eq!(encoder.qos.history, streamwire::History::KeepLast(30));
    assert_eq!(encoder.qos.reliability, cam_qos.reliability);
    assert_eq!(encoder.qos.durability, cam_qos.durability);
    insta::assert_snapshot!(plan);
}

#[test]
fn error_incompatible_qos() {
    let mut bp = Blueprint::new();
    // A best-effort camera (sensor default) feeding a reliable input.
    bp.add("cam", camera());
    bp.add("recorder", Recorder { frames: In::new() });
    // A volatile output (state default) feeding a transient-local input.
    bp.add(
        "base",
        Base {
            odometry: Out::new(),
        },
    );
    bp.add(
        "late",
        LateJoiner {
            odometry: In::new(),
        },
    );
    bp.autoconnect();
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn incompatible_qos_can_be_let_through_and_is_listed() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("recorder", Recorder { frames: In::new() });
    bp.incompatible_qos(Report::Warn);
    bp.autoconnect();
    let plan = build(&bp);
    let notes: Vec<String> = plan.notes().iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "incompatible qos: cam.color_image feeds recorder.frames on `color_image`, but the \
          output is best_effort (it may drop messages) and the input wants reliable delivery"
        ]
    );
    assert!(plan.to_string().contains("incompatible qos warn"));
}

// ---------------------------------------------------------------------------------------
// One mistake, one error; did you mean.

/// A temperature, under a wire name that another type also claims.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, Message)]
#[message(name = "acme/Temperature")]
pub struct Temperature {
    pub celsius: f32,
}

/// Claims `acme/Temperature` too.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, Message)]
#[message(name = "acme/Temperature")]
pub struct Heat {
    pub joules: f32,
}

/// Publishes temperatures.
#[derive(Module)]
pub struct Thermometer {
    pub temperature: Out<Temperature>,
}

/// Publishes heat.
#[derive(Module)]
pub struct Calorimeter {
    pub heat: Out<Heat>,
}

#[test]
fn error_duplicate_wire_names() {
    let mut bp = Blueprint::new();
    bp.add(
        "thermometer",
        Thermometer {
            temperature: Out::new(),
        },
    );
    bp.add("calorimeter", Calorimeter { heat: Out::new() });
    insta::assert_snapshot!(build_error(&bp));
}

#[test]
fn error_bad_parameter_does_not_hide_a_lossless_conflict() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let calibrator = bp.add("calibrator", Calibrator { frames: In::new() });
    bp.place(&calibrator, Placement::process("ui").on_host("laptop"));
    bp.stream(
        "color_image",
        StreamSettings::new()
            .compression(Compression::On)
            .param("quality", 90),
    );
    bp.autoconnect();
    let message = build_error(&bp);
    assert!(message.contains("has no parameter `quality`"), "{message}");
    assert!(message.contains("is lossless"), "{message}");
    insta::assert_snapshot!(message);
}

#[test]
fn error_did_you_mean_a_stream_under_another_namespace() {
    let mut bp = Blueprint::new();
    bp.namespace("left").add("cam", camera());
    bp.namespace("right").add("cam", camera());
    // A typo in the namespace, through the encoded stream's name.
    let web = bp.add("web", WebRelay { jpeg: In::new() });
    bp.remap(web.jpeg, "rigth/color_image/compressed");
    bp.add("lidar", Lidar { points: Out::new() });
    // A segmenter in a namespace listening to `front/points`, which exists only outside it.
    let front = bp
        .namespace("front")
        .add("segmenter", Segmenter { cloud: In::new() });
    bp.remap(front.cloud, "points");
    // The only point-cloud stream, under a name far from the one asked for.
    let s = bp.add("segmenter", Segmenter { cloud: In::new() });
    bp.remap(s.cloud, "scan");
    bp.autoconnect();
    let message = build_error(&bp);
    assert!(
        message.contains("did you mean `right/color_image/compressed`"),
        "{message}"
    );
    assert!(message.contains("did you mean `points` (the same name in another namespace)"));
    assert!(message.contains("did you mean `points` (the only stream of `PointCloud`)"));
    insta::assert_snapshot!(message);
}

#[test]
fn debug_of_a_build_error_is_its_readable_text() {
    let mut bp = Blueprint::new();
    bp.add("viewer", viewer());
    let error = bp.build().unwrap_err();
    assert_eq!(format!("{error:?}"), error.to_string());
    assert!(format!("{error:?}").starts_with("blueprint error: input `viewer.frames`"));
}

// ---------------------------------------------------------------------------------------
// The plan as the runtime's input: per process, by id, as data.

#[test]
fn per_process_view_of_the_fan_out() {
    let plan = build(&fan_out());
    let processes = plan.processes();
    let names: Vec<String> = processes
        .iter()
        .map(|p| p.placement().to_string())
        .collect();
    assert_eq!(
        names,
        ["base_station/perception", "laptop/ui", "localhost/camera"]
    );
    // What leaves the camera process is the encoded stream, once per receiving process
    // and once for the byte consumer.
    let camera = plan.process(&Placement::process("camera")).unwrap();
    assert_eq!(camera.outgoing_links().count(), 3);
    assert!(camera.outgoing_links().all(|l| l.payload.is_encoded()));
    assert_eq!(camera.incoming_links().count(), 0);
    let ui = plan
        .process(&Placement::process("ui").on_host("laptop"))
        .unwrap();
    assert_eq!(
        ui.instances().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        ["display", "web"]
    );
    assert!(plan.process(&Placement::process("nowhere")).is_none());
    let text: Vec<String> = processes.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn plan_summary_as_json() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    let viewer = bp.add("viewer", viewer());
    bp.place(&viewer, Placement::process("ui").on_host("laptop"));
    bp.stream(
        "color_image",
        StreamSettings::new().param("jpeg_quality", 90),
    );
    bp.autoconnect();
    let summary = build(&bp).summary();
    let json = serde_json::to_string_pretty(&summary).expect("a summary serializes");
    let back: streamwire::PlanSummary = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, summary);
    insta::assert_snapshot!(json);
}

#[test]
fn links_name_their_ends_by_id() {
    let plan = build(&fan_out());
    for link in plan.links() {
        assert_eq!(plan.link(link.id).map(|l| l.id), Some(link.id));
        for end in [link.from, link.to] {
            match end {
                Endpoint::Port { instance, port } => {
                    assert!(plan.port(instance, port).is_some(), "{end:?}");
                }
                Endpoint::Codec(id) => assert!(plan.codec_node(id).is_some(), "{end:?}"),
                other => panic!("an end this test does not know: {other:?}"),
            }
        }
    }
    let web = plan.instance_named("web").unwrap();
    let jpeg = web.port_named("jpeg").unwrap();
    let feed = plan
        .feed(Endpoint::Port {
            instance: web.id,
            port: jpeg.index,
        })
        .unwrap();
    assert_eq!(
        plan.endpoint_name(feed.from),
        "[encode color_image/compressed]"
    );
    assert_eq!(plan.endpoint_name(feed.to), "web.jpeg");
}

// ---------------------------------------------------------------------------------------
// Properties: whatever the placement and settings, the plan obeys the rules.

#[derive(Debug, Clone)]
struct Scenario {
    /// Process index (0..3) and host index (0..2) per consumer.
    placements: Vec<(u8, u8)>,
    /// Per consumer: 0 pixels, 1 lossless pixels, 2 JPEG bytes, 3 zstd bytes.
    kinds: Vec<u8>,
    global: Compression,
    stream: Option<Compression>,
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::Auto),
        Just(Compression::On),
        Just(Compression::Off)
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (1usize..8)
        .prop_flat_map(|n| {
            (
                proptest::collection::vec((0u8..3, 0u8..2), n),
                proptest::collection::vec(0u8..4, n),
                compression(),
                proptest::option::of(compression()),
            )
        })
        .prop_map(|(placements, kinds, global, stream)| Scenario {
            placements,
            kinds,
            global,
            stream,
        })
}

proptest! {
    #[test]
    fn codec_rules_hold_for_any_placement_and_settings(s in scenario()) {
        let mut bp = Blueprint::new();
        bp.add("cam", camera());
        let mut pixel_processes = std::collections::BTreeSet::new();
        let mut lossless_forced = false;
        for (i, (&(process, host), &kind)) in s.placements.iter().zip(&s.kinds).enumerate() {
            let name = format!("c{i}");
            let placement = Placement::process(format!("p{process}")).on_host(format!("h{host}"));
            match kind {
                0 => { let x = bp.add(&name, viewer()); bp.place(&x, placement.clone()); }
                1 => {
                    let x = bp.add(&name, Calibrator { frames: In::new() });
                    bp.place(&x, placement.clone());
                    // `on` compresses every pixel link, in-process ones included.
                    lossless_forced |= s.stream == Some(Compression::On);
                }
                2 => { let x = bp.add(&name, WebRelay { jpeg: In::new() }); bp.place(&x, placement.clone()); }
                _ => { let x = bp.add(&name, Archiver { exact: In::new() }); bp.place(&x, placement.clone()); }
            }
            if kind == 0 {
                pixel_processes.insert(placement);
            }
        }
        bp.compression(s.global);
        if let Some(mode) = s.stream {
            bp.stream("color_image", StreamSettings::new().compression(mode));
        }
        bp.autoconnect();
        let plan = match bp.build() {
            Ok(plan) => plan,
            // The one legitimate failure: a lossless input under a per-stream `on`.
            Err(e) => {
                prop_assert!(lossless_forced, "unexpected build error: {e}");
                prop_assert!(e.to_string().contains("is lossless"), "{e}");
                return Ok(());
            }
        };
        prop_assert!(plan.verify().is_ok(), "{:?}", plan.verify());
        // Encode at most once per codec (jpeg and zstd here).
        let encodes: Vec<_> = plan.codec_nodes().filter(|c| c.kind == CodecKind::Encode).collect();
        prop_assert!(encodes.len() <= 2);
        let mut codecs: Vec<_> = encodes.iter().map(|c| c.codec.name()).collect();
        codecs.dedup();
        prop_assert_eq!(codecs.len(), encodes.len());
        // Decode at most once per receiving process, only where someone wants pixels.
        for decode in plan.codec_nodes().filter(|c| c.kind == CodecKind::Decode) {
            prop_assert!(pixel_processes.contains(&decode.placement));
        }
        // Byte consumers always get their bytes, whatever the settings.
        for (i, &kind) in s.kinds.iter().enumerate() {
            let name = format!("c{i}");
            let got = match kind {
                0 | 1 => fed_by(&plan, &name, "frames"),
                _ => fed_by(&plan, &name, if kind == 2 { "jpeg" } else { "exact" }),
            };
            match kind {
                1 => prop_assert_eq!(got, "raw"),
                2 => prop_assert_eq!(got, "bytes jpeg"),
                3 => prop_assert_eq!(got, "bytes zstd"),
                _ => prop_assert!(got == "raw" || got == "decoded jpeg"),
            }
        }
    }
}

/// Records every frame: keep-all, so a slow disk holds the camera back.
#[derive(Module)]
pub struct FrameLogger {
    #[port(name = "color_image", keep_all)]
    pub frames: In<Image>,
}

#[test]
fn a_keep_all_input_on_a_fan_out_is_listed_as_blocking() {
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("viewer", Viewer { frames: In::new() });
    bp.add("logger", FrameLogger { frames: In::new() });
    bp.autoconnect();
    let plan = build(&bp);
    let blocking: Vec<String> = plan
        .notes()
        .iter()
        .filter(|n| matches!(n, Note::BlockingFanOut { .. }))
        .map(ToString::to_string)
        .collect();
    insta::assert_snapshot!(blocking.join("\n"), @"blocking input on a fan-out: logger.frames keeps all of `color_image`; when its queue is full it holds the producer back (up to the keep-all deadline), delaying the other 1 consumer");

    // Alone on its stream it blocks nobody else: nothing to list.
    let mut bp = Blueprint::new();
    bp.add("cam", camera());
    bp.add("logger", FrameLogger { frames: In::new() });
    bp.autoconnect();
    let plan = build(&bp);
    assert!(
        !plan
            .notes()
            .iter()
            .any(|n| matches!(n, Note::BlockingFanOut { .. }))
    );
}

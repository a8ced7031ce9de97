//! Every thread of a run works inside a `tracing` span that names its process, instance,
//! stream and port (the failure policy in ARCHITECTURE.md): read here through a real
//! subscriber, as a user's log output would show them.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{ByteSink, Camera, GUARD, MjpegCamera, Viewer, balanced, jpeg_frames};
use parking_lot::Mutex;
use streamwire_core::In;
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, WireFormat};
use streamwire_runtime::{EndReason, RunOptions, RunReport, Runtime, ThreadKind, WireDirection};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

/// A span as the subscriber saw it: its name and fields, as text.
type Seen = (String, BTreeMap<String, String>);

/// Keeps every span made while it is the default subscriber.
#[derive(Clone, Default)]
struct SpanRecorder(Arc<Mutex<Vec<Seen>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber> Layer<S> for SpanRecorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .push((attrs.metadata().name().to_owned(), fields));
    }
}

fn field<'a>(span: &'a Seen, name: &str) -> &'a str {
    span.1.get(name).map_or("", String::as_str)
}

/// Runs `bp` to its end under a recording subscriber: its report and every span made.
fn run_recording_spans(bp: Blueprint) -> (RunReport, Vec<Seen>) {
    let recorder = SpanRecorder::default();
    let subscriber = Registry::default().with(recorder.clone());
    let report = tracing::subscriber::with_default(subscriber, || {
        let handle = Runtime::start(bp.into_runnable().unwrap(), RunOptions::default()).unwrap();
        balanced(handle.wait_timeout(GUARD))
    });
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    let spans = recorder.0.lock().clone();
    (report, spans)
}

fn find<'a>(spans: &'a [Seen], name: &str, key: &str, value: &str) -> &'a Seen {
    spans
        .iter()
        .find(|s| s.0 == name && field(s, key) == value)
        .unwrap_or_else(|| panic!("no `{name}` span with {key} = {value} in {spans:#?}"))
}

/// A camera in one process and a viewer in another, the wire compressed: the encoder's
/// and the decoder's spans name the ports they serve. The stream is keep-last, so the
/// encoder's thread puts it on the wire (inside its span): there is no sender thread.
#[test]
fn codec_and_instance_spans_name_process_stream_and_port() {
    let mut bp = Blueprint::new();
    let camera = bp.add("camera", Camera::new(3, Duration::from_millis(2)));
    let viewer = bp.add("viewer", Viewer::new());
    bp.place(&camera, Placement::process("robot"))
        .place(&viewer, Placement::process("ui"));
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    let (report, spans) = run_recording_spans(bp);
    let find = |name: &str, key: &str, value: &str| find(&spans, name, key, value);
    let encode = find("codec", "role", "encode");
    assert_eq!(field(encode, "port"), "camera.color_image");
    assert_eq!(field(encode, "stream"), "color_image");
    assert!(field(encode, "process").ends_with("robot"), "{encode:?}");
    let decode = find("codec", "role", "decode");
    assert_eq!(field(decode, "port"), "viewer.frames");
    assert!(field(decode, "process").ends_with("ui"), "{decode:?}");
    let instance = find("instance", "instance", "viewer");
    assert!(field(instance, "process").ends_with("ui"), "{instance:?}");
    assert!(
        !spans.iter().any(|s| s.0 == "sender"),
        "a keep-last stream has no sender thread: {spans:#?}"
    );
    let out = report
        .stats
        .wire
        .iter()
        .find(|w| w.direction == WireDirection::Out)
        .unwrap();
    assert!(out.sent_by_producer, "{report}");
}

/// A keep-all stream between two processes has a sender thread, whose span names the
/// port it serves.
#[test]
fn a_keep_all_streams_sender_span_names_its_port() {
    let mut bp = Blueprint::new();
    let camera = bp.add("camera", MjpegCamera::new(jpeg_frames(3)));
    let sink = bp.add(
        "sink",
        ByteSink {
            jpeg: In::new(),
            received: Arc::default(),
        },
    );
    bp.place(&camera, Placement::process("robot"))
        .place(&sink, Placement::process("ui"));
    bp.lossy_path(streamwire_graph::Report::Warn);
    bp.autoconnect();
    let (report, spans) = run_recording_spans(bp);
    let sender = find(&spans, "sender", "stream", "color_image/compressed");
    assert_eq!(field(sender, "port"), "camera.color_image");
    assert!(field(sender, "process").ends_with("robot"), "{sender:?}");
    let threads: Vec<(&str, ThreadKind)> = report
        .stats
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.kind))
        .collect();
    assert!(
        threads.contains(&("send color_image/compressed", ThreadKind::Sender)),
        "{report}"
    );
}

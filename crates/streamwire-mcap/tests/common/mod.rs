//! What the recording tests share: finite sources whose i-th message is known, a run of
//! them with a recorder, and reading a recording back.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use streamwire::msgs::{
    CompressedImage, DepthEncoding, DepthImage, Odometry, Pose, Quaternion, Twist, Vector3,
};
use streamwire::prelude::*;
use streamwire::runtime::{RunOptions, RunReport, Runtime};
use streamwire_mcap::McapRecorder;

/// Messages each source publishes.
pub const COUNT: u64 = 30;

/// The i-th frame's bytes: a 64x48 JPEG of a gradient that depends on i (the recorder
/// must keep them as they are).
pub fn jpeg_bytes(i: u64) -> Bytes {
    use streamwire::engines::jpeg::{EncodeOptions, PixelFormat, PixelsRef, encode};
    let pixels: Vec<u8> = (0..64 * 48 * 3)
        .map(|k: u64| (k / 3 + i * 9) as u8)
        .collect();
    let pixels = PixelsRef::new(64, 48, 64 * 3, PixelFormat::Rgb8, &pixels).expect("pixels");
    let options = EncodeOptions {
        quality: 75,
        ..EncodeOptions::default()
    };
    Bytes::from(encode(&pixels, &options).expect("jpeg").data)
}

/// The i-th sensor stamp of every source.
pub fn stamp(i: u64) -> Timestamp {
    Timestamp::from_nanos(1_700_000_000_000_000_000 + i * 50_000_000)
}

pub fn frame(i: u64) -> CompressedImage {
    CompressedImage::new("jpeg", jpeg_bytes(i), 64, 48)
        .expect("frame")
        .with_stamp(stamp(i))
        .with_frame_id("camera")
}

pub fn depth(i: u64) -> DepthImage {
    let pixels: Vec<u8> = (0..8 * 6)
        .flat_map(|k: u64| ((k + i * 100) as u16).to_le_bytes())
        .collect();
    DepthImage::from_packed(8, 6, DepthEncoding::Mm16, pixels)
        .expect("depth")
        .with_stamp(stamp(i))
        .with_frame_id("depth")
}

pub fn odometry(i: u64) -> Odometry {
    let pose = Pose {
        position: Vector3::new(i as f64 * 0.1, 0.0, 0.0),
        orientation: Quaternion::from_yaw(i as f64 * 0.01),
    };
    let twist = Twist {
        linear: Vector3::new(1.0, 0.0, 0.0),
        angular: Vector3::new(0.0, 0.0, 0.1),
    };
    Odometry::new("odom", "base_link", pose, twist)
        .expect("odometry")
        .with_stamp(stamp(i))
}

/// Publishes message number `*sent` with `publish` and counts it, or finishes once `COUNT`
/// were published: the step of every source below.
fn publish_counted<T, E: Into<streamwire::NodeError>>(
    sent: &mut u64,
    cx: &mut Context<'_>,
    publish: impl FnOnce(u64) -> Result<T, E>,
) -> NodeResult {
    if *sent == COUNT {
        cx.finish();
        return Ok(());
    }
    publish(*sent).map_err(Into::into)?;
    *sent += 1;
    Ok(())
}

/// Publishes `COUNT` ready-made JPEG frames on `color_image`, then finishes.
#[derive(Module, Default)]
pub struct FrameSource {
    pub color_image: Out<Compressed<Image>>,
    #[state]
    pub sent: u64,
}

impl Node for FrameSource {
    fn trigger(&self) -> Trigger {
        Trigger::rate(200.0)
    }
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let port = &self.color_image;
        publish_counted(&mut self.sent, cx, |n| port.publish_encoded(frame(n)))
    }
}

/// Publishes `COUNT` depth images on `depth`, then finishes.
#[derive(Module, Default)]
pub struct DepthSource {
    pub depth: Out<DepthImage>,
    #[state]
    pub sent: u64,
}

impl Node for DepthSource {
    fn trigger(&self) -> Trigger {
        Trigger::rate(200.0)
    }
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let port = &self.depth;
        publish_counted(&mut self.sent, cx, |n| port.publish(depth(n)))
    }
}

/// Publishes `COUNT` odometry messages on `odometry`, then finishes.
#[derive(Module, Default)]
pub struct OdometrySource {
    pub odometry: Out<Odometry>,
    #[state]
    pub sent: u64,
}

impl Node for OdometrySource {
    fn trigger(&self) -> Trigger {
        Trigger::rate(200.0)
    }
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let port = &self.odometry;
        publish_counted(&mut self.sent, cx, |n| port.publish(odometry(n)))
    }
}

/// Runs the three sources with a recorder writing `path` until every module finished
/// (at most 30 s), and returns the report.
pub fn record_run(path: &Path, recorder: McapRecorder) -> RunReport {
    let mut bp = Blueprint::new();
    bp.add("camera", FrameSource::default());
    bp.add("depth_sensor", DepthSource::default());
    bp.add("odometer", OdometrySource::default());
    bp.add(
        "recorder",
        McapRecorder {
            path: path.to_owned(),
            ..recorder
        },
    );
    let runnable = bp.into_runnable().expect("plan");
    let handle = Runtime::start(runnable, RunOptions::default()).expect("start");
    handle.wait_timeout(Duration::from_secs(30))
}

/// A counter of `instance` in the report.
pub fn counter(report: &RunReport, instance: &str, name: &str) -> u64 {
    report
        .stats
        .instances
        .iter()
        .find(|i| i.name == instance)
        .and_then(|i| i.counters.iter().find(|(n, _)| n == name))
        .map_or(0, |(_, v)| *v)
}

/// Messages published on `stream`, from the report.
pub fn published(report: &RunReport, stream: &str) -> u64 {
    report
        .stats
        .outputs
        .iter()
        .filter(|o| o.stream == stream)
        .map(|o| o.published)
        .sum()
}

/// A recording read back with the mcap crate: per topic, its schema name and encoding,
/// message encoding and the messages' CDR in file order.
#[derive(Debug, Default)]
pub struct ReadBack {
    pub profile: String,
    pub topics: BTreeMap<String, TopicBack>,
    pub metadata: BTreeMap<String, Vec<BTreeMap<String, String>>>,
}

#[derive(Debug, Default)]
pub struct TopicBack {
    pub schema_name: String,
    pub schema_encoding: String,
    pub message_encoding: String,
    pub messages: Vec<Bytes>,
}

pub fn read_back(path: &Path) -> ReadBack {
    let bytes = std::fs::read(path).expect("read recording");
    let mut back = ReadBack::default();
    let summary = mcap::Summary::read(&bytes)
        .expect("summary")
        .expect("a summary section");
    for index in &summary.metadata_indexes {
        let record = mcap::read::metadata(&bytes, index).expect("metadata");
        back.metadata
            .entry(record.name)
            .or_default()
            .push(record.metadata);
    }
    let header = mcap::read::LinearReader::new(&bytes)
        .expect("reader")
        .next()
        .expect("a header")
        .expect("header");
    if let mcap::records::Record::Header(h) = header {
        back.profile = h.profile;
    }
    for message in mcap::MessageStream::new(&bytes).expect("stream") {
        let message = message.expect("message");
        let schema = message.channel.schema.as_ref().expect("schema");
        let topic = back
            .topics
            .entry(message.channel.topic.clone())
            .or_insert_with(|| TopicBack {
                schema_name: schema.name.clone(),
                schema_encoding: schema.encoding.clone(),
                message_encoding: message.channel.message_encoding.clone(),
                messages: Vec::new(),
            });
        topic.messages.push(Bytes::from(message.data.into_owned()));
    }
    back
}

/// What a [`Collector`] received: (stream, sensor stamp in ns), in arrival order per stream.
pub type Arrivals = std::sync::Arc<parking_lot::Mutex<Vec<(&'static str, u64)>>>;

/// Receives the replay's outputs, every message (reliable, keep-all), noting its stamp.
#[derive(Module, Default)]
pub struct Collector {
    #[port(reliable, keep_all)]
    pub color_image: In<Compressed<Image>>,
    #[port(reliable, keep_all)]
    pub depth: In<DepthImage>,
    #[port(reliable, keep_all, optional)]
    pub cloud: In<streamwire::msgs::PointCloud>,
    #[port(reliable, keep_all)]
    pub odometry: In<Odometry>,
    #[port(reliable, keep_all, optional)]
    pub transforms: In<streamwire::msgs::Transforms>,
    /// Where it notes arrivals (the test keeps a clone).
    #[state]
    pub arrivals: Arrivals,
}

impl Node for Collector {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let mut arrivals = self.arrivals.lock();
        while let Some(m) = self.color_image.recv()? {
            arrivals.push(("color_image", m.message.stamp().as_nanos()));
        }
        while let Some(m) = self.depth.recv()? {
            arrivals.push(("depth", m.message.stamp().as_nanos()));
        }
        while let Some(m) = self.cloud.recv()? {
            arrivals.push(("cloud", m.message.stamp().as_nanos()));
        }
        while let Some(m) = self.odometry.recv()? {
            arrivals.push(("odometry", m.message.stamp().as_nanos()));
        }
        while let Some(m) = self.transforms.recv()? {
            let stamp = m
                .message
                .transforms()
                .first()
                .map_or(0, |t| t.stamp.as_nanos());
            arrivals.push(("transforms", stamp));
        }
        Ok(())
    }
}

/// Replays `source` into a [`Collector`] until the source finished (at most 60 s); the
/// report and the arrivals.
pub fn replay_run(source: streamwire_mcap::McapSource) -> (RunReport, Vec<(&'static str, u64)>) {
    let arrivals = Arrivals::default();
    let mut bp = Blueprint::new();
    bp.add("replay", source);
    bp.add(
        "collector",
        Collector {
            arrivals: arrivals.clone(),
            ..Collector::default()
        },
    );
    bp.autoconnect();
    let runnable = bp.into_runnable().expect("plan");
    let handle = Runtime::start(runnable, RunOptions::default()).expect("start");
    let report = handle.wait_timeout(Duration::from_secs(60));
    let got = std::mem::take(&mut *arrivals.lock());
    (report, got)
}

//! The replay source: an MCAP file (a streamwire recording, or a rosbag2 bag's `.mcap`)
//! played through a blueprint at its recorded rate.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::Bytes;
use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{Compressed, Context, Counter, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_macros::Module;
use streamwire_msgs::{
    CompressedImage, DepthImage, Detections, Image, LogRecord, OccupancyGrid, Odometry, PointCloud,
    Transforms, Twist,
};
use streamwire_ros2::{DecodeError, RosMessage, SensorImage};

use crate::scan::{FileMessages, Inventory, ReadEnd, ReadError, scan};

/// The outputs of [`McapSource`], each with the ROS 2 types it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Output {
    /// `color_image`: `sensor_msgs/msg/CompressedImage` (bytes passed through) or a colour
    /// `sensor_msgs/msg/Image`.
    ColorImage,
    /// `depth`: a `16UC1` or `32FC1` `sensor_msgs/msg/Image`.
    Depth,
    /// `cloud`: `sensor_msgs/msg/PointCloud2`.
    Cloud,
    /// `odometry`: `nav_msgs/msg/Odometry`.
    Odometry,
    /// `transforms`: `tf2_msgs/msg/TFMessage` (`/tf` and `/tf_static` alike).
    Transforms,
    /// `map`: `nav_msgs/msg/OccupancyGrid`.
    Map,
    /// `detections`: `vision_msgs/msg/Detection2DArray`.
    Detections,
    /// `cmd_vel`: `geometry_msgs/msg/Twist`.
    CmdVel,
    /// `log`: `rcl_interfaces/msg/Log` (`/rosout`).
    Log,
}

impl Output {
    /// Every output.
    pub const ALL: [Output; 9] = [
        Output::ColorImage,
        Output::Depth,
        Output::Cloud,
        Output::Odometry,
        Output::Transforms,
        Output::Map,
        Output::Detections,
        Output::CmdVel,
        Output::Log,
    ];

    /// Its name: the output port and, unless the blueprint remaps it, its stream.
    pub fn name(self) -> &'static str {
        match self {
            Output::ColorImage => "color_image",
            Output::Depth => "depth",
            Output::Cloud => "cloud",
            Output::Odometry => "odometry",
            Output::Transforms => "transforms",
            Output::Map => "map",
            Output::Detections => "detections",
            Output::CmdVel => "cmd_vel",
            Output::Log => "log",
        }
    }

    /// The output named `name`.
    pub fn named(name: &str) -> Option<Output> {
        Output::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether it takes messages of `ros_type` (`pkg/msg/Type` or `pkg/Type`).
    pub fn takes(self, ros_type: &str) -> bool {
        let ros_type = ros_type.replace("/msg/", "/");
        let takes: &[&str] = match self {
            Output::ColorImage => &["sensor_msgs/CompressedImage", "sensor_msgs/Image"],
            Output::Depth => &["sensor_msgs/Image"],
            Output::Cloud => &["sensor_msgs/PointCloud2"],
            Output::Odometry => &["nav_msgs/Odometry"],
            Output::Transforms => &["tf2_msgs/TFMessage"],
            Output::Map => &["nav_msgs/OccupancyGrid"],
            Output::Detections => &["vision_msgs/Detection2DArray"],
            Output::CmdVel => &["geometry_msgs/Twist"],
            Output::Log => &["rcl_interfaces/Log"],
        };
        takes.contains(&ros_type.as_str())
    }
}

/// Every output's name, comma separated.
fn output_names() -> String {
    let names: Vec<&str> = Output::ALL.iter().map(|o| o.name()).collect();
    names.join(", ")
}

/// How a file's topics map to the source's outputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicMap {
    /// Topic to output.
    pub mapped: BTreeMap<String, Output>,
    /// Topics not replayed, each with why.
    pub skipped: BTreeMap<String, String>,
}

/// Maps each topic (`(topic, ROS 2 type)`) to an output: first the `explicit` table
/// (topic to output name), then by name (the topic without its leading `/` and a trailing
/// `/compressed` is an output's name: `/odometry`, `/color_image/compressed`), then by
/// type when exactly one topic left has a type that exactly one free output takes
/// (`/camera/color/image_raw/compressed` to `color_image`; `/tf` and `/tf_static` both to
/// `transforms`). The rest is skipped, with the reason.
///
/// ```
/// use std::collections::BTreeMap;
/// use streamwire_mcap::{Output, map_topics};
/// let topics = [
///     ("/camera/color/image_raw/compressed".to_owned(), "sensor_msgs/msg/CompressedImage".to_owned()),
///     ("/odom".to_owned(), "nav_msgs/msg/Odometry".to_owned()),
///     ("/chatter".to_owned(), "std_msgs/msg/String".to_owned()),
/// ];
/// let map = map_topics(&topics, &BTreeMap::new())?;
/// assert_eq!(map.mapped["/camera/color/image_raw/compressed"], Output::ColorImage);
/// assert_eq!(map.mapped["/odom"], Output::Odometry);
/// assert!(map.skipped["/chatter"].contains("std_msgs/msg/String"));
/// # Ok::<(), streamwire_mcap::ReplayError>(())
/// ```
pub fn map_topics(
    topics: &[(String, String)],
    explicit: &BTreeMap<String, String>,
) -> Result<TopicMap, ReplayError> {
    let mut map = TopicMap::default();
    for (topic, output_name) in explicit {
        let Some((_, ros_type)) = topics.iter().find(|(t, _)| t == topic) else {
            let known: Vec<&str> = topics.iter().map(|(t, _)| t.as_str()).collect();
            return Err(ReplayError::Map(format!(
                "`{topic}` is not a topic of the file (topics: {})",
                known.join(", ")
            )));
        };
        let output = Output::named(output_name).ok_or_else(|| {
            ReplayError::Map(format!(
                "`{output_name}` is not an output of the replay (outputs: {})",
                output_names()
            ))
        })?;
        if !output.takes(ros_type) {
            return Err(ReplayError::Map(format!(
                "`{topic}` carries {ros_type}, which `{output_name}` does not take"
            )));
        }
        map.mapped.insert(topic.clone(), output);
    }
    let left = |map: &TopicMap| -> Vec<(String, String)> {
        topics
            .iter()
            .filter(|(t, _)| !map.mapped.contains_key(t))
            .cloned()
            .collect()
    };
    for (topic, ros_type) in left(&map) {
        let trimmed = topic.trim_start_matches('/');
        let base = trimmed.strip_suffix("/compressed").unwrap_or(trimmed);
        if let Some(output) = Output::named(base).filter(|o| o.takes(&ros_type)) {
            map.mapped.insert(topic, output);
        }
    }
    // Types only one output takes first (a compressed image before an image, which
    // colour and depth both take), in file order otherwise.
    let mut by_type = left(&map);
    by_type.sort_by_key(|(_, ros_type)| Output::ALL.iter().filter(|o| o.takes(ros_type)).count());
    for (topic, ros_type) in by_type {
        let taken: Vec<Output> = map.mapped.values().copied().collect();
        let free: Vec<Output> = Output::ALL
            .into_iter()
            .filter(|o| o.takes(&ros_type) && (!taken.contains(o) || *o == Output::Transforms))
            .collect();
        let same_type = left(&map).iter().filter(|(_, t)| *t == ros_type).count();
        let transforms = free == [Output::Transforms];
        match free.as_slice() {
            [output] if same_type == 1 || transforms => {
                map.mapped.insert(topic, *output);
            }
            [] if Output::ALL.iter().any(|o| o.takes(&ros_type)) => {
                map.skipped.insert(
                    topic,
                    format!("{ros_type}: its output is taken by another topic"),
                );
            }
            [] => {
                map.skipped
                    .insert(topic, format!("{ros_type}: no built-in message maps it"));
            }
            _ => {
                map.skipped.insert(
                    topic,
                    format!("{ros_type}: several topics or outputs could take it; map it with --replay-map"),
                );
            }
        }
    }
    Ok(map)
}

/// Reads a remap table written as text, `topic=output` entries separated by commas
/// (`--replay-map`).
///
/// ```
/// let map = streamwire_mcap::parse_topic_map("/camera/image/compressed=color_image, /odom=odometry")?;
/// assert_eq!(map["/odom"], "odometry");
/// assert!(streamwire_mcap::parse_topic_map("/odom").is_err());
/// # Ok::<(), streamwire_mcap::ReplayError>(())
/// ```
pub fn parse_topic_map(text: &str) -> Result<BTreeMap<String, String>, ReplayError> {
    let mut map = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((topic, output)) = entry.split_once('=') else {
            return Err(ReplayError::Map(format!(
                "`{entry}` is not `topic=output` (`/camera/color/image_raw/compressed=color_image`)"
            )));
        };
        map.insert(topic.trim().to_owned(), output.trim().to_owned());
    }
    Ok(map)
}

/// Why a replay cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The file could not be read.
    #[error("the replay cannot read its file")]
    Read(#[from] ReadError),
    /// A mapping entry names a topic or an output that does not exist, or does not fit.
    #[error("replay map: {0}")]
    Map(String),
    /// A setting out of range.
    #[error("replay: {0}")]
    Config(String),
    /// A record inside the file is damaged (a bad CRC, an impossible length or opcode)
    /// though the file was written to its end: the replay played what came before, then
    /// fails the run (a file cut short, by contrast, ends the replay as its end would).
    #[error(
        "{path} is corrupt: {reason}, found at byte {at} of {length}; replayed {played} messages, those before the damage"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        reason: String,
        /// The bytes read when it said it: the damaged record ends there or before.
        at: u64,
        /// The file's length.
        length: u64,
        /// Messages published before the damage (this run's passes together).
        played: u64,
    },
}

/// Plays an MCAP file (a streamwire recording, or a rosbag2 bag's `.mcap`) at its recorded
/// rate, each topic on the output [`map_topics`] gives it.
///
/// At start it reads the file once ([`scan`]: topics, types, counts) and logs the topics
/// it skips (types no built-in message maps, or not mapped); then it reads messages in
/// file order, one chunk in memory, and publishes each when its log time comes, relative
/// to the first message played, divided by `rate`. Header stamps stay the messages' sensor
/// stamps; compressed images are published as their bytes (consumers that want pixels get
/// one decode). `start_s` skips the first seconds of the file, `duration_s` ends the
/// playback that many file seconds after its start, `looping` starts again at the end.
/// A file cut short is played up to its last complete chunk, and the end says so (a warning
/// and the counter `cut_short`); a file damaged inside (written to its end, so not a cut)
/// is played up to the damage, then fails the run with [`ReplayError::Corrupt`] (where,
/// and how many messages were played). Its outputs are reliable and keep all, as `ros2 bag
/// play`'s publishers are: an input that asks for every message (reliable, keep-all) gets
/// every one, codec nodes on the way included (a slow one holds the playback back, up to
/// the run's keep-all deadline, rather than dropping); the sensors' default inputs (best
/// effort, keep-last) take what they keep up with. Counters: `played`, `skipped` (messages of skipped
/// topics), `undecodable` (CDR that does not read as its type), `cut_short`, `loops`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct McapSource {
    /// Colour images (compressed bytes passed through, or pixels).
    #[port(reliable, keep_all)]
    pub color_image: Out<Compressed<Image>>,
    /// Depth images.
    #[port(reliable, keep_all)]
    pub depth: Out<Compressed<DepthImage>>,
    /// Point clouds.
    #[port(reliable, keep_all)]
    pub cloud: Out<PointCloud>,
    /// Odometry.
    #[port(reliable, keep_all)]
    pub odometry: Out<Odometry>,
    /// Transforms (`/tf`, `/tf_static`).
    #[port(reliable, keep_all)]
    pub transforms: Out<Transforms>,
    /// Occupancy grids.
    #[port(reliable, keep_all)]
    pub map: Out<OccupancyGrid>,
    /// 2D detections.
    #[port(reliable, keep_all)]
    pub detections: Out<Detections>,
    /// Velocity commands.
    #[port(reliable, keep_all)]
    pub cmd_vel: Out<Twist>,
    /// Log records.
    #[port(reliable, keep_all)]
    pub log: Out<LogRecord>,
    /// The file.
    #[config]
    pub path: PathBuf,
    /// Topic to output name, before the defaults (`/camera/color/image_raw/compressed` to
    /// `color_image`).
    #[config]
    pub topic_map: BTreeMap<String, String>,
    /// Playback speed: 2 plays twice as fast (default 1).
    #[config(finite, range = 0.01..=1000.0)]
    pub rate: f64,
    /// Start again after the last message (default false: the source finishes).
    #[config]
    pub looping: bool,
    /// Skip the file's first this-many seconds (default 0).
    #[config(finite, range = 0.0..=1e9)]
    pub start_s: f64,
    /// Play this many seconds of the file from `start_s` (default: to its end).
    #[config(finite, range = 0.0..=1e9)]
    pub duration_s: Option<f64>,
    /// The outputs played, by name (default, empty: every output); the topics mapped to
    /// the others are skipped (a blueprint that takes only the camera from a file).
    #[config]
    pub outputs: Vec<String>,
    /// The playback in progress.
    #[state]
    pub playback: Option<Playback>,
}

impl Default for McapSource {
    fn default() -> Self {
        McapSource {
            color_image: Out::new(),
            depth: Out::new(),
            cloud: Out::new(),
            odometry: Out::new(),
            transforms: Out::new(),
            map: Out::new(),
            detections: Out::new(),
            cmd_vel: Out::new(),
            log: Out::new(),
            path: PathBuf::new(),
            topic_map: BTreeMap::new(),
            rate: 1.0,
            looping: false,
            start_s: 0.0,
            duration_s: None,
            outputs: Vec::new(),
            playback: None,
        }
    }
}

impl std::fmt::Debug for McapSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapSource")
            .field("path", &self.path)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

/// Its counters.
struct Counters {
    played: Counter,
    skipped: Counter,
    undecodable: Counter,
    cut_short: Counter,
    loops: Counter,
}

/// A playback in progress: the reader, the message waiting for its time, the clock origin.
pub struct Playback {
    reader: FileMessages,
    /// The file, named in errors.
    path: PathBuf,
    map: TopicMap,
    /// The next message to publish, read ahead.
    next: Option<mcap::Message<'static>>,
    /// The file's log time played first (the file's first plus `start_s`).
    file_origin: u64,
    /// Where playback ends, in file log time.
    file_end: Option<u64>,
    /// The run clock when the current pass began.
    run_origin: Option<Timestamp>,
    counters: Counters,
    /// Set once a failed read was logged.
    cut_reported: bool,
    /// Set when the pass ended at damage inside the file: the run fails with it.
    corrupt: Option<ReplayError>,
    /// Messages that do not decode: the first of a burst logged, the rest counted.
    undecodable: BurstLog,
}

impl McapSource {
    /// Checks the settings, scans the file and maps its topics: what `start` does first,
    /// callable before a run to fail early.
    pub fn prepare(&self) -> Result<(Inventory, TopicMap), ReplayError> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(ReplayError::Config(format!(
                "rate must be a positive number, not {}",
                self.rate
            )));
        }
        if !(self.start_s.is_finite() && self.start_s >= 0.0) {
            return Err(ReplayError::Config(format!(
                "start_s must be 0 or more, not {}",
                self.start_s
            )));
        }
        if let Some(d) = self.duration_s.filter(|d| !(d.is_finite() && *d > 0.0)) {
            return Err(ReplayError::Config(format!(
                "duration_s must be a positive number, not {d}"
            )));
        }
        let inventory = scan(&self.path)?;
        let topics: Vec<(String, String)> = inventory
            .topics
            .iter()
            .map(|t| (t.topic.clone(), t.ros_type.clone()))
            .collect();
        let mut map = map_topics(&topics, &self.topic_map)?;
        if !self.outputs.is_empty() {
            let mut played = Vec::new();
            for name in &self.outputs {
                played.push(Output::named(name).ok_or_else(|| {
                    ReplayError::Config(format!(
                        "`{name}` is not an output of the replay (outputs: {})",
                        output_names()
                    ))
                })?);
            }
            let not_played: Vec<(String, Output)> = map
                .mapped
                .iter()
                .filter(|(_, output)| !played.contains(output))
                .map(|(topic, output)| (topic.clone(), *output))
                .collect();
            for (topic, output) in not_played {
                map.mapped.remove(&topic);
                map.skipped.insert(
                    topic,
                    format!(
                        "maps to `{}`, which this replay does not play",
                        output.name()
                    ),
                );
            }
        }
        Ok((inventory, map))
    }

    /// Publishes `message` on its output; `false` when it is not replayed. Its bytes
    /// move into the message (the reader owns a copy of each; no second one here).
    fn publish(
        &self,
        output: Output,
        message: mcap::Message<'static>,
    ) -> Result<bool, PublishError> {
        // A message without a schema cannot have been mapped: its type is "".
        let compressed = message
            .channel
            .schema
            .as_ref()
            .is_some_and(|s| s.name.ends_with("CompressedImage"));
        let bytes = Bytes::from(message.data.into_owned());
        match output {
            Output::ColorImage if compressed => {
                self.color_image
                    .publish_encoded(CompressedImage::from_cdr(bytes)?)?;
            }
            Output::ColorImage => match SensorImage::from_cdr(bytes)? {
                SensorImage::Color(image) => {
                    self.color_image.publish(image)?;
                }
                SensorImage::Depth(_) => return Ok(false),
            },
            Output::Depth => match SensorImage::from_cdr(bytes)? {
                SensorImage::Depth(depth) => {
                    self.depth.publish(depth)?;
                }
                SensorImage::Color(_) => return Ok(false),
            },
            Output::Cloud => {
                self.cloud.publish(PointCloud::from_cdr(bytes)?)?;
            }
            Output::Odometry => {
                self.odometry.publish(Odometry::from_cdr(bytes)?)?;
            }
            Output::Transforms => {
                self.transforms.publish(Transforms::from_cdr(bytes)?)?;
            }
            Output::Map => {
                self.map.publish(OccupancyGrid::from_cdr(bytes)?)?;
            }
            Output::Detections => {
                self.detections.publish(Detections::from_cdr(bytes)?)?;
            }
            Output::CmdVel => {
                self.cmd_vel.publish(Twist::from_cdr(bytes)?)?;
            }
            Output::Log => {
                self.log.publish(LogRecord::from_cdr(bytes)?)?;
            }
        }
        Ok(true)
    }
}

/// Why one message was not published.
#[derive(Debug, thiserror::Error)]
enum PublishError {
    /// Its CDR does not read as its type: counted, the playback goes on.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The output refused it (the run is stopping): the step ends.
    #[error(transparent)]
    Port(#[from] streamwire_core::PortError),
}

impl Playback {
    /// The next message of the pass, skipping those before the origin; `None` at the
    /// pass's end (the file's, `duration_s`'s, or a cut).
    fn read(&mut self) -> Option<mcap::Message<'static>> {
        loop {
            let message = match self.reader.messages.next()? {
                Ok(message) => message,
                Err(error) => {
                    self.end_early(&error);
                    return None;
                }
            };
            if message.log_time < self.file_origin {
                continue;
            }
            if self.file_end.is_some_and(|end| message.log_time > end) {
                return None;
            }
            return Some(message);
        }
    }

    /// A pass that ends at the reader's `error`: a file cut short is logged once and
    /// counted (`cut_short`), its playback goes on as at the file's end; damage inside a
    /// file written to its end is kept in `corrupt`, which fails the run.
    fn end_early(&mut self, error: &mcap::McapError) {
        match self.reader.classify(error) {
            ReadEnd::CutShort(reason) => {
                if !self.cut_reported {
                    tracing::warn!(
                        error = %reason,
                        "the file ends cut short: replayed up to its last complete chunk"
                    );
                    self.counters.cut_short.increment();
                    self.cut_reported = true;
                }
            }
            ReadEnd::Corrupt { reason, at, length } => {
                self.corrupt = Some(ReplayError::Corrupt {
                    path: self.path.clone(),
                    reason,
                    at,
                    length,
                    played: self.counters.played.get(),
                });
            }
        }
    }

    /// When `message` is due on the run clock.
    fn due(&self, message: &mcap::Message<'static>, rate: f64, origin: Timestamp) -> Timestamp {
        let offset = message.log_time.saturating_sub(self.file_origin) as f64 / rate;
        Timestamp::from_nanos(origin.as_nanos().saturating_add(offset as u64))
    }
}

impl Node for McapSource {
    fn trigger(&self) -> Trigger {
        // Messages leave within a millisecond of their time.
        Trigger::rate(1000.0)
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let _span = tracing::info_span!("mcap_replay", instance = %cx.instance_name()).entered();
        let (inventory, map) = self.prepare()?;
        for (topic, reason) in &map.skipped {
            tracing::warn!(topic, reason, "not replayed");
        }
        for (topic, output) in &map.mapped {
            tracing::info!(topic, output = output.name(), "replayed");
        }
        let first = inventory.topics.iter().map(|t| t.span.0).min().unwrap_or(0);
        let file_origin = first.saturating_add((self.start_s * 1e9) as u64);
        let file_end = self
            .duration_s
            .map(|d| file_origin.saturating_add((d * 1e9) as u64));
        let mut playback = Playback {
            reader: crate::scan::open(&self.path)?,
            path: self.path.clone(),
            map,
            next: None,
            file_origin,
            file_end,
            run_origin: None,
            counters: Counters {
                played: cx.counter("played"),
                skipped: cx.counter("skipped"),
                undecodable: cx.counter("undecodable"),
                cut_short: cx.counter("cut_short"),
                loops: cx.counter("loops"),
            },
            cut_reported: false,
            corrupt: None,
            undecodable: BurstLog::default(),
        };
        playback.next = playback.read();
        self.playback = Some(playback);
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(mut playback) = self.playback.take() else {
            cx.finish();
            return Ok(());
        };
        let now = cx.now();
        let origin = *playback.run_origin.get_or_insert(now);
        while let Some(message) = playback.next.take() {
            if playback.due(&message, self.rate, origin) > now {
                playback.next = Some(message);
                break;
            }
            let topic = message.channel.topic.clone();
            match playback.map.mapped.get(&topic).copied() {
                None => playback.counters.skipped.increment(),
                Some(output) => match self.publish(output, message) {
                    Ok(true) => playback.counters.played.increment(),
                    Ok(false) => playback.counters.skipped.increment(),
                    Err(PublishError::Decode(error)) => {
                        playback.counters.undecodable.increment();
                        if let Some(unsaid) = playback.undecodable.note() {
                            tracing::warn!(
                                error = %chain(&error),
                                %topic,
                                "a message does not decode as its type (counted in undecodable){}",
                                more_since(unsaid)
                            );
                        }
                    }
                    Err(PublishError::Port(error)) => return Err(error.into()),
                },
            }
            playback.next = playback.read();
        }
        if playback.next.is_none() {
            if let Some(corrupt) = playback.corrupt.take() {
                return Err(corrupt.into());
            }
            if !self.looping {
                cx.finish();
                return Ok(());
            }
            playback.reader = crate::scan::open(&self.path)?;
            playback.counters.loops.increment();
            playback.run_origin = None;
            playback.next = playback.read();
            if playback.next.is_none() {
                cx.finish();
                return Ok(());
            }
        }
        self.playback = Some(playback);
        Ok(())
    }
}

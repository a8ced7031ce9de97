//! The recorder module: taps streams and writes them to an MCAP file.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use streamwire_core::log::{BurstLog, chain, more_since};
use streamwire_core::{
    Context, Counter, Envelope, Message as _, Node, NodeResult, StreamTap, Taps,
};
use streamwire_macros::Module;
use streamwire_msgs::log_hub::{self, Origin};
use streamwire_msgs::{CompressedImage, Image};

use crate::writer::{DEFAULT_CHUNK_BYTES, METADATA_NAME, McapWriter, RecordCounts};
use crate::{AppSchema, ChunkCompression, RecordError, topic_of};

/// The longest the recorder, once the run stops, drains its taps: well inside the run's
/// stop deadline (2 s by default), so that the file is finished before the runtime gives
/// up on the recorder's thread. Once the run stops no hub of this process takes a message
/// any more (a publish is refused, a frame from another process is counted in flight at
/// stop), so a drain writes what the taps still hold and waits for each tapped stream to
/// close (its producer here finished, or its sender's stop frame arrived).
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

/// How long a tap thread waits for a message before it looks at the recorder's state.
const POLL: Duration = Duration::from_millis(100);

/// Records streams of the run to an MCAP file that ROS 2 tools and Foxglove read.
///
/// Taps each chosen stream (`streams`; empty: every stream) from the
/// recorder's own process, an image stream through its compressed form when the plan
/// encodes it (the bytes that travel), on one thread per stream (`sw mcap<i> <stream>`) that
/// writes into the file under one lock. A tap is a keep-last queue: a recorder that cannot
/// keep up drops there and never blocks a producer. Per stream, it counts `recorded:<stream>`
/// and `dropped:<stream>` (its queue's drops and every gap in the stream's sequence numbers,
/// messages published before it attached included), so that recorded plus dropped is what
/// was published while it listened (a message that reached its process after the run
/// stopped counts as dropped too). When the run stops it writes what its taps still hold,
/// until each tapped stream closed (at most 0.5 s), then writes the counts (metadata
/// record `streamwire`,
/// key `counts`), rosbag2's metadata record, and the summary. It finishes by itself once
/// every stream it records has ended.
///
/// It declares the streams it records as its taps (`Node::taps`: every stream, or
/// `streams`), which the plan carries, so that in a closed run of several processes its
/// process may subscribe to them wherever they are produced: placed in a blueprint, it
/// records the other processes' streams with nothing more to set.
///
/// `metadata` is written at start as the `streamwire` metadata record (`run` puts the plan
/// and the resolved configuration there).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct McapRecorder {
    /// The file to write (created, or truncated).
    #[config]
    pub path: PathBuf,
    /// The streams to record (default: every stream that can be recorded).
    #[config]
    pub streams: Vec<String>,
    /// Chunk compression (default zstd).
    #[config]
    pub compression: ChunkCompression,
    /// Bytes of a chunk before compression (default 4 MiB): memory the file holds back.
    #[config(range = 1024..=1_073_741_824)]
    pub chunk_bytes: u64,
    /// Written as the `streamwire` metadata record at start.
    #[config]
    pub metadata: BTreeMap<String, String>,
    /// The recording in progress.
    #[state]
    pub running: Option<Recording>,
}

impl Default for McapRecorder {
    fn default() -> Self {
        McapRecorder {
            path: PathBuf::from("recording.mcap"),
            streams: Vec::new(),
            compression: ChunkCompression::default(),
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            metadata: BTreeMap::new(),
            running: None,
        }
    }
}

impl std::fmt::Debug for McapRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapRecorder")
            .field("path", &self.path)
            .field("streams", &self.streams)
            .field("compression", &self.compression)
            .finish_non_exhaustive()
    }
}

/// One stream the recorder taps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordPlan {
    /// The stream, as counted (`color_image`).
    pub stream: String,
    /// The stream tapped (`color_image/compressed` for the bytes that travel).
    pub tapped: String,
    /// The message type asked of the tap (`None`: what the stream carries).
    pub message: Option<&'static str>,
    /// The JSON Schema its messages are written with, for a message without a ROS 2 type
    /// (an application's own); `None`: CDR under its ROS 2 type.
    pub app: Option<AppSchema>,
}

/// What a recorder taps, given the run's streams (`(name, message type)`, encoded forms
/// included) and the streams asked for (empty: every stream). Image streams are tapped
/// through their compressed form (`<stream>/compressed`) when the run has one; any other
/// encoded form (`depth/compressedDepth`: our `16UC1; zstd`, which ROS tools cannot read)
/// is left out, its stream recorded as pixels, and an encoded form is recorded in its own
/// right only when asked for by name. A message with a ROS 2 type is recorded as CDR; any
/// other (an application's own) as JSON under a JSON Schema of its serde form
/// ([`AppSchema`]). A stream that can be recorded neither way is skipped (returned) when
/// every stream is recorded, and an error when asked for by name.
///
/// ```
/// use streamwire_mcap::plan_recording;
/// let streams = vec![
///     ("color_image".to_owned(), "streamwire/Image"),
///     ("color_image/compressed".to_owned(), "streamwire/CompressedImage"),
///     ("depth".to_owned(), "streamwire/Image"),
///     ("depth/compressedDepth".to_owned(), "streamwire/CompressedImage"),
///     ("odometry".to_owned(), "streamwire/Odometry"),
///     ("beeps".to_owned(), "acme/Beep"),
/// ];
/// let (plan, skipped) = plan_recording(&streams, &[])?;
/// let tapped: Vec<&str> = plan.iter().map(|p| p.tapped.as_str()).collect();
/// assert_eq!(tapped, ["color_image/compressed", "depth", "odometry"]);
/// // `acme/Beep` is no message type of this program.
/// assert_eq!(skipped, ["beeps"]);
/// assert!(plan_recording(&streams, &["beeps".into()]).is_err());
/// assert!(plan_recording(&streams, &["lidar".into()]).is_err());
/// # Ok::<(), streamwire_mcap::RecordError>(())
/// ```
pub fn plan_recording(
    available: &[(String, &'static str)],
    asked: &[String],
) -> Result<(Vec<RecordPlan>, Vec<String>), RecordError> {
    let carries = |name: &str| {
        available
            .iter()
            .find(|(stream, _)| stream == name)
            .map(|(_, message)| *message)
    };
    // `color_image/compressed`, `depth/compressedDepth`, `color_image/compressed/png`: a
    // stream's name, a slash, a codec's suffix.
    let is_encoded_form = |name: &str| {
        name.match_indices('/')
            .any(|(at, _)| at > 0 && carries(&name[..at]).is_some())
    };
    let chosen: Vec<String> = if asked.is_empty() {
        available
            .iter()
            .map(|(stream, _)| stream.clone())
            .filter(|stream| !is_encoded_form(stream))
            .collect()
    } else {
        asked.to_vec()
    };
    let mut plan = Vec::new();
    let mut skipped = Vec::new();
    for stream in chosen {
        let Some(message) = carries(&stream) else {
            let known: Vec<&str> = available.iter().map(|(s, _)| s.as_str()).collect();
            return Err(RecordError::UnknownStream {
                stream,
                known: known.join(", "),
            });
        };
        let app = match streamwire_ros2::ros_type_of(message) {
            Some(_) => None,
            None => match AppSchema::of_type(message) {
                Ok(schema) => Some(schema),
                Err(_) if asked.is_empty() => {
                    skipped.push(stream);
                    continue;
                }
                Err(source) => return Err(RecordError::Unrecordable { stream, source }),
            },
        };
        let compressed = format!("{stream}/compressed");
        let entry = if message == Image::TYPE_NAME
            && carries(&compressed) == Some(CompressedImage::TYPE_NAME)
        {
            RecordPlan {
                stream,
                tapped: compressed,
                message: Some(CompressedImage::TYPE_NAME),
                app,
            }
        } else {
            RecordPlan {
                tapped: stream.clone(),
                stream,
                message: None,
                app,
            }
        };
        plan.push(entry);
    }
    Ok((plan, skipped))
}

/// The name under which a recorder records the run's own log records (on `/rosout`).
const LOGS: &str = "rosout";

/// The streams asked for without `rosout` (or `/rosout`), and whether it was asked for
/// while no stream of the run has that name: then the recorder records the run's own log
/// records, warnings and above of every process (the process's log hub), on `/rosout`.
fn asks_for_logs(asked: &[String], available: &[(String, &'static str)]) -> (Vec<String>, bool) {
    let is_logs = |name: &str| {
        let name = name.trim_start_matches('/');
        name == LOGS && !available.iter().any(|(s, _)| s == name)
    };
    let logs = asked.iter().any(|name| is_logs(name));
    let rest = asked
        .iter()
        .filter(|name| !is_logs(name))
        .cloned()
        .collect();
    (rest, logs)
}

/// What the recorder's threads share.
struct Shared {
    /// The file; `None` once finished.
    file: Mutex<Option<McapWriter>>,
    /// The first error writing the file, reported when the recorder stops.
    error: Mutex<Option<RecordError>>,
    /// Set by `stop`: drain, then end.
    draining: AtomicBool,
    /// When the drain gives up on producers that do not finish.
    drain_until: Mutex<Option<Instant>>,
}

/// One stream's thread and its counters.
struct StreamThread {
    stream: String,
    recorded: Counter,
    dropped: Counter,
    thread: JoinHandle<()>,
}

/// A recording in progress: its file and its threads.
pub struct Recording {
    shared: Arc<Shared>,
    threads: Vec<StreamThread>,
}

impl Node for McapRecorder {
    fn trigger(&self) -> streamwire_core::Trigger {
        // Only looks whether every recorded stream ended; the recording is on its threads.
        streamwire_core::Trigger::rate(10.0)
    }

    fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let _span = tracing::info_span!("mcap_record", instance = %cx.instance_name()).entered();
        let taps = cx.taps().ok_or(RecordError::NoTaps)?;
        let available = taps.streams();
        let (asked, logs) = asks_for_logs(&self.streams, &available);
        let (plan, skipped) = if logs && asked.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            plan_recording(&available, &asked)?
        };
        if !skipped.is_empty() {
            tracing::warn!(
                streams = %skipped.join(", "),
                "not recorded: their messages have no ROS 2 type and no JSON Schema (name \
                 them in `streams` to see why)"
            );
        }
        let mut file = McapWriter::create(&self.path, self.compression, self.chunk_bytes)?;
        if !self.metadata.is_empty() {
            file.write_metadata(METADATA_NAME, self.metadata.clone())?;
        }
        let shared = Arc::new(Shared {
            file: Mutex::new(Some(file)),
            error: Mutex::new(None),
            draining: AtomicBool::new(false),
            drain_until: Mutex::new(None),
        });
        let mut tapped: Vec<(String, Option<AppSchema>, Box<dyn StreamTap>)> = Vec::new();
        for entry in plan {
            let tap = taps.tap(&entry.tapped, entry.message)?;
            tapped.push((entry.stream, entry.app, tap));
        }
        if logs {
            let hub = log_hub::hub().subscribe(&[Origin::Local, Origin::Remote]);
            tapped.push((LOGS.to_owned(), None, Box::new(hub)));
        }
        let mut threads = Vec::new();
        for (index, (stream, app, tap)) in tapped.into_iter().enumerate() {
            let recorded = cx.counter(&format!("recorded:{stream}"));
            let dropped = cx.counter(&format!("dropped:{stream}"));
            let worker = TapWorker {
                instance: cx.instance_name().to_owned(),
                ends_at_drain: stream == LOGS,
                stream: stream.clone(),
                app,
                tap,
                shared: shared.clone(),
                recorded: recorded.clone(),
                dropped: dropped.clone(),
                next_seq: 0,
                failures: BurstLog::default(),
            };
            let thread = std::thread::Builder::new()
                .name(format!("sw mcap{index} {stream}"))
                .spawn(move || worker.run())
                .map_err(|source| RecordError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            threads.push(StreamThread {
                stream,
                recorded,
                dropped,
                thread,
            });
        }
        self.running = Some(Recording { shared, threads });
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        // The run's log records never end by themselves: a recorder of streams ends with
        // its streams, one of log records only alone with the run.
        let ended = self.running.as_ref().is_some_and(|r| {
            let mut streams = r.threads.iter().filter(|t| t.stream != LOGS).peekable();
            (streams.peek().is_some() || r.threads.is_empty())
                && streams.all(|t| t.thread.is_finished())
        });
        if ended {
            cx.finish();
        }
        Ok(())
    }

    /// The streams it records (every stream when none is named): declared so that a
    /// closed run of several processes lets the recorder's process subscribe to the
    /// other processes' streams, an image's encoded form included (what it records of
    /// a stream that travels compressed).
    fn taps(&self) -> Taps {
        Taps::streams_or_all(&self.streams)
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        running.finish().map_err(Into::into)
    }
}

impl Recording {
    /// Drains the taps, joins the threads, writes the counts and closes the file.
    fn finish(self) -> Result<(), RecordError> {
        *self.shared.drain_until.lock() = Some(Instant::now() + DRAIN_LIMIT);
        self.shared.draining.store(true, Ordering::SeqCst);
        let mut counts = RecordCounts::default();
        for t in self.threads {
            if t.thread.join().is_err() {
                tracing::error!(stream = %t.stream, "a recorder thread panicked");
            }
            counts.recorded.insert(t.stream.clone(), t.recorded.get());
            counts.dropped.insert(t.stream, t.dropped.get());
        }
        if let Some(error) = self.shared.error.lock().take() {
            return Err(error);
        }
        let Some(mut file) = self.shared.file.lock().take() else {
            return Ok(());
        };
        let counts = serde_json::to_string(&counts)
            .map_err(|e| RecordError::Config(format!("counts not serializable: {e}")))?;
        file.write_metadata(
            METADATA_NAME,
            BTreeMap::from([("counts".to_owned(), counts)]),
        )?;
        file.finish()
    }
}

/// One tapped stream's thread.
struct TapWorker {
    instance: String,
    stream: String,
    /// The JSON Schema of an application's message; `None`: CDR.
    app: Option<AppSchema>,
    tap: Box<dyn StreamTap>,
    shared: Arc<Shared>,
    recorded: Counter,
    dropped: Counter,
    /// The sequence number expected next: a jump is messages this recorder never saw.
    next_seq: u64,
    /// Ends as soon as nothing is left when the recorder drains (the run's log records,
    /// which never close).
    ends_at_drain: bool,
    /// Messages not written: the first of a burst logged, the rest counted.
    failures: BurstLog,
}

impl TapWorker {
    fn run(mut self) {
        let span =
            tracing::info_span!("mcap_record", instance = %self.instance, stream = %self.stream);
        let _entered = span.enter();
        // A gap in the sequence numbers is every message missed (the keep-last queue keeps
        // the newest, so its drops always show as gaps once the rest is drained).
        loop {
            let asked = Instant::now();
            match self.tap.recv_timeout(POLL) {
                Some(envelope) => self.record(&envelope),
                None if self.tap.is_closed() => break,
                None if self.shared.draining.load(Ordering::SeqCst) => {
                    let until = *self.shared.drain_until.lock();
                    if self.ends_at_drain || until.is_none_or(|until| Instant::now() >= until) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                // The run is stopping and the tap answers at once: wait for the drain.
                None if asked.elapsed() < POLL / 2 => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                None => {}
            }
        }
        // Published, and on the wire when the run stopped: never recorded.
        self.dropped.add(self.tap.in_flight_at_stop());
    }

    /// Writes one message, counting the messages its sequence number says were missed.
    fn record(&mut self, envelope: &Envelope) {
        let seq = envelope.header.seq;
        if seq > self.next_seq {
            self.dropped.add(seq - self.next_seq);
        }
        self.next_seq = self.next_seq.max(seq + 1);
        if self.app.is_some() {
            return self.record_app(envelope);
        }
        let encoded = match streamwire_ros2::encode_any(envelope.message.as_ref()) {
            Some(Ok(encoded)) => encoded,
            Some(Err(source)) => {
                let stream = self.stream.clone();
                self.fail(&RecordError::Encode { stream, source });
                return;
            }
            None => {
                let stream = self.stream.clone();
                let message = envelope.message.type_name();
                self.fail(&RecordError::NoRosType { stream, message });
                return;
            }
        };
        let (ros_type, cdr) = encoded;
        let topic = topic_of(&self.stream, ros_type);
        let time = envelope.header.publish_time.as_nanos();
        let written = match self.shared.file.lock().as_mut() {
            Some(file) => file.write(&topic, ros_type, time, time, &cdr),
            None => return self.dropped.increment(),
        };
        self.written(written);
    }

    /// Writes an application's message as JSON on `/<stream>`.
    fn record_app(&mut self, envelope: &Envelope) {
        let Some(schema) = &self.app else { return };
        let json = match schema.encode(envelope.message.as_ref()) {
            Ok(json) => json,
            Err(source) => {
                let stream = self.stream.clone();
                return self.fail(&RecordError::Json { stream, source });
            }
        };
        let topic = format!("/{}", self.stream);
        let time = envelope.header.publish_time.as_nanos();
        let written = match self.shared.file.lock().as_mut() {
            Some(file) => file.write_app(&topic, schema, time, time, &json),
            None => return self.dropped.increment(),
        };
        self.written(written);
    }

    /// Counts a write, or keeps its error (the first) for the recorder's stop.
    fn written(&mut self, written: Result<(), RecordError>) {
        match written {
            Ok(()) => self.recorded.increment(),
            Err(error) => {
                self.fail(&error);
                let mut first = self.shared.error.lock();
                if first.is_none() {
                    *first = Some(error);
                }
            }
        }
    }

    /// Counts a message not written, logging the first of a burst.
    fn fail(&mut self, error: &RecordError) {
        self.dropped.increment();
        if let Some(unsaid) = self.failures.note() {
            tracing::error!(
                error = %chain(error),
                "a message was not recorded (counted in dropped){}",
                more_since(unsaid)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rosout_asked_for_is_the_runs_log_records_unless_a_stream_has_that_name() {
        let streams = [("odometry".to_owned(), "streamwire/Odometry")];
        let asked = ["/rosout".to_owned(), "odometry".to_owned()];
        assert_eq!(
            asks_for_logs(&asked, &streams),
            (vec!["odometry".to_owned()], true)
        );
        let named = [("rosout".to_owned(), "streamwire/LogRecord")];
        assert_eq!(
            asks_for_logs(&["rosout".to_owned()], &named),
            (vec!["rosout".to_owned()], false)
        );
    }
}

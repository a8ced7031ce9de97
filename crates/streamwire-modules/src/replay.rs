//! Replay of recorded frames: a folder of numbered JPEG or PNG files played at the rate
//! they were recorded.
//!
//! ```no_run
//! use streamwire::prelude::*;
//! use streamwire_modules::replay::ReplaySource;
//!
//! let mut bp = Blueprint::new();
//! bp.add("replay", ReplaySource {
//!     dir: "../shared/data/cockatoo_720p/frames".into(),
//!     looping: true,
//!     ..ReplaySource::default()
//! });
//! ```

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::prelude::*;
use streamwire_codec::jpeg::{JpegDecoder, PixelFormat, Threads};
use streamwire_core::buffer::pools;
use streamwire_msgs::{CompressedImage, Image, ImageEncoding};

/// The file that gives each frame's recorded time: `index filename seconds` per line,
/// `#` comments; file names relative to the file's folder.
pub const TIMESTAMPS_FILE: &str = "timestamps.txt";

/// Why a replay cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// No timestamps file and no fps.
    #[error(
        "replay of {dir}: no {TIMESTAMPS_FILE} in the folder or its parent, so the frame rate is \
         unknown: give one (`fps` in the config, e.g. `replay.fps=20` or `--fps 20`), or add a \
         {TIMESTAMPS_FILE} with lines `index filename seconds`"
    )]
    NoRate {
        /// The folder.
        dir: PathBuf,
    },
    /// The folder holds no JPEG or PNG frames.
    #[error("replay of {dir}: no .jpg, .jpeg or .png frames in the folder")]
    NoFrames {
        /// The folder.
        dir: PathBuf,
    },
    /// A folder or file could not be read.
    #[error("replay: cannot read {path}: {source}")]
    Io {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A malformed timestamps file.
    #[error("{path}:{line}: {reason}")]
    Timestamps {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Pass-through publishes the files' JPEG bytes, and this frame is not a JPEG.
    #[error("replay: pass-through publishes JPEG bytes as they are, but {path} is not a JPEG")]
    PassThroughNeedsJpeg {
        /// The frame.
        path: PathBuf,
    },
    /// A setting out of range.
    #[error("replay: {0}")]
    Config(String),
}

/// Plays a folder of numbered JPEG or PNG frames at their recorded rate.
///
/// Timing comes from a [`TIMESTAMPS_FILE`] in the folder or its parent (the format of
/// `cockatoo_720p/timestamps.txt`), else from `fps`; without either, starting fails with
/// a [`ReplayError::NoRate`] saying how to give one. Frame `k` is due at the run clock's
/// time at the first step plus its recorded time divided by `rate`; its sensor stamp is
/// that due time (the recorded time shifted to now), so latency and drift are measurable.
///
/// A thread decodes frames ahead of playback into a ring bounded by `memory_cap_bytes`
/// (at least one frame is always held), so a publish costs what a camera driver's does.
/// In `pass_through` mode the files' JPEG bytes are published as ready-made
/// `CompressedImage`s (an MJPEG camera) and never decoded here.
///
/// If playback falls behind (a frame is still unpublished when the next one is due), it
/// skips to the run clock: the late frames are counted in `skipped_late`, never sent late.
/// An unreadable or corrupt file is counted in `unreadable`, logged once, and its slot
/// passes without a frame. Any resolution works, odd heights included.
///
/// Ports: `color_image` (`Out<Compressed<Image>>`). Counters: `published`,
/// `skipped_late`, `unreadable`, `ring_peak_bytes`.
///
/// The step runs every `poll_ms` of run-clock time (default 1 ms: frames leave within a
/// millisecond of their due time, for about a thousand cheap wake-ups a second).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct ReplaySource {
    /// The frames.
    pub color_image: Out<Compressed<Image>>,
    /// The folder of frames (or the folder holding the timestamps file).
    #[config]
    pub dir: PathBuf,
    /// Frames per second when the folder has no timestamps file (ignored when it has).
    #[config]
    pub fps: Option<f64>,
    /// Start again after the last frame (default false: the source finishes).
    #[config]
    pub looping: bool,
    /// Playback speed: 2 plays twice as fast (default 1).
    #[config]
    pub rate: f64,
    /// Skip the frames recorded in the first this-many seconds (default 0).
    #[config]
    pub start_offset_s: f64,
    /// Play at most this many frames, loops included (default: no limit).
    #[config]
    pub limit: Option<u64>,
    /// Bytes the decoded-ahead ring may hold (default 64 MiB, 23 frames of 720p rgb8).
    #[config]
    pub memory_cap_bytes: u64,
    /// Publish the JPEG bytes as they are instead of decoding (default false).
    #[config]
    pub pass_through: bool,
    /// How often the step looks at the clock, run-clock milliseconds (default 1).
    #[config]
    pub poll_ms: f64,
    /// The running playback.
    #[state]
    pub playback: Option<Playback>,
}

impl Default for ReplaySource {
    fn default() -> Self {
        ReplaySource {
            color_image: Out::new(),
            dir: PathBuf::new(),
            fps: None,
            looping: false,
            rate: 1.0,
            start_offset_s: 0.0,
            limit: None,
            memory_cap_bytes: 64 << 20,
            pass_through: false,
            poll_ms: 1.0,
            playback: None,
        }
    }
}

/// The frames to play and when, as found in the folder.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Each frame's file and its time in seconds from the first played frame.
    pub frames: Vec<(PathBuf, f64)>,
    /// How long one pass lasts before a loop starts again (last time plus one interval).
    pub loop_s: f64,
    /// Whether the times came from a timestamps file.
    pub recorded: bool,
}

impl ReplaySource {
    /// Reads the folder (file names and timestamps, no pixels) and checks the config: what
    /// `start` does first, callable before a run to fail early.
    pub fn scan(&self) -> Result<Schedule, ReplayError> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(ReplayError::Config(format!(
                "rate must be a positive number, not {}",
                self.rate
            )));
        }
        if !(self.poll_ms.is_finite() && self.poll_ms > 0.0) {
            return Err(ReplayError::Config(format!(
                "poll_ms must be a positive number, not {}",
                self.poll_ms
            )));
        }
        if !(self.start_offset_s.is_finite() && self.start_offset_s >= 0.0) {
            return Err(ReplayError::Config(format!(
                "start_offset_s must be 0 or more, not {}",
                self.start_offset_s
            )));
        }
        let (mut frames, recorded) = match find_timestamps(&self.dir) {
            Some(path) => (read_timestamps(&path)?, true),
            None => {
                let fps = self.fps.ok_or_else(|| ReplayError::NoRate {
                    dir: self.dir.clone(),
                })?;
                if !(fps.is_finite() && fps > 0.0) {
                    return Err(ReplayError::Config(format!(
                        "fps must be a positive number, not {fps}"
                    )));
                }
                let files = list_frames(&self.dir)?;
                let frames = files
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (p, i as f64 / fps))
                    .collect();
                (frames, false)
            }
        };
        if frames.is_empty() {
            return Err(ReplayError::NoFrames {
                dir: self.dir.clone(),
            });
        }
        let first = frames[0].1;
        frames.retain(|(_, t)| *t - first >= self.start_offset_s - 1e-9);
        let Some(&(_, base)) = frames.first() else {
            return Err(ReplayError::Config(format!(
                "start_offset_s {} is past the last frame",
                self.start_offset_s
            )));
        };
        for frame in &mut frames {
            frame.1 -= base;
        }
        if self.pass_through
            && let Some((path, _)) = frames.iter().find(|(p, _)| !is_jpeg(p))
        {
            return Err(ReplayError::PassThroughNeedsJpeg { path: path.clone() });
        }
        let mut gaps: Vec<f64> = frames.windows(2).map(|w| w[1].1 - w[0].1).collect();
        gaps.sort_by(f64::total_cmp);
        let interval = gaps
            .get(gaps.len() / 2)
            .copied()
            .filter(|g| *g > 0.0)
            .or(self.fps.map(|f| 1.0 / f))
            .unwrap_or(0.05);
        let loop_s = frames.last().map_or(0.0, |f| f.1) + interval;
        Ok(Schedule {
            frames,
            loop_s,
            recorded,
        })
    }
}

fn find_timestamps(dir: &Path) -> Option<PathBuf> {
    let here = dir.join(TIMESTAMPS_FILE);
    if here.is_file() {
        return Some(here);
    }
    let parent = dir.parent()?.join(TIMESTAMPS_FILE);
    parent.is_file().then_some(parent)
}

/// Parses a timestamps file: `index filename seconds`, `#` comments, times not
/// decreasing.
pub fn read_timestamps(path: &Path) -> Result<Vec<(PathBuf, f64)>, ReplayError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
        path: path.to_owned(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut frames: Vec<(PathBuf, f64)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| ReplayError::Timestamps {
            path: path.to_owned(),
            line: n + 1,
            reason,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, file, seconds] = fields[..] else {
            return Err(bad(format!(
                "expected `index filename seconds`, got `{line}`"
            )));
        };
        let t: f64 = seconds
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite())
            .ok_or_else(|| bad(format!("`{seconds}` is not a time in seconds")))?;
        if let Some(&(_, last)) = frames.last()
            && t < last
        {
            return Err(bad(format!("time {t} goes back (after {last})")));
        }
        frames.push((base.join(file), t));
    }
    Ok(frames)
}

fn is_jpeg(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("jpg" | "jpeg")
    )
}

fn is_frame(path: &Path) -> bool {
    is_jpeg(path)
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// The JPEG and PNG files of `dir`, ordered by the number in their names (then by name).
pub fn list_frames(dir: &Path) -> Result<Vec<PathBuf>, ReplayError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReplayError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let mut files: Vec<(Option<u64>, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| is_frame(p))
        .map(|p| {
            let number = p
                .file_stem()
                .and_then(|s| s.to_str())
                .map(|s| s.chars().filter(char::is_ascii_digit).collect::<String>())
                .and_then(|d| d.parse().ok());
            (number, p)
        })
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, p)| p).collect())
}

/// A decoded-ahead frame.
enum Payload {
    Pixels(Image),
    Encoded(CompressedImage),
    Unreadable,
}

struct Item {
    k: u64,
    bytes: usize,
    payload: Payload,
}

#[derive(Default)]
struct RingState {
    items: VecDeque<Item>,
    bytes: usize,
    peak: usize,
    done: bool,
    stop: bool,
}

/// The decode-ahead ring: bounded by bytes, shared by the decoder thread and the step.
struct Ring {
    state: Mutex<RingState>,
    changed: Condvar,
    cap: usize,
    /// The first playback index the step still wants: the decoder skips what is older.
    wanted: AtomicU64,
}

impl Ring {
    fn lock(&self) -> MutexGuard<'_, RingState> {
        self.state.lock()
    }
}

/// A replay in progress: the schedule, the ring and its decoder thread.
pub struct Playback {
    schedule: Schedule,
    origin: Option<Timestamp>,
    next_k: u64,
    total: Option<u64>,
    ring: Arc<Ring>,
    decoder: Option<JoinHandle<()>>,
    rate: f64,
    reported_peak: usize,
}

impl std::fmt::Debug for Playback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Playback")
            .field("frames", &self.schedule.frames.len())
            .field("next_k", &self.next_k)
            .finish_non_exhaustive()
    }
}

impl Playback {
    /// The most bytes the ring held at once so far.
    pub fn peak_buffered_bytes(&self) -> usize {
        self.ring.lock().peak
    }

    /// The schedule being played.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// When playback index `k` is due, seconds after the origin.
    fn due_s(&self, k: u64) -> f64 {
        let n = self.schedule.frames.len().max(1) as u64;
        let lap = (k / n) as f64;
        (lap * self.schedule.loop_s + self.schedule.frames[(k % n) as usize].1) / self.rate
    }

    fn due(&self, origin: Timestamp, k: u64) -> Timestamp {
        Timestamp::from_nanos(
            origin
                .as_nanos()
                .saturating_add((self.due_s(k) * 1e9) as u64),
        )
    }

    fn shut_down(&mut self) {
        self.ring.lock().stop = true;
        self.ring.changed.notify_all();
        if let Some(thread) = self.decoder.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Playback {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn decode_thread(ring: Arc<Ring>, frames: Vec<PathBuf>, total: Option<u64>, pass_through: bool) {
    let decoder = JpegDecoder::default().with_threads(Threads::Unsplit);
    let mut logged: HashSet<usize> = HashSet::new();
    let n = frames.len() as u64;
    let mut k = 0u64;
    loop {
        k = k.max(ring.wanted.load(Ordering::SeqCst));
        if total.is_some_and(|t| k >= t) || n == 0 {
            break;
        }
        let index = (k % n) as usize;
        let path = &frames[index];
        let (payload, bytes) = match load(path, pass_through, &decoder) {
            Ok((payload, bytes)) => (payload, bytes),
            Err(reason) => {
                if logged.insert(index) {
                    tracing::warn!(
                        "replay: skipping unreadable frame {}: {reason}",
                        path.display()
                    );
                }
                (Payload::Unreadable, 0)
            }
        };
        let mut state = ring.lock();
        while !state.stop && !state.items.is_empty() && state.bytes + bytes > ring.cap {
            ring.changed.wait(&mut state);
        }
        if state.stop {
            return;
        }
        state.bytes += bytes;
        state.peak = state.peak.max(state.bytes);
        state.items.push_back(Item { k, bytes, payload });
        drop(state);
        ring.changed.notify_all();
        k += 1;
    }
    ring.lock().done = true;
    ring.changed.notify_all();
}

/// Reads and decodes (or, passing through, checks the header of) one frame.
fn load(
    path: &Path,
    pass_through: bool,
    decoder: &JpegDecoder,
) -> Result<(Payload, usize), String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    if is_jpeg(path) {
        if pass_through {
            let header = decoder.read_header(&data).map_err(|e| e.to_string())?;
            let len = data.len();
            let frame = CompressedImage::new(
                "rgb8; jpeg compressed bgr8",
                data,
                header.width,
                header.height,
            )
            .map_err(|e| e.to_string())?;
            return Ok((Payload::Encoded(frame), len));
        }
        // Into a buffer of the process's pool of decoded images, recycled when the last
        // consumer drops the frame. Not a loan of the output's shared memory: frames wait
        // in the ring (up to `memory_cap_bytes`) and would pin the pool's chunks; they are
        // copied once into shared memory by zenoh where they leave the process.
        let header = decoder.read_header(&data).map_err(|e| e.to_string())?;
        let len = (header.width as usize)
            .saturating_mul(header.height as usize)
            .saturating_mul(3);
        let mut pixels = pools::decoded().take(len.min(MAX_POOLED_TAKE));
        let header = decoder
            .decode_into(&data, PixelFormat::Rgb8, pixels.vec_mut())
            .map_err(|e| e.to_string())?;
        let len = pixels.len();
        let image = Image::from_packed(
            header.width,
            header.height,
            ImageEncoding::Rgb8,
            pixels.freeze(),
        )
        .map_err(|e| e.to_string())?;
        return Ok((Payload::Pixels(image), len));
    }
    let image = decode_png(&data)?;
    let len = image.data().len();
    Ok((Payload::Pixels(image), len))
}

/// The most a decode takes from the pool before the decoder's own limits are checked (a
/// header may claim any size): a larger frame grows the buffer inside the decoder.
const MAX_POOLED_TAKE: usize = 64 << 20;

/// The largest PNG the replay decodes (a hostile header cannot make it allocate more).
const PNG_MAX_BYTES: usize = 256 << 20;

fn decode_png(data: &[u8]) -> Result<Image, String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(data));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let size = reader
        .output_buffer_size()
        .filter(|s| *s <= PNG_MAX_BYTES)
        .ok_or("PNG too large")?;
    let mut buffer = vec![0; size];
    let info = reader.next_frame(&mut buffer).map_err(|e| e.to_string())?;
    buffer.truncate(info.buffer_size());
    let (encoding, pixels) = match info.color_type {
        png::ColorType::Rgb => (ImageEncoding::Rgb8, buffer),
        png::ColorType::Rgba => (
            ImageEncoding::Rgb8,
            buffer
                .chunks_exact(4)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect(),
        ),
        png::ColorType::Grayscale => (ImageEncoding::Mono8, buffer),
        png::ColorType::GrayscaleAlpha => (
            ImageEncoding::Mono8,
            buffer.chunks_exact(2).map(|p| p[0]).collect(),
        ),
        png::ColorType::Indexed => return Err("indexed PNG was not expanded".into()),
    };
    Image::from_packed(info.width, info.height, encoding, pixels).map_err(|e| e.to_string())
}

impl Node for ReplaySource {
    fn trigger(&self) -> Trigger {
        let poll = if self.poll_ms.is_finite() && self.poll_ms > 0.0 {
            self.poll_ms
        } else {
            1.0
        };
        Trigger::rate(1000.0 / poll)
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let schedule = self.scan()?;
        let n = schedule.frames.len() as u64;
        let total = match (self.limit, self.looping) {
            (Some(limit), true) => Some(limit),
            (Some(limit), false) => Some(limit.min(n)),
            (None, true) => None,
            (None, false) => Some(n),
        };
        let ring = Arc::new(Ring {
            state: Mutex::new(RingState::default()),
            changed: Condvar::new(),
            cap: usize::try_from(self.memory_cap_bytes).unwrap_or(usize::MAX),
            wanted: AtomicU64::new(0),
        });
        let files: Vec<PathBuf> = schedule.frames.iter().map(|(p, _)| p.clone()).collect();
        let thread_ring = ring.clone();
        let pass_through = self.pass_through;
        let decoder = std::thread::Builder::new()
            .name("replay-decode".into())
            .spawn(move || decode_thread(thread_ring, files, total, pass_through))?;
        self.playback = Some(Playback {
            schedule,
            origin: None,
            next_k: 0,
            total,
            ring,
            decoder: Some(decoder),
            rate: self.rate,
            reported_peak: 0,
        });
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(playback) = self.playback.as_mut() else {
            return Ok(());
        };
        let origin = *playback.origin.get_or_insert(cx.now());
        loop {
            if cx.is_stopping() {
                return Ok(());
            }
            if playback.total.is_some_and(|t| playback.next_k >= t) {
                cx.finish();
                return Ok(());
            }
            let now = cx.now();
            let k = playback.next_k;
            let due = playback.due(origin, k);
            if due > now {
                return Ok(());
            }
            let next_due = playback.due(origin, k + 1);
            let has_next = playback.total.is_none_or(|t| k + 1 < t);
            if has_next && next_due <= now {
                // Late: the next frame is already due. Skip to the clock, counted.
                playback.next_k += 1;
                playback
                    .ring
                    .wanted
                    .store(playback.next_k, Ordering::SeqCst);
                cx.counter("skipped_late").increment();
                continue;
            }
            // Frame k is due and not late: take it from the ring, waiting for the
            // decoder if it is not there yet (in real time, until the next is due).
            let mut state = playback.ring.lock();
            while let Some(front) = state.items.front()
                && front.k < k
            {
                let bytes = front.bytes;
                state.items.pop_front();
                state.bytes -= bytes;
            }
            let item = match state.items.front() {
                Some(front) if front.k == k => {
                    let bytes = front.bytes;
                    state.bytes -= bytes;
                    state.items.pop_front()
                }
                _ if state.done => {
                    drop(state);
                    cx.finish();
                    return Ok(());
                }
                _ => None,
            };
            let peak = state.peak;
            match item {
                Some(item) => {
                    drop(state);
                    playback.ring.changed.notify_all();
                    if peak > playback.reported_peak {
                        cx.counter("ring_peak_bytes")
                            .add((peak - playback.reported_peak) as u64);
                        playback.reported_peak = peak;
                    }
                    playback.next_k += 1;
                    playback
                        .ring
                        .wanted
                        .store(playback.next_k, Ordering::SeqCst);
                    match item.payload {
                        Payload::Pixels(image) => {
                            self.color_image.publish(image.with_stamp(due))?;
                            cx.counter("published").increment();
                        }
                        Payload::Encoded(frame) => {
                            self.color_image.publish_encoded(frame.with_stamp(due))?;
                            cx.counter("published").increment();
                        }
                        Payload::Unreadable => cx.counter("unreadable").increment(),
                    }
                }
                None => {
                    let wait =
                        Duration::from_nanos(next_due.as_nanos().saturating_sub(now.as_nanos()))
                            .clamp(Duration::from_millis(1), Duration::from_millis(20));
                    playback.ring.changed.wait_for(&mut state, wait);
                }
            }
        }
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(playback) = self.playback.as_mut() {
            playback.shut_down();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_through_keeps_the_files_bytes_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let pixels = vec![90u8; 24 * 10 * 3];
        let image =
            streamwire_codec::jpeg::PixelsRef::new(24, 10, 72, PixelFormat::Rgb8, &pixels).unwrap();
        let file = streamwire_codec::jpeg::encode(&image, &Default::default())
            .unwrap()
            .data;
        let path = dir.path().join("0.jpg");
        std::fs::write(&path, &file).unwrap();
        let (payload, bytes) = load(&path, true, &JpegDecoder::default()).unwrap();
        let Payload::Encoded(frame) = payload else {
            panic!("pass-through must not decode");
        };
        assert_eq!(&frame.data()[..], &file[..]);
        assert_eq!(bytes, file.len());
        assert_eq!((frame.original_width(), frame.original_height()), (24, 10));
        assert_eq!(frame.format(), "rgb8; jpeg compressed bgr8");
    }
}

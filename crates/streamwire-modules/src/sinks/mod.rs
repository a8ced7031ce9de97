//! Sinks: modules that consume streams, do (optionally) real work, and record every
//! arrival.
//!
//! Every sink can write one JSON line per arrival with a [`Recorder`]: instance, stream,
//! sequence number, publish time, arrival time, sensor stamp and payload bytes. Lines are
//! written and flushed after each step (each batch of arrivals), so a killed run leaves a
//! file that [`read_records`] parses: at most the line being written is lost, and the
//! reader skips a partial last line.

mod busy;
mod bytes;
mod recording;

pub use busy::{BusySink, PASS_ROWS, filter_pass};
pub use bytes::ByteConsumer;
pub use recording::RecordingSink;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use streamwire_core::{Header, Timestamp};

/// One arrival, as a line of a recording.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The receiving instance.
    pub instance: String,
    /// The stream it arrived on.
    pub stream: String,
    /// The producer's sequence number (gaps are drops).
    pub seq: u64,
    /// When the producer published it, run-clock nanoseconds since the epoch.
    pub publish_ns: u64,
    /// When the sink took it from its queue.
    pub arrival_ns: u64,
    /// The message's sensor stamp.
    pub stamp_ns: u64,
    /// Payload bytes (pixels, or encoded bytes).
    pub bytes: u64,
    /// Filter passes spent on it (busy sinks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u64>,
}

impl Record {
    /// The record of a message with `header` and sensor `stamp` arriving at `arrival`.
    pub fn new(
        instance: &str,
        stream: &str,
        header: &Header,
        arrival: Timestamp,
        stamp: Timestamp,
        bytes: usize,
    ) -> Record {
        Record {
            instance: instance.to_owned(),
            stream: stream.to_owned(),
            seq: header.seq,
            publish_ns: header.publish_time.as_nanos(),
            arrival_ns: arrival.as_nanos(),
            stamp_ns: stamp.as_nanos(),
            bytes: bytes as u64,
            passes: None,
        }
    }
}

/// Why a recording could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The file could not be created, written or read.
    #[error("recording {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A complete line that is not a record (a partial last line is skipped, not this).
    #[error("recording {path}:{line}: not a record: {source}")]
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The parse error.
        source: serde_json::Error,
    },
}

/// Writes records as JSON lines, flushing after each batch.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    writer: BufWriter<File>,
    pending: bool,
    lines: u64,
}

impl Recorder {
    /// A recorder writing to `path` (created, with its folder; an existing file is
    /// replaced).
    pub fn create(path: &Path) -> Result<Recorder, RecordError> {
        let io = |source| RecordError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let file = File::create(path).map_err(io)?;
        Ok(Recorder {
            path: path.to_owned(),
            writer: BufWriter::new(file),
            pending: false,
            lines: 0,
        })
    }

    /// Appends one line (buffered until [`flush`](Recorder::flush)).
    pub fn record(&mut self, record: &Record) -> Result<(), RecordError> {
        let io = |source| RecordError::Io {
            path: self.path.clone(),
            source,
        };
        serde_json::to_writer(&mut self.writer, record).map_err(|e| io(e.into()))?;
        self.writer.write_all(b"\n").map_err(io)?;
        self.pending = true;
        self.lines += 1;
        Ok(())
    }

    /// Writes the buffered lines to the file.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if self.pending {
            self.writer.flush().map_err(|source| RecordError::Io {
                path: self.path.clone(),
                source,
            })?;
            self.pending = false;
        }
        Ok(())
    }

    /// Lines recorded so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a recording: every complete line must be a record; a partial last line (a
/// run killed while writing it) is skipped.
pub fn read_records(path: &Path) -> Result<Vec<Record>, RecordError> {
    let text = std::fs::read(path).map_err(|source| RecordError::Io {
        path: path.to_owned(),
        source,
    })?;
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut records = Vec::new();
    for (n, line) in text[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = serde_json::from_slice(line).map_err(|source| RecordError::BadLine {
            path: path.to_owned(),
            line: n + 1,
            source,
        })?;
        records.push(record);
    }
    // A last line without its newline: complete if it parses, else the partial line of
    // a killed run.
    if let Ok(record) = serde_json::from_slice::<Record>(&text[complete..]) {
        records.push(record);
    }
    Ok(records)
}

/// The stream a port of module `M` reads, by field name: the `stream` override if set,
/// else the port's declared stream name. (A module does not see the blueprint's remaps;
/// set the override when remapping.)
pub(crate) fn stream_of<M: streamwire_core::Module>(
    field: &str,
    stream: &Option<String>,
) -> String {
    stream.clone().unwrap_or_else(|| {
        M::PORTS
            .iter()
            .find(|p| p.field() == field)
            .map_or_else(|| field.to_owned(), |p| p.stream().to_owned())
    })
}

/// Opens a recorder at `path` if one is set.
pub(crate) fn open(path: &Option<PathBuf>) -> Result<Option<Recorder>, RecordError> {
    path.as_deref().map(Recorder::create).transpose()
}

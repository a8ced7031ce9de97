//! What an MCAP file holds, read once from start to end: its topics, their types, counts
//! and times, and whether it ends cut short.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why an MCAP file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened.
    #[error("cannot open {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with MCAP's magic bytes.
    #[error(
        "{path} is not an MCAP file: it does not start with MCAP's magic bytes (\\x89MCAP0\\r\\n)"
    )]
    NotMcap {
        /// The file.
        path: PathBuf,
    },
    /// The file ends before its header does (a copy cut short, an empty file).
    #[error("{path} is truncated: it ends inside its MCAP header, after {length} bytes")]
    TruncatedHeader {
        /// The file.
        path: PathBuf,
        /// Its length.
        length: u64,
    },
    /// The file's header is broken.
    #[error("{path} is not a readable MCAP file: its header is broken")]
    Mcap {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: mcap::McapError,
    },
}

/// One topic of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicStats {
    /// The topic (`/camera/color/image_raw/compressed`).
    pub topic: String,
    /// Its schema's name, the ROS 2 type for rosbag2 files (`sensor_msgs/msg/CompressedImage`).
    pub ros_type: String,
    /// Its schema encoding (`ros2msg`) and message encoding (`cdr`).
    pub encodings: (String, String),
    /// Messages read.
    pub count: u64,
    /// First and last log time, nanoseconds.
    pub span: (u64, u64),
}

impl TopicStats {
    /// Messages per second between its first and last message (`None` below two messages).
    pub fn rate_hz(&self) -> Option<f64> {
        let seconds = (self.span.1 - self.span.0) as f64 / 1e9;
        (self.count >= 2 && seconds > 0.0).then(|| (self.count - 1) as f64 / seconds)
    }
}

/// Everything [`scan`] learned of a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inventory {
    /// The header's profile (`ros2` for rosbag2 and streamwire files).
    pub profile: String,
    /// Topics in the order their first message appears.
    pub topics: Vec<TopicStats>,
    /// Messages read.
    pub messages: u64,
    /// Set when the file ends before its end (a crash, a copy cut short): what the reader
    /// said after the last message it could read; `corrupt: ...` with where, when a
    /// record inside a file written to its end is damaged.
    pub cut_short: Option<String>,
}

/// A file read in order, counting the bytes its reader took: where a damage is said to be.
pub(crate) struct Counted {
    file: BufReader<File>,
    taken: Arc<AtomicU64>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.taken.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A file's messages in file order, and the bytes read so far.
pub(crate) struct FileMessages {
    pub(crate) messages: mcap::io::MessageReader<Counted>,
    pub(crate) taken: Arc<AtomicU64>,
    /// The file's length when opened.
    pub(crate) length: u64,
    /// Whether the file ends with MCAP's magic bytes: a file written to its end, so an
    /// error inside is damage, not a cut (a crash never writes the closing magic).
    pub(crate) complete: bool,
}

impl FileMessages {
    /// What the reader's `error` means: the end of a file cut short, or damage inside.
    pub(crate) fn classify(&self, error: &mcap::McapError) -> ReadEnd {
        let reason = streamwire_core::log::chain(error).to_string();
        if !self.complete && matches!(error, mcap::McapError::UnexpectedEof) {
            ReadEnd::CutShort(reason)
        } else {
            ReadEnd::Corrupt {
                reason,
                at: self.taken.load(Ordering::Relaxed),
                length: self.length,
            }
        }
    }
}

/// Why a file's messages ended before its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// The file ends inside a record (a crash, a copy cut short): what the reader said.
    CutShort(String),
    /// A record is damaged (a bad CRC, an impossible length or opcode) in a file written
    /// to its end: what the reader said, and the bytes read when it said it.
    Corrupt {
        reason: String,
        at: u64,
        length: u64,
    },
}

/// Opens `path` for reading messages in file order, one chunk in memory at a time, each
/// chunk's CRC checked before any of its messages is read (a damaged chunk ends the read
/// there, rather than yielding what its damage made of it).
pub(crate) fn open(path: &Path) -> Result<FileMessages, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let length = file.metadata().map_err(io)?.len();
    let complete = ends_with_magic(&mut file, length).map_err(io)?;
    let options = mcap::sans_io::LinearReaderOptions::default()
        .with_prevalidate_chunk_crcs(true)
        .with_record_length_limit(RECORD_LIMIT);
    let taken = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        file: BufReader::new(file),
        taken: taken.clone(),
    };
    Ok(FileMessages {
        messages: mcap::io::MessageReader::new_with_options(counted, options),
        taken,
        length,
        complete,
    })
}

/// Whether `file` (of `length` bytes) ends with MCAP's magic; leaves it at its start.
fn ends_with_magic(file: &mut File, length: u64) -> std::io::Result<bool> {
    let magic = mcap::MAGIC.len() as u64;
    if length < 2 * magic {
        return Ok(false);
    }
    let mut tail = [0u8; 8];
    file.seek(SeekFrom::Start(length - magic))?;
    file.read_exact(&mut tail)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(tail.as_slice() == mcap::MAGIC)
}

/// The largest record, and chunk (compressed or not), a reader accepts: a corrupt length
/// is an error, not an allocation of that size (mcap 0.26 reserves a chunk's stated size,
/// and panics on an impossible one, unless told a limit). Far above any real message (a
/// 4K depth image is 16 MB) and chunk (rosbag2's are about 1 MB, ours 4 MB by default).
const RECORD_LIMIT: usize = 1 << 30;

/// The profile of `path`'s header.
fn profile(path: &Path) -> Result<String, ReadError> {
    let mut head = Vec::new();
    let file = File::open(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    // Magic, then the header record: opcode, length, profile, library (short strings).
    file.take(4096)
        .read_to_end(&mut head)
        .map_err(|source| ReadError::Io {
            path: path.to_owned(),
            source,
        })?;
    let truncated = || ReadError::TruncatedHeader {
        path: path.to_owned(),
        length: head.len() as u64,
    };
    let Some(records) = head.strip_prefix(mcap::MAGIC) else {
        return Err(if mcap::MAGIC.starts_with(&head) {
            truncated()
        } else {
            ReadError::NotMcap {
                path: path.to_owned(),
            }
        });
    };
    let mut reader = mcap::read::LinearReader::sans_magic(records);
    match reader.next() {
        Some(Ok(mcap::records::Record::Header(header))) => Ok(header.profile),
        Some(Err(mcap::McapError::UnexpectedEof)) | None => Err(truncated()),
        Some(Err(source)) => Err(ReadError::Mcap {
            path: path.to_owned(),
            source,
        }),
        Some(Ok(_)) => Ok(String::new()),
    }
}

/// Reads `path` from start to end (memory: one chunk): its topics, their types, counts and
/// times. A file cut short is read up to its last complete chunk and says so in
/// [`Inventory::cut_short`]; a file whose header is not MCAP's is an error.
pub fn scan(path: &Path) -> Result<Inventory, ReadError> {
    let mut inventory = Inventory {
        profile: profile(path)?,
        ..Inventory::default()
    };
    let mut rows: BTreeMap<String, usize> = BTreeMap::new();
    let mut file = open(path)?;
    while let Some(message) = file.messages.next() {
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                inventory.cut_short = Some(match file.classify(&error) {
                    ReadEnd::CutShort(reason) => reason,
                    ReadEnd::Corrupt { reason, at, length } => {
                        format!("corrupt: {reason}, found at byte {at} of {length}")
                    }
                });
                break;
            }
        };
        inventory.messages += 1;
        let channel = &message.channel;
        let at = *rows.entry(channel.topic.clone()).or_insert_with(|| {
            // A channel without a schema (schema id 0) has no type: "", which no output takes.
            let (ros_type, schema_encoding) = match &channel.schema {
                Some(schema) => (schema.name.clone(), schema.encoding.clone()),
                None => (String::new(), String::new()),
            };
            inventory.topics.push(TopicStats {
                topic: channel.topic.clone(),
                ros_type,
                encodings: (schema_encoding, channel.message_encoding.clone()),
                count: 0,
                span: (message.log_time, message.log_time),
            });
            inventory.topics.len() - 1
        });
        if let Some(row) = inventory.topics.get_mut(at) {
            row.count += 1;
            row.span = (
                row.span.0.min(message.log_time),
                row.span.1.max(message.log_time),
            );
        }
    }
    Ok(inventory)
}

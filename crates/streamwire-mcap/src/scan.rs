//! What an MCAP file holds, read once from start to end: its topics, their types, counts
//! and times, and whether it ends cut short.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

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
    /// The file is not MCAP, or broken before its first message.
    #[error("{path} is not a readable MCAP file")]
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
    /// said after the last message it could read.
    pub cut_short: Option<String>,
}

/// Opens `path` for reading messages in file order, one chunk in memory at a time, each
/// chunk's CRC checked before any of its messages is read (a damaged chunk ends the read
/// there, rather than yielding what its damage made of it).
pub(crate) fn open(path: &Path) -> Result<mcap::io::MessageReader<BufReader<File>>, ReadError> {
    let file = File::open(path).map_err(|source| ReadError::Io {
        path: path.to_owned(),
        source,
    })?;
    let options = mcap::sans_io::LinearReaderOptions::default()
        .with_prevalidate_chunk_crcs(true)
        .with_record_length_limit(RECORD_LIMIT);
    Ok(mcap::io::MessageReader::new_with_options(
        BufReader::new(file),
        options,
    ))
}

/// The largest record, and chunk (compressed or not), a reader accepts: a corrupt length
/// is an error, not an allocation of that size (mcap 0.26 reserves a chunk's stated size,
/// and panics on an impossible one, unless told a limit). Far above any real message (a
/// 4K depth image is 16 MB) and chunk (rosbag2's are about 1 MB, ours 4 MB by default).
const RECORD_LIMIT: usize = 1 << 30;

/// The profile of `path`'s header.
fn profile(path: &Path) -> Result<String, ReadError> {
    use std::io::Read;
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
    let Some(records) = head.strip_prefix(mcap::MAGIC) else {
        return Err(ReadError::Mcap {
            path: path.to_owned(),
            source: mcap::McapError::BadMagic,
        });
    };
    let mut reader = mcap::read::LinearReader::sans_magic(records);
    match reader.next() {
        Some(Ok(mcap::records::Record::Header(header))) => Ok(header.profile),
        Some(Err(source)) => Err(ReadError::Mcap {
            path: path.to_owned(),
            source,
        }),
        _ => Ok(String::new()),
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
    for message in open(path)? {
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                inventory.cut_short = Some(streamwire_core::log::chain(&error).to_string());
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

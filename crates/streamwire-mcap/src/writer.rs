//! The MCAP file of a recording: schemas and channels as rosbag2 writes them, messages,
//! metadata records, and the `rosbag2` metadata record at the end.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use streamwire_ros2::schema::RosSchema;

use crate::app::{self, AppSchema, MESSAGE_ENCODING, SCHEMA_ENCODING};
use crate::{ChunkCompression, RecordError};

/// The name of the metadata record holding the run's plan and configuration, and of the
/// one holding the recorder's per-stream counts ([`RecordCounts`]) at the end.
pub const METADATA_NAME: &str = "streamwire";

/// Bytes of a chunk (before compression) when the recorder is not told otherwise.
pub(crate) const DEFAULT_CHUNK_BYTES: u64 = 4 << 20;

/// One channel (topic and type) as written.
struct ChannelRow {
    topic: String,
    ros_type: String,
    rihs01: String,
    /// `cdr`, or `json` for an application's message.
    encoding: &'static str,
    count: u64,
    next_sequence: u32,
}

/// Messages recorded and not recorded, per stream: what the recorder saw of each.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordCounts {
    /// Per stream: messages written.
    pub recorded: BTreeMap<String, u64>,
    /// Per stream: messages published while the recorder listened that it did not write
    /// (its queue full, a gap in the stream's sequence, a message it could not encode).
    pub dropped: BTreeMap<String, u64>,
}

/// An MCAP file being written with rosbag2's conventions.
pub struct McapWriter {
    path: PathBuf,
    writer: mcap::Writer<BufWriter<File>>,
    /// Schema ids (and RIHS01 or schema hashes) by ROS 2 or application type.
    schemas: HashMap<String, (u16, String)>,
    /// Channel ids by topic and ROS 2 type.
    channel_ids: HashMap<(String, String), u16>,
    channels: BTreeMap<u16, ChannelRow>,
    /// First and last log time written.
    span: Option<(u64, u64)>,
}

impl std::fmt::Debug for McapWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McapWriter")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl McapWriter {
    /// Creates (or truncates) `path`: profile `ros2`, chunks of about `chunk_bytes`
    /// compressed with `compression`, compressed in the writing thread (no pool).
    pub fn create(
        path: &Path,
        compression: ChunkCompression,
        chunk_bytes: u64,
    ) -> Result<McapWriter, RecordError> {
        if chunk_bytes == 0 {
            return Err(RecordError::Config("chunk_bytes must be above 0".into()));
        }
        let file = File::create(path).map_err(|source| RecordError::Io {
            path: path.to_owned(),
            source,
        })?;
        let writer = mcap::WriteOptions::new()
            .profile("ros2")
            .library(concat!("streamwire-mcap ", env!("CARGO_PKG_VERSION")))
            .compression(compression.to_mcap())
            .chunk_size(Some(chunk_bytes))
            .compression_threads(0)
            .create(BufWriter::new(file))
            .map_err(|source| RecordError::Mcap {
                path: path.to_owned(),
                source,
            })?;
        Ok(McapWriter {
            path: path.to_owned(),
            writer,
            schemas: HashMap::new(),
            channel_ids: HashMap::new(),
            channels: BTreeMap::new(),
            span: None,
        })
    }

    fn mcap_error(&self, source: mcap::McapError) -> RecordError {
        RecordError::Mcap {
            path: self.path.clone(),
            source,
        }
    }

    /// The channel of `topic` with `ros_type`, added (with its schema) on first use.
    fn channel(&mut self, topic: &str, ros_type: &str) -> Result<u16, RecordError> {
        if let Some(id) = self
            .channel_ids
            .get(&(topic.to_owned(), ros_type.to_owned()))
        {
            return Ok(*id);
        }
        let (schema_id, rihs01) = match self.schemas.get(ros_type) {
            Some(known) => known.clone(),
            None => {
                let schema =
                    RosSchema::resolve(ros_type, &[]).map_err(|source| RecordError::Schema {
                        ros_type: ros_type.to_owned(),
                        source,
                    })?;
                let text = schema.full_text();
                let id = self
                    .writer
                    .add_schema(ros_type, "ros2msg", text.as_bytes())
                    .map_err(|e| self.mcap_error(e))?;
                let known = (id, schema.rihs01());
                self.schemas.insert(ros_type.to_owned(), known.clone());
                known
            }
        };
        // What rosbag2 (Jazzy) writes on each channel.
        let metadata = BTreeMap::from([
            ("offered_qos_profiles".to_owned(), String::new()),
            ("topic_type_hash".to_owned(), rihs01.clone()),
        ]);
        let id = self
            .writer
            .add_channel(schema_id, topic, "cdr", &metadata)
            .map_err(|e| self.mcap_error(e))?;
        self.channel_ids
            .insert((topic.to_owned(), ros_type.to_owned()), id);
        self.channels.insert(
            id,
            ChannelRow {
                topic: topic.to_owned(),
                ros_type: ros_type.to_owned(),
                rihs01,
                encoding: "cdr",
                count: 0,
                next_sequence: 0,
            },
        );
        Ok(id)
    }

    /// The channel of `topic` carrying an application's message as JSON, added (with its
    /// `jsonschema` schema and the schema's hash) on first use.
    fn app_channel(&mut self, topic: &str, schema: &AppSchema) -> Result<u16, RecordError> {
        let key = (topic.to_owned(), schema.type_name.clone());
        if let Some(id) = self.channel_ids.get(&key) {
            return Ok(*id);
        }
        let schema_id = match self.schemas.get(&schema.type_name) {
            Some((id, _)) => *id,
            None => {
                let id = self
                    .writer
                    .add_schema(&schema.type_name, SCHEMA_ENCODING, schema.text.as_bytes())
                    .map_err(|e| self.mcap_error(e))?;
                self.schemas
                    .insert(schema.type_name.clone(), (id, schema.hash.clone()));
                id
            }
        };
        let id = self
            .writer
            .add_channel(
                schema_id,
                topic,
                MESSAGE_ENCODING,
                &app::channel_metadata(schema),
            )
            .map_err(|e| self.mcap_error(e))?;
        self.channel_ids.insert(key, id);
        self.channels.insert(
            id,
            ChannelRow {
                topic: topic.to_owned(),
                ros_type: schema.type_name.clone(),
                rihs01: schema.hash.clone(),
                encoding: MESSAGE_ENCODING,
                count: 0,
                next_sequence: 0,
            },
        );
        Ok(id)
    }

    /// Writes one message of `ros_type` on `topic`: `cdr` as ROS 2 serializes it
    /// (encapsulation header included), times in nanoseconds since the epoch.
    pub fn write(
        &mut self,
        topic: &str,
        ros_type: &str,
        log_time: u64,
        publish_time: u64,
        cdr: &[u8],
    ) -> Result<(), RecordError> {
        let channel_id = self.channel(topic, ros_type)?;
        self.write_on(channel_id, log_time, publish_time, cdr)
    }

    /// Writes one application message on `topic`: its JSON ([`AppSchema::encode`]).
    pub fn write_app(
        &mut self,
        topic: &str,
        schema: &AppSchema,
        log_time: u64,
        publish_time: u64,
        json: &[u8],
    ) -> Result<(), RecordError> {
        let channel_id = self.app_channel(topic, schema)?;
        self.write_on(channel_id, log_time, publish_time, json)
    }

    fn write_on(
        &mut self,
        channel_id: u16,
        log_time: u64,
        publish_time: u64,
        data: &[u8],
    ) -> Result<(), RecordError> {
        let sequence = self.channels.get_mut(&channel_id).map_or(0, |row| {
            row.count += 1;
            let sequence = row.next_sequence;
            row.next_sequence = row.next_sequence.wrapping_add(1);
            sequence
        });
        let header = mcap::records::MessageHeader {
            channel_id,
            sequence,
            log_time,
            publish_time,
        };
        self.span = Some(match self.span {
            None => (log_time, log_time),
            Some((first, last)) => (first.min(log_time), last.max(log_time)),
        });
        self.writer
            .write_to_known_channel(&header, data)
            .map_err(|e| self.mcap_error(e))
    }

    /// Writes a metadata record.
    pub fn write_metadata(
        &mut self,
        name: &str,
        metadata: BTreeMap<String, String>,
    ) -> Result<(), RecordError> {
        let record = mcap::records::Metadata {
            name: name.to_owned(),
            metadata,
        };
        self.writer
            .write_metadata(&record)
            .map_err(|e| self.mcap_error(e))
    }

    /// Messages written per topic so far.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for row in self.channels.values() {
            *counts.entry(row.topic.clone()).or_insert(0) += row.count;
        }
        counts
    }

    /// Writes the `rosbag2` metadata record (what rosbag2's MCAP storage writes at close:
    /// the bag's `metadata.yaml`), then the summary, footer and end magic.
    pub fn finish(mut self) -> Result<(), RecordError> {
        let yaml = self.rosbag2_metadata();
        self.write_metadata(
            "rosbag2",
            BTreeMap::from([
                ("serialized_metadata".to_owned(), yaml),
                ("ROS_DISTRO".to_owned(), "jazzy".to_owned()),
            ]),
        )?;
        self.writer.finish().map_err(|e| self.mcap_error(e))?;
        Ok(())
    }

    /// The bag's `metadata.yaml` (version 9), written as JSON, which is YAML.
    fn rosbag2_metadata(&self) -> String {
        let (start, end) = self.span.unwrap_or((0, 0));
        let duration = end - start;
        let file_name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            // infallible: the writer created a file at `path`, which has a file name.
            .unwrap_or_default();
        let count: u64 = self.channels.values().map(|row| row.count).sum();
        let topics: Vec<serde_json::Value> = self
            .channels
            .values()
            .map(|row| {
                serde_json::json!({
                    "topic_metadata": {
                        "name": row.topic,
                        "type": row.ros_type,
                        "serialization_format": row.encoding,
                        "offered_qos_profiles": [],
                        "type_description_hash": row.rihs01,
                    },
                    "message_count": row.count,
                })
            })
            .collect();
        // Chunk compression is the storage's own: rosbag2 reports no bag compression.
        let compression = "";
        let metadata = serde_json::json!({
            "rosbag2_bagfile_information": {
                "version": 9,
                "storage_identifier": "mcap",
                "relative_file_paths": [file_name],
                "duration": {"nanoseconds": duration},
                "starting_time": {"nanoseconds_since_epoch": start},
                "message_count": count,
                "topics_with_message_count": topics,
                "compression_format": compression,
                "compression_mode": compression,
                "files": [{
                    "path": file_name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": count,
                }],
                "custom_data": null,
                "ros_distro": "jazzy",
            }
        });
        metadata.to_string()
    }
}

//! The wire frame: how one message travels between partitions, processes and hosts.
//!
//! Two layouts (specified in RFC.md, "The wire frame", and pinned by golden snapshots).
//! Version 1, for a message without blobs:
//!
//! ```text
//! offset  size  field
//! 0       4     magic, the ASCII bytes "SWFR"
//! 4       2     format version, u16 little-endian: 1
//! 6       2     flags, u16 little-endian: 0, FLAG_END_OF_STREAM or FLAG_STOP, or
//!               FLAG_UNSENT on a message frame (a frame with other flags is refused)
//! 8       4     head length H, u32 little-endian
//! 12      4     payload length P, u32 little-endian
//! 16      H     head: CDR (little-endian, 4-byte encapsulation header 00 01 00 00),
//!               the struct FrameHead below
//! 16+H    P     payload: the message's serde form in CBOR (see `payload`)
//! ```
//!
//! Version 2, for a message with blobs (byte fields of at least 3 KiB marked
//! `streamwire::blob`: an image's pixels, a cloud's points), whose bytes follow the
//! payload instead of being copied into it:
//!
//! ```text
//! 0       4     magic "SWFR"
//! 4       2     format version: 2
//! 6       2     flags, as in version 1
//! 8       4     head length H
//! 12      4     payload length P
//! 16      4     blob count N, at most MAX_BLOBS
//! 20      4     blob section length B
//! 24      8N    blob table: per blob, u32 offset and u32 length in the blob section
//! 24+8N   H     head, as in version 1
//! ...     P     payload: CBOR, each blob field the unsigned index of its blob
//! ...     B     blob section: the blobs, each sent as its own zenoh slice
//! ```
//!
//! A blob arrives as the engine delivered it: where it lies in one received slice (zenoh's
//! shared memory, or one network buffer), the message's field *is* that slice, with no
//! copy; a blob spread over several slices (a large frame reassembled from TCP fragments)
//! is copied once into one buffer, and counted ([`WireFrame::copies`]), as is a version 1
//! frame received in several slices, which is joined into one buffer to be read.
//!
//! An end-of-stream frame (the producer finished: its consumers' inputs close once
//! drained) and a stop frame (the sender stopped with the run) have an empty wire name
//! and codec, schema version 0, header 0, no payload. Both are numbered after the last
//! frame their sender sent, so a receiver that reads one knows that every frame before it
//! has arrived or was lost (a gap in the link sequence).
//!
//! `FrameHead` in CDR order: `string wire_name; uint32 schema_version; uint64 link_seq;
//! uint64 seq; uint64 publish_time_ns; string codec` (the codec that produced an encoded
//! message, empty for a raw one). A frame is exactly as long as its lengths add up to.
//!
//! Reading checks, in order and before allocating anything of a declared size: the length
//! of the fixed part, the magic, the version (another version is *incompatible*, and says
//! both), the flags, that the lengths fit in the bytes received, the blob table (every
//! blob inside the blob section, none overlapping another), the CDR head, the message type
//! expected on the link, its schema version, and only then the payload, which the message
//! type's own validation reads from borrowed bytes; a blob index past the table, a blob
//! read twice, or a blob no field reads is *undecodable*.

use std::cell::RefCell;
use std::rc::Rc;

use byteorder::{ByteOrder, LittleEndian};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::blob::{self, BlobSource};
use streamwire_core::{AnyMessage, Header, Timestamp};

use crate::parts::FrameBytes;
use crate::payload::{self, PayloadError};

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"SWFR";

/// The newest frame format this build writes (for a message with blobs) and reads.
pub const FORMAT_VERSION: u16 = 2;

/// Every frame format this build reads: a worker says them when it joins a run.
pub const FORMAT_VERSIONS: [u16; 2] = [1, 2];

/// The format of a frame without blobs (a control frame, a message of small fields).
const VERSION_INLINE: u16 = 1;

/// The most blobs one frame may carry: messages have a few large fields, not many.
pub const MAX_BLOBS: usize = 64;

/// The flag of an end-of-stream frame.
pub const FLAG_END_OF_STREAM: u16 = 0x0001;

/// The flag of a stop frame: its sender stopped with the run and sends nothing more.
pub const FLAG_STOP: u16 = 0x0002;

/// The flag of a message frame its publisher kept in the stream's history while nobody
/// listened (and counted there as not sent), set by the transport of a late joiner that
/// got it from that history: the joiner's row takes it off the not-sent term, as it was
/// delivered after all. Never sent by a publisher.
pub const FLAG_UNSENT: u16 = 0x0004;

/// Bytes before the head in version 1.
pub const FIXED_LEN: usize = 16;

/// Bytes before the blob table in version 2.
pub const FIXED_LEN_V2: usize = 24;

/// Bytes of one entry of the blob table: offset and length, u32 little-endian each.
const BLOB_ENTRY_LEN: usize = 8;

/// The CDR encapsulation header: plain CDR, little-endian (as DDS and ROS 2 write it).
const CDR_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// The largest head accepted: a wire name and a codec name do not need more.
pub const MAX_HEAD_LEN: usize = 4096;

/// What a frame says about its message, besides the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameHead {
    /// The message's stable type name (`streamwire/Image`).
    pub wire_name: String,
    /// The version of that type's serialized form.
    pub schema_version: u32,
    /// The transport publisher's number of this frame.
    pub link_seq: u64,
    /// The runtime's header: the producer's sequence number.
    pub seq: u64,
    /// The runtime's header: when the producer published, nanoseconds on the run clock.
    pub publish_time_ns: u64,
    /// The codec that made an encoded message (`jpeg`), empty for a raw message.
    pub codec: String,
}

impl FrameHead {
    /// The runtime's header carried by the frame.
    pub fn header(&self) -> Header {
        Header {
            seq: self.seq,
            publish_time: Timestamp::from_nanos(self.publish_time_ns),
        }
    }
}

/// One blob of a version 2 frame: where it lies in the blob section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobEntry {
    /// Bytes from the start of the blob section.
    pub offset: u32,
    /// Its length.
    pub len: u32,
}

/// A frame read back: its head and its payload (a slice of the received bytes, not a
/// copy), and in version 2 its blobs (slices of the received bytes too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireFrame {
    /// The frame's format version (1 or 2).
    pub version: u16,
    /// The producer's stream ended: no message, its consumers' inputs close.
    pub end_of_stream: bool,
    /// The sender stopped with the run: no message, and none after it.
    pub stop: bool,
    /// Kept in the publisher's history while nobody listened, and counted there as not
    /// sent ([`FLAG_UNSENT`]).
    pub unsent: bool,
    /// The head.
    pub head: FrameHead,
    /// The message's CBOR bytes.
    pub payload: Bytes,
    /// Version 2: the blob table, checked (every blob inside the section, no overlap).
    pub blobs: Vec<BlobEntry>,
    /// Version 2: the blob section as received (empty in version 1).
    pub blob_section: FrameBytes,
    /// Version 1: received in several parts, and joined into one buffer to be read (a
    /// copy of the whole frame).
    pub joined: bool,
}

/// Why a frame was refused, by kind: what the runtime counts per link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rejection {
    /// Shorter than it says it is.
    Truncated,
    /// Not a streamwire frame, or a frame whose head cannot be read.
    Garbage,
    /// Another frame format version, or another schema version of the message.
    Incompatible,
    /// A message of another type than the link carries.
    WrongType,
    /// The payload does not read as the message (including values the message refuses,
    /// such as an image whose buffer does not match its dimensions).
    Undecodable,
}

impl Rejection {
    /// Every kind, in report order.
    pub const ALL: [Rejection; 5] = [
        Rejection::Truncated,
        Rejection::Garbage,
        Rejection::Incompatible,
        Rejection::WrongType,
        Rejection::Undecodable,
    ];

    /// The short name used in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Rejection::Truncated => "truncated",
            Rejection::Garbage => "garbage",
            Rejection::Incompatible => "incompatible",
            Rejection::WrongType => "wrong_type",
            Rejection::Undecodable => "undecodable",
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A frame that could not be written or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// Fewer bytes than the frame declares.
    #[error("truncated frame: {needed} bytes declared, {got} received")]
    Truncated {
        /// Bytes the frame declares (or the fixed part needs).
        needed: u64,
        /// Bytes received.
        got: u64,
    },
    /// Not a streamwire frame.
    #[error("not a streamwire frame (magic {found:02x?})")]
    BadMagic {
        /// The first bytes.
        found: Vec<u8>,
    },
    /// A frame of another format version.
    #[error(
        "incompatible frame format: version {theirs} received, this build reads versions 1 \
         to {ours}"
    )]
    Version {
        /// The sender's.
        theirs: u16,
        /// This build's.
        ours: u16,
    },
    /// Flags this build does not know.
    #[error("frame flags {0:#06x} are unknown to this build")]
    Flags(u16),
    /// More bytes than the frame declares.
    #[error("frame of {got} bytes declares only {declared}")]
    Trailing {
        /// What the lengths add up to.
        declared: u64,
        /// Bytes received.
        got: u64,
    },
    /// The head is not a readable CDR `FrameHead`.
    #[error("frame head unreadable: {0}")]
    Head(String),
    /// The message is not of a type the link carries.
    #[error("frame carries `{got}`, the link carries {expected}")]
    WrongType {
        /// What the link carries.
        expected: String,
        /// What the frame says it carries.
        got: String,
    },
    /// The message's schema version differs from this build's.
    #[error("incompatible `{wire_name}`: schema version {theirs} received, this build has {ours}")]
    Schema {
        /// The type.
        wire_name: String,
        /// The sender's.
        theirs: u32,
        /// This build's.
        ours: u32,
    },
    /// The payload is not the message it claims to be.
    #[error("payload: {0}")]
    Payload(#[from] PayloadError),
    /// A head or payload too large for the frame's length fields.
    #[error("frame part too large: {0} bytes")]
    TooLarge(usize),
    /// A version 2 frame's blobs do not add up: a table entry past the blob section or
    /// overlapping another, too many blobs, an index past the table, a blob read twice or
    /// by no field.
    #[error("blobs: {0}")]
    Blobs(String),
    /// A batch (several frames in one transport message) whose count or lengths do not
    /// hold, or that cannot be written.
    #[error("batch: {0}")]
    Batch(String),
}

impl FrameError {
    /// The kind of rejection this is, for counting.
    pub fn rejection(&self) -> Rejection {
        match self {
            FrameError::Truncated { .. } => Rejection::Truncated,
            FrameError::BadMagic { .. }
            | FrameError::Flags(_)
            | FrameError::Trailing { .. }
            | FrameError::Head(_)
            | FrameError::TooLarge(_)
            | FrameError::Batch(_) => Rejection::Garbage,
            FrameError::Version { .. } | FrameError::Schema { .. } => Rejection::Incompatible,
            FrameError::WrongType { .. } => Rejection::WrongType,
            FrameError::Payload(_) | FrameError::Blobs(_) => Rejection::Undecodable,
        }
    }
}

impl WireFrame {
    /// Writes the frame of `message` with `header`, numbered `link_seq`, made by `codec`
    /// (empty for raw). The message is serialized straight into the frame's first part;
    /// its blobs become the frame's further parts as they are (no copy), and a message
    /// without blobs is one part of version 1.
    pub fn encode(
        message: &dyn AnyMessage,
        header: Header,
        link_seq: u64,
        codec: &str,
    ) -> Result<FrameBytes, FrameError> {
        let head = FrameHead {
            wire_name: message.type_name().to_owned(),
            schema_version: message.schema_version(),
            link_seq,
            seq: header.seq,
            publish_time_ns: header.publish_time.as_nanos(),
            codec: codec.to_owned(),
        };
        let head_bytes = encode_head(&head)?;
        // Measured first (nothing copied) so that the fixed part, the blob table and the
        // buffer's one allocation are known before any byte of the payload is written.
        let (payload_len, blobs) = payload::measure_with_blobs(message)?;
        let table = blob_table(&blobs)?;
        let fixed = Fixed {
            flags: 0,
            head_len: head_bytes.len(),
            payload_len,
            blobs: &table,
        };
        let mut buffer = fixed.write(payload_len)?;
        buffer.extend_from_slice(&head_bytes);
        let before = buffer.len();
        let (buffer, written) = payload::write_with_blobs(message, buffer)?;
        if buffer.len() - before != payload_len || written.len() != blobs.len() {
            return Err(FrameError::Payload(PayloadError::new(format!(
                "{} serialized differently twice",
                message.type_name()
            ))));
        }
        let mut parts = Vec::with_capacity(1 + written.len());
        parts.push(Bytes::from(buffer));
        parts.extend(written);
        Ok(FrameBytes::from_parts(parts))
    }

    /// The frame that ends a stream, numbered `link_seq`.
    pub fn end_of_stream(link_seq: u64) -> Result<FrameBytes, FrameError> {
        control_frame(link_seq, FLAG_END_OF_STREAM)
    }

    /// The frame a sender sends when the run stops, numbered `link_seq` (after its last
    /// frame): a receiver that reads it knows nothing it sent is still on the wire.
    ///
    /// ```
    /// use streamwire_transport::WireFrame;
    /// let frame = WireFrame::parse(WireFrame::stop(7)?)?;
    /// assert!(frame.stop && !frame.end_of_stream);
    /// assert_eq!(frame.head.link_seq, 7);
    /// # Ok::<(), streamwire_transport::FrameError>(())
    /// ```
    pub fn stop(link_seq: u64) -> Result<FrameBytes, FrameError> {
        control_frame(link_seq, FLAG_STOP)
    }

    /// Sets [`FLAG_UNSENT`] on a message frame in `frame` (a late joiner's transport, on
    /// its own copy of a frame's first bytes from the publisher's history). Anything that
    /// is not a message frame of a known format is left as it is, for reading to judge.
    ///
    /// ```
    /// # use streamwire_transport::WireFrame;
    /// let mut stop = WireFrame::stop(7)?.to_bytes().to_vec();
    /// WireFrame::mark_unsent(&mut stop);
    /// assert!(!WireFrame::parse(stop)?.unsent);
    /// # Ok::<(), streamwire_transport::FrameError>(())
    /// ```
    pub fn mark_unsent(frame: &mut [u8]) {
        if frame.len() < FIXED_LEN || frame[..4] != MAGIC {
            return;
        }
        let flags = LittleEndian::read_u16(&frame[6..8]);
        if flags == 0 {
            LittleEndian::write_u16(&mut frame[6..8], FLAG_UNSENT);
        }
    }

    /// `frame` with [`FLAG_UNSENT`] set ([`mark_unsent`](WireFrame::mark_unsent)): its
    /// first part is copied to be marked, its blobs are not.
    pub fn marked_unsent(frame: &FrameBytes) -> FrameBytes {
        let mut parts = frame.parts().to_vec();
        if let Some(first) = parts.first_mut() {
            let mut marked = first.to_vec();
            WireFrame::mark_unsent(&mut marked);
            *first = Bytes::from(marked);
        }
        FrameBytes::from_parts(parts)
    }

    /// Reads the fixed part, the blob table and the head of `frame`, checking every
    /// declared length against the bytes received; the payload and the blobs stay slices
    /// of `frame`.
    pub fn parse(frame: impl Into<FrameBytes>) -> Result<WireFrame, FrameError> {
        let frame = frame.into();
        let got = frame.len() as u64;
        let Some(start) = frame.prefix(FIXED_LEN) else {
            // Too short even for the magic: say so as garbage if what is there is not ours.
            let start = frame.to_bytes();
            if start.len() < MAGIC.len() || start[..MAGIC.len()] != MAGIC {
                return Err(FrameError::BadMagic {
                    found: start[..start.len().min(MAGIC.len())].to_vec(),
                });
            }
            return Err(FrameError::Truncated {
                needed: FIXED_LEN as u64,
                got,
            });
        };
        if start[..4] != MAGIC {
            return Err(FrameError::BadMagic {
                found: start[..4].to_vec(),
            });
        }
        let version = LittleEndian::read_u16(&start[4..6]);
        let flags = LittleEndian::read_u16(&start[6..8]);
        match version {
            VERSION_INLINE => {
                let mut read = parse_inline(frame.to_bytes(), flags)?;
                read.joined = frame.parts().len() > 1;
                Ok(read)
            }
            FORMAT_VERSION => parse_with_blobs(&frame, flags),
            theirs => Err(FrameError::Version {
                theirs,
                ours: FORMAT_VERSION,
            }),
        }
    }

    /// The copies of received bytes reading this frame costs: one per blob spread over
    /// several received slices (every other blob is read where it was received), or one
    /// for a version 1 frame that was joined from several. The runtime counts them per
    /// ingress (`WireStats::receive_copies`).
    pub fn copies(&self) -> u64 {
        let spread = self
            .blobs
            .iter()
            .filter(|b| {
                !self
                    .blob_section
                    .lies_in_one_part(b.offset as usize, b.len as usize)
            })
            .count() as u64;
        spread + u64::from(self.joined)
    }

    /// Reads the message, after checking that its type is one of `accepted` (with their
    /// schema versions): the frame's payload through the type's own deserialization, its
    /// blob fields from the frame's blobs.
    pub fn decode_message(
        &self,
        accepted: &[(&'static str, u32)],
    ) -> Result<Box<dyn AnyMessage>, FrameError> {
        let Some(&(_, ours)) = accepted
            .iter()
            .find(|(name, _)| *name == self.head.wire_name)
        else {
            return Err(FrameError::WrongType {
                expected: accepted
                    .iter()
                    .map(|(name, _)| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(" or "),
                got: self.head.wire_name.clone(),
            });
        };
        if self.head.schema_version != ours {
            return Err(FrameError::Schema {
                wire_name: self.head.wire_name.clone(),
                theirs: self.head.schema_version,
                ours,
            });
        }
        self.read_message()
    }

    /// Reads the message as whatever registered type its head names (a tool that listens
    /// to any stream), its blob fields from the frame's blobs.
    pub fn read_message(&self) -> Result<Box<dyn AnyMessage>, FrameError> {
        if self.blobs.is_empty() {
            return Ok(payload::decode(&self.head.wire_name, &self.payload)?);
        }
        // Owned by the reading context (a thread-local): the table is a few entries, the
        // section's parts are shared, not copied.
        let blobs = Rc::new(RefCell::new(FrameBlobs {
            table: self.blobs.clone(),
            section: self.blob_section.clone(),
            taken: vec![false; self.blobs.len()],
        }));
        let message = blob::read_with(blobs.clone(), || {
            payload::decode(&self.head.wire_name, &self.payload)
        })?;
        if let Some(unread) = blobs.borrow().taken.iter().position(|taken| !taken) {
            return Err(FrameError::Blobs(format!(
                "blob {unread} is read by no field of the `{}`",
                self.head.wire_name
            )));
        }
        Ok(message)
    }
}

impl WireFrame {
    /// A frame read back, of `version` with checked `flags`.
    fn read(
        (version, flags): (u16, u16),
        head: FrameHead,
        payload: Bytes,
        (blobs, blob_section): (Vec<BlobEntry>, FrameBytes),
    ) -> WireFrame {
        WireFrame {
            version,
            end_of_stream: flags & FLAG_END_OF_STREAM != 0,
            stop: flags & FLAG_STOP != 0,
            unsent: flags & FLAG_UNSENT != 0,
            head,
            payload,
            blobs,
            blob_section,
            joined: false,
        }
    }
}

/// The blobs of one frame, handed to a message's blob fields as they are read.
struct FrameBlobs {
    table: Vec<BlobEntry>,
    section: FrameBytes,
    taken: Vec<bool>,
}

impl BlobSource for FrameBlobs {
    fn take(&mut self, index: u64) -> Result<Bytes, String> {
        let count = self.table.len();
        let Some(i) = usize::try_from(index).ok().filter(|i| *i < count) else {
            return Err(format!(
                "blob index {index} is past the frame's {count} blobs"
            ));
        };
        if std::mem::replace(&mut self.taken[i], true) {
            return Err(format!("blob {i} is read by two fields"));
        }
        let entry = self.table[i];
        // The table was checked against the section when the frame was parsed.
        self.section
            .range(entry.offset as usize, entry.len as usize)
            .map(|(bytes, _copied)| bytes)
            .ok_or_else(|| format!("blob {i} lies past the blob section"))
    }
}

/// The fixed part of a frame about to be written.
struct Fixed<'t> {
    flags: u16,
    head_len: usize,
    payload_len: usize,
    blobs: &'t [BlobEntry],
}

impl Fixed<'_> {
    /// The fixed part (and in version 2 the blob table), in a buffer with room for the
    /// head and `payload_capacity` bytes of payload.
    fn write(&self, payload_capacity: usize) -> Result<Vec<u8>, FrameError> {
        let len32 = |n: usize| u32::try_from(n).map_err(|_| FrameError::TooLarge(n));
        let head_len = len32(self.head_len)?;
        let payload_len = len32(self.payload_len)?;
        let table_len = self.blobs.len() * BLOB_ENTRY_LEN;
        let fixed_len = if self.blobs.is_empty() {
            FIXED_LEN
        } else {
            FIXED_LEN_V2 + table_len
        };
        let mut buffer = Vec::with_capacity(fixed_len + self.head_len + payload_capacity);
        buffer.extend_from_slice(&MAGIC);
        if self.blobs.is_empty() {
            buffer.extend_from_slice(&VERSION_INLINE.to_le_bytes());
        } else {
            buffer.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        }
        buffer.extend_from_slice(&self.flags.to_le_bytes());
        buffer.extend_from_slice(&head_len.to_le_bytes());
        buffer.extend_from_slice(&payload_len.to_le_bytes());
        if !self.blobs.is_empty() {
            let section: u64 = self.blobs.iter().map(|b| u64::from(b.len)).sum();
            let section = u32::try_from(section).map_err(|_| FrameError::TooLarge(usize::MAX))?;
            buffer.extend_from_slice(&len32(self.blobs.len())?.to_le_bytes());
            buffer.extend_from_slice(&section.to_le_bytes());
            for blob in self.blobs {
                buffer.extend_from_slice(&blob.offset.to_le_bytes());
                buffer.extend_from_slice(&blob.len.to_le_bytes());
            }
        }
        Ok(buffer)
    }
}

/// The table of `blobs` laid end to end.
fn blob_table(blobs: &[Bytes]) -> Result<Vec<BlobEntry>, FrameError> {
    if blobs.len() > MAX_BLOBS {
        return Err(FrameError::Blobs(format!(
            "{} blobs, more than the {MAX_BLOBS} a frame may carry",
            blobs.len()
        )));
    }
    let mut offset = 0u32;
    blobs
        .iter()
        .map(|blob| {
            let len = u32::try_from(blob.len()).map_err(|_| FrameError::TooLarge(blob.len()))?;
            let entry = BlobEntry { offset, len };
            offset = offset
                .checked_add(len)
                .ok_or(FrameError::TooLarge(usize::MAX))?;
            Ok(entry)
        })
        .collect()
}

/// The flags of a frame, checked: known ones, in a combination that means something.
fn check_flags(flags: u16) -> Result<(), FrameError> {
    let control = flags & (FLAG_END_OF_STREAM | FLAG_STOP);
    if flags & !(FLAG_END_OF_STREAM | FLAG_STOP | FLAG_UNSENT) != 0
        || control == FLAG_END_OF_STREAM | FLAG_STOP
        || (control != 0 && flags & FLAG_UNSENT != 0)
    {
        return Err(FrameError::Flags(flags));
    }
    Ok(())
}

/// Compares what a frame's lengths add up to with what was received.
fn check_declared(declared: u64, got: u64) -> Result<(), FrameError> {
    if declared > got {
        return Err(FrameError::Truncated {
            needed: declared,
            got,
        });
    }
    if declared < got {
        return Err(FrameError::Trailing { declared, got });
    }
    Ok(())
}

fn check_head_len(head_len: usize) -> Result<(), FrameError> {
    if head_len > MAX_HEAD_LEN {
        return Err(FrameError::Head(format!(
            "{head_len} bytes, more than the {MAX_HEAD_LEN} a head may have"
        )));
    }
    Ok(())
}

/// Version 1: fixed part, head, payload, in one buffer.
fn parse_inline(frame: Bytes, flags: u16) -> Result<WireFrame, FrameError> {
    check_flags(flags)?;
    let got = frame.len() as u64;
    let head_len = u64::from(LittleEndian::read_u32(&frame[8..12]));
    let payload_len = u64::from(LittleEndian::read_u32(&frame[12..16]));
    check_declared(FIXED_LEN as u64 + head_len + payload_len, got)?;
    // Both fit in `frame`, so both fit in usize.
    let head_len = usize::try_from(head_len).map_err(|_| FrameError::TooLarge(usize::MAX))?;
    check_head_len(head_len)?;
    let head = decode_head(&frame[FIXED_LEN..FIXED_LEN + head_len])?;
    Ok(WireFrame::read(
        (VERSION_INLINE, flags),
        head,
        frame.slice(FIXED_LEN + head_len..),
        (Vec::new(), FrameBytes::default()),
    ))
}

/// Version 2: fixed part, blob table, head, payload, then the blob section, in as many
/// parts as were received.
fn parse_with_blobs(frame: &FrameBytes, flags: u16) -> Result<WireFrame, FrameError> {
    let got = frame.len() as u64;
    let Some(fixed) = frame.prefix(FIXED_LEN_V2) else {
        return Err(FrameError::Truncated {
            needed: FIXED_LEN_V2 as u64,
            got,
        });
    };
    check_flags(flags)?;
    let head_len = u64::from(LittleEndian::read_u32(&fixed[8..12]));
    let payload_len = u64::from(LittleEndian::read_u32(&fixed[12..16]));
    let count = LittleEndian::read_u32(&fixed[16..20]) as usize;
    let section_len = u64::from(LittleEndian::read_u32(&fixed[20..24]));
    if count > MAX_BLOBS {
        return Err(FrameError::Blobs(format!(
            "{count} blobs declared, more than the {MAX_BLOBS} a frame may carry"
        )));
    }
    let table_len = (count * BLOB_ENTRY_LEN) as u64;
    let front_len = FIXED_LEN_V2 as u64 + table_len + head_len + payload_len;
    check_declared(front_len + section_len, got)?;
    // Every length fits in `frame`, so in usize.
    let as_usize = |n: u64| usize::try_from(n).map_err(|_| FrameError::TooLarge(usize::MAX));
    let (head_len, front_len) = (as_usize(head_len)?, as_usize(front_len)?);
    check_head_len(head_len)?;
    // The fixed part, table, head and payload in one buffer: a slice of the first part
    // when it holds them (always, from zenoh's shared memory), a copy of these few bytes
    // otherwise.
    let front = frame.prefix(front_len).ok_or(FrameError::Truncated {
        needed: front_len as u64,
        got,
    })?;
    let table_end = FIXED_LEN_V2 + count * BLOB_ENTRY_LEN;
    let blobs = read_blob_table(&front[FIXED_LEN_V2..table_end], section_len)?;
    let head = decode_head(&front[table_end..table_end + head_len])?;
    Ok(WireFrame::read(
        (FORMAT_VERSION, flags),
        head,
        front.slice(table_end + head_len..),
        (blobs, frame.suffix(front_len)),
    ))
}

/// The blob table, each entry checked to lie inside the section of `section_len` bytes
/// and to overlap no other (gaps are allowed: a writer may align its blobs).
fn read_blob_table(table: &[u8], section_len: u64) -> Result<Vec<BlobEntry>, FrameError> {
    let blobs: Vec<BlobEntry> = table
        .chunks_exact(BLOB_ENTRY_LEN)
        .map(|entry| BlobEntry {
            offset: LittleEndian::read_u32(&entry[0..4]),
            len: LittleEndian::read_u32(&entry[4..8]),
        })
        .collect();
    let end = |b: &BlobEntry| u64::from(b.offset) + u64::from(b.len);
    if let Some((i, blob)) = blobs.iter().enumerate().find(|(_, b)| end(b) > section_len) {
        return Err(FrameError::Blobs(format!(
            "blob {i} (bytes {}..{}) ends past the blob section of {section_len} bytes",
            blob.offset,
            end(blob)
        )));
    }
    let mut order: Vec<usize> = (0..blobs.len()).collect();
    order.sort_by_key(|&i| (blobs[i].offset, blobs[i].len));
    for pair in order.windows(2) {
        let (a, b) = (&blobs[pair[0]], &blobs[pair[1]]);
        if end(a) > u64::from(b.offset) {
            return Err(FrameError::Blobs(format!(
                "blobs {} and {} overlap (bytes {}..{} and {}..{})",
                pair[0].min(pair[1]),
                pair[0].max(pair[1]),
                a.offset,
                end(a),
                b.offset,
                end(b)
            )));
        }
    }
    Ok(blobs)
}

/// A frame without a message (end of stream, stop), numbered `link_seq`, with `flags`.
fn control_frame(link_seq: u64, flags: u16) -> Result<FrameBytes, FrameError> {
    let head = FrameHead {
        wire_name: String::new(),
        schema_version: 0,
        link_seq,
        seq: 0,
        publish_time_ns: 0,
        codec: String::new(),
    };
    let head_bytes = encode_head(&head)?;
    let fixed = Fixed {
        flags,
        head_len: head_bytes.len(),
        payload_len: 0,
        blobs: &[],
    };
    let mut buffer = fixed.write(0)?;
    buffer.extend_from_slice(&head_bytes);
    Ok(FrameBytes::from(buffer))
}

fn encode_head(head: &FrameHead) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&CDR_LE);
    cdr_encoding::to_writer::<_, LittleEndian, _>(&mut out, head)
        .map_err(|error| FrameError::Head(error.to_string()))?;
    Ok(out)
}

fn decode_head(bytes: &[u8]) -> Result<FrameHead, FrameError> {
    let Some(body) = bytes.strip_prefix(&CDR_LE) else {
        return Err(FrameError::Head(
            "no little-endian CDR encapsulation header (00 01 00 00)".to_owned(),
        ));
    };
    // cdr-encoding checks every string length against the bytes left before reading it.
    let (head, used) = cdr_encoding::from_bytes::<FrameHead, LittleEndian>(body)
        .map_err(|error| FrameError::Head(error.to_string()))?;
    if used != body.len() {
        return Err(FrameError::Head(format!(
            "{} bytes after the head's fields",
            body.len() - used
        )));
    }
    Ok(head)
}

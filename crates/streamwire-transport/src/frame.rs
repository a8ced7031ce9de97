//! The wire frame: how one message travels between partitions, processes and hosts.
//!
//! The layout (specified in RFC.md, "The wire frame", and pinned by a golden snapshot):
//!
//! ```text
//! offset  size  field
//! 0       4     magic, the ASCII bytes "SWFR"
//! 4       2     format version, u16 little-endian (FORMAT_VERSION)
//! 6       2     flags, u16 little-endian: 0, FLAG_END_OF_STREAM or FLAG_STOP, or
//!               FLAG_UNSENT on a message frame (a frame with other flags is refused)
//! 8       4     head length H, u32 little-endian
//! 12      4     payload length P, u32 little-endian
//! 16      H     head: CDR (little-endian, 4-byte encapsulation header 00 01 00 00),
//!               the struct FrameHead below
//! 16+H    P     payload: the message's serde form in CBOR (see `payload`)
//! ```
//!
//! An end-of-stream frame (the producer finished: its consumers' inputs close once
//! drained) and a stop frame (the sender stopped with the run) have an empty wire name
//! and codec, schema version 0, header 0, no payload. Both are numbered after the last
//! frame their sender sent, so a receiver that reads one knows that every frame before it
//! has arrived or was lost (a gap in the link sequence).
//!
//! `FrameHead` in CDR order: `string wire_name; uint32 schema_version; uint64 link_seq;
//! uint64 seq; uint64 publish_time_ns; string codec` (the codec that produced an encoded
//! message, empty for a raw one). A frame is exactly `16 + H + P` bytes.
//!
//! Reading checks, in order and before allocating anything of a declared size: the length
//! of the fixed part, the magic, the version (another version is *incompatible*, and says
//! both), the flags, that `H` and `P` fit in the bytes received, the CDR head, the message
//! type expected on the link, its schema version, and only then the payload, which the
//! message type's own validation reads from borrowed bytes.

use byteorder::{ByteOrder, LittleEndian};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use streamwire_core::{AnyMessage, Header, Timestamp};

use crate::payload::{self, PayloadError};

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"SWFR";

/// The frame format this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;

/// The flag of an end-of-stream frame.
pub const FLAG_END_OF_STREAM: u16 = 0x0001;

/// The flag of a stop frame: its sender stopped with the run and sends nothing more.
pub const FLAG_STOP: u16 = 0x0002;

/// The flag of a message frame its publisher kept in the stream's history while nobody
/// listened (and counted there as not sent), set by the transport of a late joiner that
/// got it from that history: the joiner's row takes it off the not-sent term, as it was
/// delivered after all. Never sent by a publisher.
pub const FLAG_UNSENT: u16 = 0x0004;

/// Bytes before the head.
pub const FIXED_LEN: usize = 16;

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

/// A frame read back: its head and its payload (a slice of the received bytes, not a
/// copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireFrame {
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
        "incompatible frame format: version {theirs} received, this build reads version {ours}"
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
            | FrameError::TooLarge(_) => Rejection::Garbage,
            FrameError::Version { .. } | FrameError::Schema { .. } => Rejection::Incompatible,
            FrameError::WrongType { .. } => Rejection::WrongType,
            FrameError::Payload(_) => Rejection::Undecodable,
        }
    }
}

impl WireFrame {
    /// Writes the frame of `message` with `header`, numbered `link_seq`, made by `codec`
    /// (empty for raw). The message is serialized straight into the frame's buffer: one
    /// copy of its payload, none after (the buffer becomes the `Bytes`).
    pub fn encode(
        message: &dyn AnyMessage,
        header: Header,
        link_seq: u64,
        codec: &str,
    ) -> Result<Bytes, FrameError> {
        let head = FrameHead {
            wire_name: message.type_name().to_owned(),
            schema_version: message.schema_version(),
            link_seq,
            seq: header.seq,
            publish_time_ns: header.publish_time.as_nanos(),
            codec: codec.to_owned(),
        };
        let head_bytes = encode_head(&head)?;
        let buffer = fixed_and_head(&head_bytes, 0)?;
        let payload_start = buffer.len();
        let mut buffer = payload::encode_into(message, buffer)?;
        let payload_len = buffer.len() - payload_start;
        let payload_len32 =
            u32::try_from(payload_len).map_err(|_| FrameError::TooLarge(payload_len))?;
        LittleEndian::write_u32(&mut buffer[12..16], payload_len32);
        Ok(Bytes::from(buffer))
    }

    /// The frame that ends a stream, numbered `link_seq`.
    pub fn end_of_stream(link_seq: u64) -> Result<Bytes, FrameError> {
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
    pub fn stop(link_seq: u64) -> Result<Bytes, FrameError> {
        control_frame(link_seq, FLAG_STOP)
    }

    /// Sets [`FLAG_UNSENT`] on a message frame in `frame` (a late joiner's transport, on
    /// its own copy of a frame from the publisher's history). Anything that is not a
    /// message frame of this format is left as it is, for reading to judge.
    ///
    /// ```
    /// # use streamwire_transport::WireFrame;
    /// let mut stop = WireFrame::stop(7)?.to_vec();
    /// WireFrame::mark_unsent(&mut stop);
    /// assert!(!WireFrame::parse(stop.into())?.unsent);
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

    /// Reads the fixed part and the head of `frame`, checking every declared length
    /// against the bytes received; the payload stays a slice of `frame`.
    pub fn parse(frame: Bytes) -> Result<WireFrame, FrameError> {
        let got = frame.len() as u64;
        if frame.len() < FIXED_LEN {
            // Too short even for the magic: say so as garbage if what is there is not ours.
            if frame.len() < MAGIC.len() || frame[..MAGIC.len()] != MAGIC {
                return Err(FrameError::BadMagic {
                    found: frame[..frame.len().min(MAGIC.len())].to_vec(),
                });
            }
            return Err(FrameError::Truncated {
                needed: FIXED_LEN as u64,
                got,
            });
        }
        if frame[..4] != MAGIC {
            return Err(FrameError::BadMagic {
                found: frame[..4].to_vec(),
            });
        }
        let version = LittleEndian::read_u16(&frame[4..6]);
        if version != FORMAT_VERSION {
            return Err(FrameError::Version {
                theirs: version,
                ours: FORMAT_VERSION,
            });
        }
        let flags = LittleEndian::read_u16(&frame[6..8]);
        let control = flags & (FLAG_END_OF_STREAM | FLAG_STOP);
        if flags & !(FLAG_END_OF_STREAM | FLAG_STOP | FLAG_UNSENT) != 0
            || control == FLAG_END_OF_STREAM | FLAG_STOP
            || (control != 0 && flags & FLAG_UNSENT != 0)
        {
            return Err(FrameError::Flags(flags));
        }
        let head_len = u64::from(LittleEndian::read_u32(&frame[8..12]));
        let payload_len = u64::from(LittleEndian::read_u32(&frame[12..16]));
        let declared = FIXED_LEN as u64 + head_len + payload_len;
        if declared > got {
            return Err(FrameError::Truncated {
                needed: declared,
                got,
            });
        }
        if declared < got {
            return Err(FrameError::Trailing { declared, got });
        }
        // Both fit in `frame`, so both fit in usize.
        let head_len = usize::try_from(head_len).map_err(|_| FrameError::TooLarge(usize::MAX))?;
        if head_len > MAX_HEAD_LEN {
            return Err(FrameError::Head(format!(
                "{head_len} bytes, more than the {MAX_HEAD_LEN} a head may have"
            )));
        }
        let head = decode_head(&frame[FIXED_LEN..FIXED_LEN + head_len])?;
        Ok(WireFrame {
            end_of_stream: flags & FLAG_END_OF_STREAM != 0,
            stop: flags & FLAG_STOP != 0,
            unsent: flags & FLAG_UNSENT != 0,
            head,
            payload: frame.slice(FIXED_LEN + head_len..),
        })
    }

    /// Reads the message, after checking that its type is one of `accepted` (with their
    /// schema versions): the frame's payload through the type's own deserialization.
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
        Ok(payload::decode(&self.head.wire_name, &self.payload)?)
    }
}

/// The fixed part (payload length 0, patched once the payload is written) and the head.
/// A frame without a message (end of stream, stop), numbered `link_seq`, with `flags`.
fn control_frame(link_seq: u64, flags: u16) -> Result<Bytes, FrameError> {
    let head = FrameHead {
        wire_name: String::new(),
        schema_version: 0,
        link_seq,
        seq: 0,
        publish_time_ns: 0,
        codec: String::new(),
    };
    Ok(Bytes::from(fixed_and_head(&encode_head(&head)?, flags)?))
}

fn fixed_and_head(head_bytes: &[u8], flags: u16) -> Result<Vec<u8>, FrameError> {
    let head_len =
        u32::try_from(head_bytes.len()).map_err(|_| FrameError::TooLarge(head_bytes.len()))?;
    let mut buffer = Vec::with_capacity(FIXED_LEN + head_bytes.len());
    buffer.extend_from_slice(&MAGIC);
    buffer.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    buffer.extend_from_slice(&flags.to_le_bytes());
    buffer.extend_from_slice(&head_len.to_le_bytes());
    buffer.extend_from_slice(&0u32.to_le_bytes());
    buffer.extend_from_slice(head_bytes);
    Ok(buffer)
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

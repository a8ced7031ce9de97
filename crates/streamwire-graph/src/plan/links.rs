//! The links of a plan: their two [`Endpoint`]s, what they carry ([`LinkPayload`]:
//! the message or its encoded form) and why ([`LinkReason`], printed next to every link).
//! Apart from the nodes they join ([`super::nodes`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use streamwire_core::{CodecInfo, MessageInfo};

use super::{CodecNodeId, InstanceIndex, LinkId, PortIndex};
use crate::settings::{Compression, Locality, Placement, WireFormat};

/// What a link carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkPayload {
    /// The message itself (pixels, for images).
    Message(MessageInfo),
    /// The encoded message, made by this codec.
    Encoded(CodecInfo),
}

impl LinkPayload {
    /// True for encoded bytes.
    pub fn is_encoded(&self) -> bool {
        matches!(self, LinkPayload::Encoded(_))
    }
}

impl fmt::Display for LinkPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkPayload::Message(message) => write!(f, "{message}"),
            LinkPayload::Encoded(codec) => write!(f, "{} ({})", codec.encoded(), codec.name()),
        }
    }
}

/// Why a link carries what it carries: the plan prints it next to every link.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkReason {
    /// Raw or compressed by the `auto` table for this locality.
    Auto {
        /// The link's locality.
        locality: Locality,
        /// What the table says.
        format: WireFormat,
    },
    /// The global setting is `on` or `off`.
    Global(Compression),
    /// The stream's own setting is `on` or `off`.
    Stream(Compression),
    /// A plain `Out<M>` stays raw unless a per-stream setting asks.
    PlainOutput {
        /// The output's type.
        output_type: &'static str,
    },
    /// Kept raw: the input is `lossless` and the codec is not.
    LosslessInput {
        /// The codec that would have been used.
        codec: &'static str,
    },
    /// From the producer to its encoder, in the producer's process.
    ToEncoder,
    /// From a decoder to an input in the decoder's process.
    Decoded {
        /// The process decoded for.
        placement: Placement,
    },
    /// The input asked for the encoded bytes (`In<Compressed<..>>`).
    BytesRequested {
        /// The input's type.
        input_type: &'static str,
    },
}

impl fmt::Display for LinkReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkReason::Auto {
                locality: Locality::InProcess,
                format: WireFormat::Raw,
            } => f.write_str("raw: in-process delivery is zero-copy (auto)"),
            LinkReason::Auto {
                locality,
                format: WireFormat::Raw,
            } => write!(f, "raw: auto keeps {locality} links raw"),
            LinkReason::Auto {
                locality,
                format: WireFormat::Compressed,
            } => write!(f, "compressed: auto compresses {locality} links"),
            LinkReason::Global(Compression::On) => {
                f.write_str("compressed: global compression is on")
            }
            LinkReason::Global(Compression::Off) => f.write_str("raw: global compression is off"),
            LinkReason::Global(Compression::Auto) => f.write_str("global compression is auto"),
            LinkReason::Stream(Compression::On) => {
                f.write_str("compressed: the stream's setting is on")
            }
            LinkReason::Stream(Compression::Off) => f.write_str("raw: the stream's setting is off"),
            LinkReason::Stream(Compression::Auto) => f.write_str("the stream's setting is auto"),
            LinkReason::PlainOutput { output_type } => write!(
                f,
                "raw: a plain `{output_type}` compresses only when its stream's setting asks"
            ),
            LinkReason::LosslessInput { codec } => {
                write!(f, "raw: the input is lossless and `{codec}` is not")
            }
            LinkReason::ToEncoder => f.write_str("to the encoder, in the producer's process"),
            LinkReason::Decoded { placement } => write!(f, "decoded once for {placement}"),
            LinkReason::BytesRequested { input_type } => {
                write!(f, "the input asked for bytes: `{input_type}`")
            }
        }
    }
}

/// One end of a link: a port of an instance, or a codec node. Resolve it with
/// [`Plan::instance`](super::Plan::instance) / [`InstanceNode::port`](super::InstanceNode::port) or [`Plan::codec_node`](super::Plan::codec_node), or name it with
/// [`Plan::endpoint_name`](super::Plan::endpoint_name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Endpoint {
    /// A port of an instance.
    Port {
        /// The instance.
        instance: InstanceIndex,
        /// The port.
        port: PortIndex,
    },
    /// A codec node.
    Codec(CodecNodeId),
}

impl Endpoint {
    /// The instance, for a port end.
    pub fn instance(&self) -> Option<InstanceIndex> {
        match self {
            Endpoint::Port { instance, .. } => Some(*instance),
            Endpoint::Codec(_) => None,
        }
    }

    /// The codec node, for a codec end.
    pub fn codec_node(&self) -> Option<CodecNodeId> {
        match self {
            Endpoint::Codec(id) => Some(*id),
            Endpoint::Port { .. } => None,
        }
    }
}

/// A link between two nodes: what travels from one end to the other, how far, and why.
#[derive(Clone, Debug)]
pub struct Link {
    /// Its id.
    pub id: LinkId,
    /// Where it starts: an output port or a codec node.
    pub from: Endpoint,
    /// Where it ends: an input port or a codec node.
    pub to: Endpoint,
    /// The name of what travels: the stream, or the encoded stream.
    pub stream: String,
    /// Message or encoded message.
    pub payload: LinkPayload,
    /// How far apart its ends are.
    pub locality: Locality,
    /// Why it carries what it carries.
    pub reason: LinkReason,
    /// Made by `connect` rather than autoconnect.
    pub explicit: bool,
}

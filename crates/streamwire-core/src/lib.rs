//! The core of streamwire: the traits and typed ids that module authors, message authors
//! and codec writers depend on.
//!
//! Most users never name this crate: the facade `streamwire` re-exports everything here
//! and adds the blueprint builder. Crates *below* the facade (message and codec crates)
//! depend on this one directly and use the derives with `#[message(crate = streamwire_core)]`
//! / `#[module(crate = streamwire_core)]`.
//!
//! The pieces:
//! - [`Message`]: a type that travels on a port (`Image`, `Odometry`, your own), with a
//!   stable wire name. Derive it with `#[derive(Message)]`.
//! - [`Codec`]: turns a message into an encoded message and back (JPEG for `Image`,
//!   lossless zstd for `DepthImage`, your own). [`DefaultCodec`] names the codec that
//!   `Compressed<M>` uses when none is written.
//! - [`In`], [`Out`] and [`Compressed`]: the port types a module declares.
//!   `Out<Compressed<Image>>` emits images that the wire may compress; `In<Image>` wants
//!   pixels; `In<Compressed<Image>>` wants the encoded bytes.
//! - [`Module`]: the port metadata and typed handles that `#[derive(Module)]` generates.
//! - [`text`]: settings from text. QoS and codec parameters parse what they print
//!   (`"best_effort, keep_last(1)".parse::<Qos>()`) and serialize to the same text.
//! - [`Header`]: the sequence number and publish time the runtime puts on every delivered
//!   message (separate from a message's own sensor stamp).

pub mod codec;
mod header;
pub mod message;
mod module;
pub mod port;
pub mod text;

pub use codec::{
    Codec, CodecError, CodecInfo, CodecParams, CodecRegistration, CodecSummary, DefaultCodec,
    DefaultCodecOf, Fidelity, registered_codecs,
};
pub use header::{Delivered, Header, Timestamp};
pub use message::{AnyMessage, Message, MessageInfo, Payload};
pub use module::{InstanceId, Module};
pub use port::{
    Compressed, Direction, Durability, History, In, InputPort, Out, OutputPort, PortAttrs,
    PortHandle, PortInfo, PortType, Qos, Reliability, SameMessage, Transport,
};

/// Items used by the code that `#[derive(Message)]` and `#[derive(Module)]` generate.
/// Not a public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use typetag;
}

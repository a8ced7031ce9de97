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
//! - [`Node`]: a module's behaviour (`step` on a [`Trigger`]), and [`Context`], what a
//!   running module sees of the runtime.
//! - [`AnyPort`], [`InputBinding`], [`OutputBinding`], [`Envelope`]: the seam through
//!   which a runtime binds ports whose types it cannot name.
//! - [`text`]: settings from text. QoS and codec parameters parse what they print
//!   (`"best_effort, keep_last(1)".parse::<Qos>()`) and serialize to the same text.
//! - [`Header`]: the sequence number and publish time the runtime puts on every delivered
//!   message (separate from a message's own sensor stamp).

mod bind;
pub mod bitrate;
pub mod blob;
pub mod buffer;
pub mod codec;
mod header;
pub mod input;
pub mod log;
pub mod message;
mod module;
mod node;
pub mod port;
pub mod range;
pub mod registry;
pub mod shape;
pub mod text;

pub use bind::{
    AnyPort, DropReason, Envelope, InputBinding, Lender, OutputBinding, Pair, PortError, Slop,
    Stamped, pair_by_stamp,
};
pub use codec::{
    Adaptation, AdaptationStep, Codec, CodecError, CodecInfo, CodecParams, CodecRegistration,
    CodecSummary, DefaultCodec, DefaultCodecOf, Fidelity, ParamValue, registered_codecs,
};
pub use header::{Delivered, Header, Timestamp};
pub use message::{
    AnyMessage, Message, MessageInfo, MessageKind, MessageRegistration, Payload, SerdeMessage,
    message_info,
};
pub use module::{InstanceId, Module, ModuleValue};
pub use node::{
    Context, Counter, Node, NodeError, NodeResult, PortRef, RunContext, RunNode, StreamTap,
    TapService, Taps, Trigger,
};
pub use port::{
    Compressed, Direction, Durability, History, In, InputPort, Out, OutputPort, PayloadForm,
    PortAttrs, PortHandle, PortInfo, PortType, Qos, QosOverrides, Reliability, SameMessage,
};
pub use range::{ConfigProblem, FieldRange};
pub use registry::{
    ModuleConfig, ModuleRegistration, UndeclaredSetting, registered_modules, registration,
};

/// Items used by the code that `#[derive(Message)]` and `#[derive(Module)]` generate.
/// Not a public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::module::probe;
    pub use crate::range::{Bounds, ConfigFloat, ConfigValue, assert_float, check_field};
    pub use typetag;
    // typetag's own hidden plumbing, versioned by its minor release: `#[derive(Message)]`
    // registers each message by hand (as `#[typetag::serde]` on an impl would) so that a
    // message missing `Serialize`/`Deserialize` is one error, on the `Message` impl. A
    // typetag upgrade that renames this module fails to compile here, not at a user's.
    use typetag::__private23 as typetag_private;
    pub use typetag_private::inventory;

    use crate::message::{AnyMessage, Message};
    use crate::registry::ModuleConfig;

    /// serde, for the `Serialize`/`Deserialize` impls `#[derive(Module)]` writes (users
    /// never add serde for their modules).
    pub use serde;

    /// Deserializes a `#[config]` field that a file gives as `Some`, so that an absent
    /// field (`None`) is told apart from a field written `null` (an `Option` field's
    /// `None`): the derive's mirror struct reads every field through it.
    pub fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: serde::Deserialize<'de>,
    {
        T::deserialize(deserializer).map(Some)
    }

    /// The boxed type a registered module deserializer returns.
    pub type ModuleConfigObject = <dyn ModuleConfig as typetag_private::Strictest>::Object;
    /// A registered module deserializer.
    pub type DeserializeModuleFn = typetag_private::DeserializeFn<ModuleConfigObject>;

    /// Deserializes an `M` from its config fields, boxed as a [`ModuleConfig`]: what
    /// `#[derive(Module)]` registers under `M`'s tag.
    pub fn deserialize_module<M>(
        deserializer: &mut dyn typetag_private::erased_serde::Deserializer,
    ) -> typetag_private::erased_serde::Result<Box<ModuleConfigObject>>
    where
        M: crate::Module + serde::Serialize + serde::de::DeserializeOwned,
    {
        Ok(Box::new(typetag_private::erased_serde::deserialize::<M>(
            deserializer,
        )?))
    }

    /// The boxed type a registered deserializer returns.
    pub type AnyMessageObject = <dyn AnyMessage as typetag_private::Strictest>::Object;
    /// A registered deserializer.
    pub type DeserializeFn = typetag_private::DeserializeFn<AnyMessageObject>;

    /// Deserializes an `M`, boxed as an [`AnyMessage`]: what `#[derive(Message)]`
    /// registers under `M`'s wire name.
    pub fn deserialize_message<M: Message>(
        deserializer: &mut dyn typetag_private::erased_serde::Deserializer,
    ) -> typetag_private::erased_serde::Result<Box<AnyMessageObject>> {
        Ok(Box::new(typetag_private::erased_serde::deserialize::<M>(
            deserializer,
        )?))
    }
}

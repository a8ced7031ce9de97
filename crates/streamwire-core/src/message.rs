//! Messages: the values that travel on ports.

use std::any::{Any, TypeId};
use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::port::Transport;

/// A type that travels on a port.
///
/// A message has a stable type name (used on the wire, in recordings and in blueprint
/// files; it must not change when the Rust type is moved or renamed), serde support, and
/// is cheap to clone: large payloads are shared (`bytes::Bytes`, `Arc`), never copied.
///
/// Derive it, which also implements the hidden plumbing ([`Payload`], [`AnyMessage`]):
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use streamwire::prelude::*;
///
/// /// Temperature of the motor driver, in degrees Celsius.
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/MotorTemperature")]
/// pub struct MotorTemperature {
///     pub celsius: f32,
/// }
///
/// assert_eq!(MotorTemperature::TYPE_NAME, "acme/MotorTemperature");
/// ```
///
/// Without `name = ...` the name is `<crate name>/<type name>`. (Crates below the facade,
/// which cannot depend on it, add `crate = streamwire_core` to the attribute.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamwire message",
    label = "not a message",
    note = "ports carry messages: add `#[derive(Clone, Debug, Serialize, Deserialize, Message)]` to your type, or use a built-in message such as `Image`"
)]
pub trait Message:
    Payload<Logical = Self>
    + AnyMessage
    + Clone
    + fmt::Debug
    + Send
    + Sync
    + Serialize
    + DeserializeOwned
    + 'static
{
    /// The stable name of this message type on the wire and in files, e.g. `"streamwire/Image"`.
    const TYPE_NAME: &'static str;

    /// The run-time description of this message type.
    fn info() -> MessageInfo {
        MessageInfo::of::<Self>()
    }
}

/// What may travel on a port: a [`Message`] itself, or [`Compressed`](crate::Compressed)
/// of one.
///
/// You do not implement this trait: `#[derive(Message)]` does it for messages, and the
/// core implements it for `Compressed<M, C>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamwire message",
    label = "not a message",
    note = "a port carries a message (derive `Message` for your own type) or `Compressed<M>` of a message `M`"
)]
pub trait Payload: 'static {
    /// The logical message: `Image` for both `Image` and `Compressed<Image>`. Ports are
    /// matched on it.
    type Logical: Message;
    /// How the payload may travel: raw, or through a codec.
    const TRANSPORT: Transport;
}

/// The run-time description of a message type: its stable name and its Rust identity.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/Beep")]
/// struct Beep;
///
/// let info = Beep::info();
/// assert_eq!(info.name(), "acme/Beep");
/// assert_eq!(info.rust_name(), "Beep");
/// ```
#[derive(Clone, Copy)]
pub struct MessageInfo {
    name: &'static str,
    rust_name: fn() -> &'static str,
    type_id: fn() -> TypeId,
}

impl MessageInfo {
    /// The description of `M`. For a message type `M`, prefer `M::info()`; this form also
    /// works for types that are not messages (used for errors about them).
    pub const fn of<M: Message>() -> MessageInfo {
        MessageInfo {
            name: M::TYPE_NAME,
            rust_name: short_type_name::<M>,
            type_id: TypeId::of::<M>,
        }
    }

    /// The stable wire name, e.g. `streamwire/Image`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The Rust type's short name, e.g. `Image`; used in messages written for people.
    pub fn rust_name(&self) -> &'static str {
        (self.rust_name)()
    }

    /// The Rust type's identity.
    pub fn type_id(&self) -> TypeId {
        (self.type_id)()
    }
}

impl PartialEq for MessageInfo {
    fn eq(&self, other: &Self) -> bool {
        self.type_id() == other.type_id()
    }
}

impl Eq for MessageInfo {}

impl fmt::Debug for MessageInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageInfo")
            .field("name", &self.name)
            .field("rust_name", &self.rust_name())
            .finish()
    }
}

impl fmt::Display for MessageInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rust_name())
    }
}

/// `core::any::type_name` without the module path: `Image`, `Compressed<Image, Jpeg>`.
pub(crate) fn short_type_name<T: ?Sized>() -> &'static str {
    let full = std::any::type_name::<T>();
    // Generic types keep their full path inside the brackets; only messages (simple
    // nominal types) go through here, so the last path segment is the name.
    match full.find('<') {
        Some(_) => full,
        None => full.rsplit("::").next().unwrap_or(full),
    }
}

/// A message of any type, for code that handles streams it does not know at compile
/// time (a recorder, a per-stream benchmark, a bridge).
///
/// Serialized with the message's stable type name as the tag, so a `Box<dyn AnyMessage>`
/// round-trips through any serde format, and deserializing an unknown type name is an
/// error, not a panic. `#[derive(Message)]` implements it and registers the type.
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// use streamwire::AnyMessage;
///
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/Chirp")]
/// struct Chirp { volume: u8 }
///
/// let boxed: Box<dyn AnyMessage> = Box::new(Chirp { volume: 3 });
/// let json = serde_json::to_string(&boxed)?;
/// assert_eq!(json, r#"{"acme/Chirp":{"volume":3}}"#);
/// let back: Box<dyn AnyMessage> = serde_json::from_str(&json)?;
/// assert_eq!(back.downcast_ref::<Chirp>().map(|b| b.volume), Some(3));
/// // An unknown type name is an error, not a panic.
/// assert!(serde_json::from_str::<Box<dyn AnyMessage>>(r#"{"acme/Nope":{}}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[typetag::serde]
pub trait AnyMessage: fmt::Debug + Send + Sync + 'static {
    /// The stable type name ([`Message::TYPE_NAME`]).
    fn type_name(&self) -> &'static str;
    /// For downcasting to the concrete message type.
    fn as_any(&self) -> &dyn Any;
    /// A boxed copy (cheap: payloads are shared).
    fn clone_boxed(&self) -> Box<dyn AnyMessage>;
}

impl Clone for Box<dyn AnyMessage> {
    fn clone(&self) -> Self {
        self.clone_boxed()
    }
}

impl dyn AnyMessage {
    /// The concrete message, if it is an `M`.
    pub fn downcast_ref<M: Message>(&self) -> Option<&M> {
        self.as_any().downcast_ref::<M>()
    }
}

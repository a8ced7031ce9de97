//! Messages: the values that travel on ports.

use std::any::{Any, TypeId};
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::port::{Durability, History, PayloadForm, Qos, Reliability};
use crate::shape::{self, Shape, ShapeError};

/// A type that travels on a port.
///
/// A message has a stable type name (used on the wire, in recordings and in blueprint
/// files; it must not change when the Rust type is moved or renamed), serde support, and
/// is cheap to clone: large payloads are shared (`bytes::Bytes`, `Arc`), never copied.
///
/// Derive it: the derive implements [`Payload`] and registers the type for deserialization
/// by its name (every message is also an [`AnyMessage`]):
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
    Payload<Logical = Self> + AnyMessage + Clone + fmt::Debug + Send + Sync + SerdeMessage + 'static
{
    /// The stable name of this message type on the wire and in files, e.g. `"streamwire/Image"`.
    const TYPE_NAME: &'static str;
    /// Sensor data or state: decides the default QoS of the ports that carry it
    /// (`#[message(kind = sensor)]`; state unless said otherwise).
    const KIND: MessageKind = MessageKind::State;
    /// The version of this type's serialized form, carried in every wire frame: a
    /// receiver refuses a frame of another version (counted as incompatible) instead of
    /// misreading it. Raise it when a change of the type's fields changes its serde form.
    const SCHEMA_VERSION: u32 = 1;

    /// The run-time description of this message type.
    fn info() -> MessageInfo {
        MessageInfo::of::<Self>()
    }

    /// The size of this message's content in bytes (its pixels, points, file bytes: what
    /// the report's links table counts, not its serialized size).
    ///
    /// `#[derive(Message)]` sums the lengths of the type's `Bytes` and `Vec<u8>` fields
    /// (0 for a type without one); `#[message(payload_len = path)]` names a
    /// `fn(&Self) -> usize` to use instead:
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use streamwire::prelude::*;
    ///
    /// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
    /// #[message(name = "acme/Scan")]
    /// struct Scan { ranges: Vec<u8>, intensities: Vec<u8>, label: String }
    ///
    /// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
    /// #[message(name = "acme/Ranges", payload_len = Ranges::content_len)]
    /// struct Ranges { metres: Vec<f32> }
    ///
    /// impl Ranges {
    ///     fn content_len(&self) -> usize {
    ///         self.metres.len() * std::mem::size_of::<f32>()
    ///     }
    /// }
    ///
    /// let scan = Scan { ranges: vec![1; 3], intensities: vec![2; 4], label: "x".into() };
    /// assert_eq!(scan.payload_len(), 7);
    /// assert_eq!(Ranges { metres: vec![1.0; 10] }.payload_len(), 40);
    /// ```
    fn payload_len(&self) -> usize {
        0
    }

    /// This type's serde form ([`Shape`]): what a recording writes as the schema of a
    /// message without a ROS 2 type, and what its replay compares with the type it reads
    /// into. The default traces the type's `Deserialize` ([`shape::trace`]); a type serde
    /// cannot trace (an untagged enum, a `serde_json::Value` field) returns the reason,
    /// and its streams cannot be recorded.
    fn describe() -> Result<Shape, ShapeError> {
        shape::trace::<Self>()
    }
}

/// `Serialize` and `DeserializeOwned`, as one requirement of [`Message`]: a message type
/// without them is told to derive them (not that `Message` is "sealed").
///
/// (Why two errors remain, one per serde trait, rather than one naming this trait: a
/// supertrait of `Message` is checked leaf by leaf, so `#[diagnostic::on_unimplemented]`
/// here and `#[diagnostic::do_not_recommend]` on the blanket impl never fire; reaching one
/// error would mean taking serde out of `Message`'s supertraits, and with it
/// `M: Message` implying `M: Serialize` for every generic user of messages.)
pub trait SerdeMessage: Serialize + DeserializeOwned {}

impl<T: Serialize + DeserializeOwned> SerdeMessage for T {}

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
    ///
    /// Always a [`Message`]; like [`Delivered`](Payload::Delivered), the bound is stated
    /// where it is used (`PortType`, `Out::publish`), so that a message type missing a
    /// trait is reported once, by its `Message` impl, not again through its `Payload` impl.
    type Logical: 'static;
    /// What an input of this payload receives: the message itself, or for
    /// `Compressed<M, C>` the encoded message (`CompressedImage` for JPEG).
    ///
    /// Always a [`Message`]; the bound is stated where it is used (`In::recv`), so that a
    /// message type missing a trait is reported once, not again through this type.
    type Delivered: 'static;
    /// The payload's form: raw, or encoded by a codec.
    const FORM: PayloadForm;
}

/// What a message type is for, which decides the default QoS of its ports
/// (`#[message(kind = sensor | state)]`, default `state`).
///
/// ```
/// # use streamwire_core::{History, MessageKind, Reliability};
/// let sensor = MessageKind::Sensor.default_qos();
/// assert_eq!(sensor.reliability, Reliability::BestEffort);
/// assert_eq!(sensor.history, History::KeepLast(1));
/// assert_eq!(MessageKind::State.default_qos().history, History::KeepLast(10));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A stream of measurements where only the newest matters (images, depth, point
    /// clouds): best effort, keep the last 1. A stale frame is dropped, not queued.
    Sensor,
    /// State that must arrive (odometry, poses, commands): reliable, keep the last 10,
    /// the ROS 2 default profile.
    #[default]
    State,
}

impl MessageKind {
    /// The QoS of a port of this kind when its `#[port(..)]` attributes say nothing.
    pub const fn default_qos(self) -> Qos {
        match self {
            MessageKind::Sensor => Qos {
                reliability: Reliability::BestEffort,
                durability: Durability::Volatile,
                history: History::KeepLast(1),
            },
            MessageKind::State => Qos::DEFAULT,
        }
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MessageKind::Sensor => "sensor",
            MessageKind::State => "state",
        })
    }
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
    kind: MessageKind,
    schema_version: u32,
    rust_name: fn() -> &'static str,
    type_id: fn() -> TypeId,
    describe: fn() -> Result<Shape, ShapeError>,
}

impl MessageInfo {
    /// The description of `M`. For a message type `M`, prefer `M::info()`; this form also
    /// works for types that are not messages (used for errors about them).
    pub const fn of<M: Message>() -> MessageInfo {
        MessageInfo {
            name: M::TYPE_NAME,
            kind: M::KIND,
            schema_version: M::SCHEMA_VERSION,
            rust_name: short_type_name::<M>,
            type_id: TypeId::of::<M>,
            describe: M::describe,
        }
    }

    /// The stable wire name, e.g. `streamwire/Image`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Sensor data or state (decides its ports' default QoS).
    pub fn kind(&self) -> MessageKind {
        self.kind
    }

    /// The version of its serialized form ([`Message::SCHEMA_VERSION`]).
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    /// The Rust type's short name, e.g. `Image`; used in messages written for people.
    pub fn rust_name(&self) -> &'static str {
        (self.rust_name)()
    }

    /// The Rust type's identity.
    pub fn type_id(&self) -> TypeId {
        (self.type_id)()
    }

    /// Its serde form ([`Message::describe`]).
    pub fn describe(&self) -> Result<Shape, ShapeError> {
        (self.describe)()
    }
}

/// A message type known by its wire name: `#[derive(Message)]` registers every message
/// type, so that code that meets a type only by name (a recorder) finds its description.
#[derive(Debug)]
pub struct MessageRegistration {
    info: MessageInfo,
}

impl MessageRegistration {
    /// The registration of `M` (what the derive submits).
    pub const fn of<M: Message>() -> MessageRegistration {
        MessageRegistration {
            info: MessageInfo::of::<M>(),
        }
    }
}

inventory::collect!(MessageRegistration);

/// The registered message type named `name` (`acme/Count`).
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// #[message(name = "acme/Hum")]
/// struct Hum { hz: f32 }
///
/// let info = streamwire::message_info("acme/Hum").expect("registered");
/// assert_eq!(info.rust_name(), "Hum");
/// assert!(info.describe().is_ok());
/// assert!(streamwire::message_info("acme/Nope").is_none());
/// ```
pub fn message_info(name: &str) -> Option<MessageInfo> {
    inventory::iter::<MessageRegistration>
        .into_iter()
        .find(|r| r.info.name == name)
        .map(|r| r.info)
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
            .field("kind", &self.kind)
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
/// error, not a panic. Every message implements it; `#[derive(Message)]` registers the type.
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
    /// The version of the type's serialized form ([`Message::SCHEMA_VERSION`]).
    fn schema_version(&self) -> u32;
    /// The size of its content in bytes: [`Message::payload_len`] (named apart so that a
    /// message type, which is both, has one `payload_len`).
    fn content_len(&self) -> usize;
}

/// Every message is an `AnyMessage`; `#[derive(Message)]` registers it for
/// deserialization by its wire name.
impl<M: Message> AnyMessage for M {
    fn type_name(&self) -> &'static str {
        M::TYPE_NAME
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn clone_boxed(&self) -> Box<dyn AnyMessage> {
        Box::new(self.clone())
    }

    fn schema_version(&self) -> u32 {
        M::SCHEMA_VERSION
    }

    fn content_len(&self) -> usize {
        Message::payload_len(self)
    }

    #[doc(hidden)]
    fn typetag_name(&self) -> &'static str {
        M::TYPE_NAME
    }

    #[doc(hidden)]
    fn typetag_deserialize(&self) {}
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

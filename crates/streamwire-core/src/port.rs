//! Ports: what a module declares it sends and receives, and how it may travel.
//!
//! | field type                  | logical message | delivered at run time                 |
//! |-----------------------------|-----------------|---------------------------------------|
//! | `Out<Image>`                | `Image`         | publishes `Image`, sent raw           |
//! | `Out<Compressed<Image>>`    | `Image`         | publishes `Image` (or ready-made bytes); the wire may compress |
//! | `In<Image>`                 | `Image`         | receives pixels (decoded if needed)   |
//! | `In<Compressed<Image, C>>`  | `Image`         | receives the bytes encoded by `C`     |
//!
//! Ports are matched on the *logical* message; the codec of an input is a requirement,
//! the codec of an output is a permission.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::codec::{Codec, CodecInfo, DefaultCodecOf};
use crate::message::{Message, MessageInfo, Payload};
use crate::module::InstanceId;

/// An input port receiving `T`: a message (`In<Image>`: pixels) or
/// `Compressed<M, C>` (`In<Compressed<Image>>`: the bytes, encoded by codec `C`).
pub struct In<T> {
    /// Set by the runtime when the module runs (see [`AnyPort`](crate::AnyPort)).
    pub(crate) state: Option<crate::bind::InputState>,
    _payload: PhantomData<fn() -> T>,
}

/// An output port emitting `T`: a message (`Out<Image>`: always raw unless a per-stream
/// setting asks) or `Compressed<M, C>` (`Out<Compressed<Image>>`: images that the wire
/// may compress with `C`).
pub struct Out<T> {
    /// Set by the runtime when the module runs: the port index and the fan-out.
    pub(crate) binding: Option<(usize, std::sync::Arc<dyn crate::bind::OutputBinding>)>,
    _payload: PhantomData<fn() -> T>,
}

/// A port annotation: message `M`, encoded by codec `C` (by default `M`'s
/// [`DefaultCodec`](crate::DefaultCodec)).
///
/// On an output it means "the wire may compress"; on an input, "I want the encoded
/// bytes". It is only a type: there are no values of it.
///
/// A codec that cannot carry the message does not compile: `Compressed<DepthImage, Jpeg>`
/// fails with "JPEG carries 8-bit colour images, not `DepthImage`" (see `tests/ui`).
pub struct Compressed<M, C = DefaultCodecOf<M>> {
    _never: PhantomData<fn() -> (M, C)>,
    _uninhabited: std::convert::Infallible,
}

impl<M: Message, C: Codec<M>> Payload for Compressed<M, C> {
    type Logical = M;
    type Delivered = C::Encoded;
    const TRANSPORT: Transport = Transport::Codec(C::INFO);
}

macro_rules! port_basics {
    ($port:ident, $slot:ident) => {
        impl<T> $port<T> {
            /// A port, to be bound by the runtime when the blueprint runs.
            pub const fn new() -> Self {
                $port {
                    $slot: None,
                    _payload: PhantomData,
                }
            }
        }

        impl<T> Default for $port<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> fmt::Debug for $port<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(std::any::type_name::<Self>())
            }
        }
    };
}

port_basics!(In, state);
port_basics!(Out, binding);

/// How a payload travels: raw, or encoded by a codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// The message itself.
    Raw,
    /// The message encoded by this codec (`Compressed<M, C>`).
    Codec(CodecInfo),
}

impl Transport {
    /// The codec, if any.
    pub fn codec(&self) -> Option<CodecInfo> {
        match self {
            Transport::Raw => None,
            Transport::Codec(codec) => Some(*codec),
        }
    }
}

/// Whether a port sends or receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// `In<..>`.
    Input,
    /// `Out<..>`.
    Output,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Input => "input",
            Direction::Output => "output",
        })
    }
}

/// A port type: `In<T>` or `Out<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a port",
    label = "not a port",
    note = "a module's fields are ports (`In<M>`, `Out<M>`, `In<Compressed<M>>`, `Out<Compressed<M>>`), or configuration marked `#[config]`"
)]
pub trait PortType: 'static {
    /// Input or output.
    const DIRECTION: Direction;
    /// The logical message, used to match ports.
    type Message: Message;
    /// What the port carries: the message, or `Compressed<M, C>`.
    type Payload: Payload<Logical = Self::Message>;
}

impl<T: Payload> PortType for In<T> {
    const DIRECTION: Direction = Direction::Input;
    type Message = T::Logical;
    type Payload = T;
}

impl<T: Payload> PortType for Out<T> {
    const DIRECTION: Direction = Direction::Output;
    type Message = T::Logical;
    type Payload = T;
}

/// An output port, the first argument of `connect(from, to)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an output: a connection starts at an output",
    label = "this is not an `Out<..>` port",
    note = "write `connect(producer.output, consumer.input)`: the output first, then the input"
)]
pub trait OutputPort: PortType {}

impl<T: Payload> OutputPort for Out<T> {}

/// An input port, the second argument of `connect(from, to)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input: a connection ends at an input",
    label = "this is not an `In<..>` port",
    note = "write `connect(producer.output, consumer.input)`: the output first, then the input"
)]
pub trait InputPort: PortType {}

impl<T: Payload> InputPort for In<T> {}

/// Holds when an output of message `T` may feed an input of message `Self`: the two
/// logical messages are the same type.
///
/// Written as a trait (not `I::Message == O::Message`) so that a mismatch is reported
/// with this message instead of a bare "type mismatch".
#[diagnostic::on_unimplemented(
    message = "an output of `{T}` cannot feed an input of `{Self}`",
    label = "the message types differ",
    note = "ports connect only when they carry the same message type; compression (`Compressed<..>`) may differ, the message may not"
)]
pub trait SameMessage<T> {}

impl<T> SameMessage<T> for T {}

/// Delivery guarantee of a port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reliability {
    /// Every message is delivered, or the sender waits (the ROS 2 default).
    #[default]
    Reliable,
    /// Messages may be dropped instead of delaying newer ones (cameras, lidars).
    BestEffort,
}

/// Whether late joiners get messages sent before they subscribed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Only messages sent after subscribing.
    #[default]
    Volatile,
    /// The last `depth` messages are kept for late joiners (maps, static transforms).
    TransientLocal,
}

/// How many messages an input queue holds before the oldest is dropped (and counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum History {
    /// Keep the newest `n` messages (`n >= 1`).
    KeepLast(u32),
    /// Deliver everything, within bounds: the queue holds up to the runtime's keep-all
    /// depth (default 10); a producer finding it full waits up to a deadline (default
    /// 100 ms of run-clock time) for room, then drops the message and counts it. Nothing
    /// is unbounded. On a stream with several consumers, a slow keep-all consumer delays
    /// the producer (and so the others) by up to that deadline per message.
    KeepAll,
}

/// Quality of service of a port: `#[port(best_effort, depth = 1)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Qos {
    /// Delivery guarantee.
    pub reliability: Reliability,
    /// Late-joiner behaviour.
    pub durability: Durability,
    /// Queue policy.
    pub history: History,
}

impl Qos {
    /// Reliable, volatile, keep the last 10: the ROS 2 default profile.
    pub const DEFAULT: Qos = Qos {
        reliability: Reliability::Reliable,
        durability: Durability::Volatile,
        history: History::KeepLast(10),
    };
}

impl Default for Qos {
    fn default() -> Self {
        Qos::DEFAULT
    }
}

impl fmt::Display for Qos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reliability = match self.reliability {
            Reliability::Reliable => "reliable",
            Reliability::BestEffort => "best_effort",
        };
        let durability = match self.durability {
            Durability::Volatile => "volatile",
            Durability::TransientLocal => "transient_local",
        };
        match self.history {
            History::KeepLast(n) => write!(f, "{reliability}, {durability}, keep_last({n})"),
            History::KeepAll => write!(f, "{reliability}, {durability}, keep_all"),
        }
    }
}

/// The QoS values a port's `#[port(..)]` attributes set; `None` where they say nothing,
/// and the default of the port's message kind applies
/// ([`MessageKind::default_qos`](crate::MessageKind::default_qos)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QosOverrides {
    /// `reliable` or `best_effort`.
    pub reliability: Option<Reliability>,
    /// `volatile` or `transient_local`.
    pub durability: Option<Durability>,
    /// `depth = N` or `keep_all`.
    pub history: Option<History>,
}

impl QosOverrides {
    /// Nothing set.
    pub const NONE: QosOverrides = QosOverrides {
        reliability: None,
        durability: None,
        history: None,
    };

    /// These overrides over `defaults`.
    ///
    /// ```
    /// # use streamwire_core::{History, MessageKind, QosOverrides, Reliability};
    /// let overrides = QosOverrides { history: Some(History::KeepLast(5)), ..QosOverrides::NONE };
    /// let qos = overrides.over(MessageKind::Sensor.default_qos());
    /// assert_eq!(qos.reliability, Reliability::BestEffort);
    /// assert_eq!(qos.history, History::KeepLast(5));
    /// ```
    pub const fn over(&self, defaults: Qos) -> Qos {
        Qos {
            reliability: match self.reliability {
                Some(r) => r,
                None => defaults.reliability,
            },
            durability: match self.durability {
                Some(d) => d,
                None => defaults.durability,
            },
            history: match self.history {
                Some(h) => h,
                None => defaults.history,
            },
        }
    }

    /// True when no value is set.
    pub fn is_empty(&self) -> bool {
        *self == QosOverrides::NONE
    }
}

/// The attributes a port field carries in `#[port(..)]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortAttrs {
    /// An input that may stay unconnected.
    pub optional: bool,
    /// An input that must never receive lossy or downscaled data.
    pub lossless: bool,
    /// The QoS values the attributes set; the rest come from the message's kind.
    pub qos: QosOverrides,
}

impl PortAttrs {
    /// No flags, no QoS set.
    pub const DEFAULT: PortAttrs = PortAttrs {
        optional: false,
        lossless: false,
        qos: QosOverrides::NONE,
    };
}

impl Default for PortAttrs {
    fn default() -> Self {
        PortAttrs::DEFAULT
    }
}

/// Static metadata of one port, generated by `#[derive(Module)]`.
#[derive(Clone, Copy, Debug)]
pub struct PortInfo {
    field: &'static str,
    stream: &'static str,
    type_name: &'static str,
    direction: Direction,
    message: MessageInfo,
    transport: Transport,
    attrs: PortAttrs,
}

impl PortInfo {
    /// Metadata of a port field of type `P`. `type_name` is the type as the user wrote it.
    pub const fn new<P: PortType>(
        field: &'static str,
        stream: &'static str,
        type_name: &'static str,
        attrs: PortAttrs,
    ) -> PortInfo {
        PortInfo {
            field,
            stream,
            type_name,
            direction: P::DIRECTION,
            message: MessageInfo::of::<P::Message>(),
            transport: <P::Payload as Payload>::TRANSPORT,
            attrs,
        }
    }

    /// The struct field, e.g. `color_image`.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// The stream name before namespaces and remaps (the field name unless
    /// `#[port(name = "...")]` says otherwise).
    pub fn stream(&self) -> &'static str {
        self.stream
    }

    /// The port's type as written, e.g. `Out<Compressed<Image>>`.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Input or output.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The logical message.
    pub fn message(&self) -> MessageInfo {
        self.message
    }

    /// Raw, or the codec (`Compressed<M, C>`): a permission on an output, a requirement on
    /// an input.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// `optional`, `lossless`, QoS.
    pub fn attrs(&self) -> PortAttrs {
        self.attrs
    }

    /// The QoS this port gets: its `#[port(..)]` values over the defaults of its message's
    /// kind. (An encoded stream's ports use the kind of the message inside.)
    pub fn qos(&self) -> Qos {
        self.attrs.qos.over(self.message.kind().default_qos())
    }
}

/// A typed reference to one port of one module instance in a blueprint, for explicit
/// `connect(from, to)` calls checked by the compiler. Generated handles are fields of the
/// `<Module>Ports` struct that `#[derive(Module)]` writes.
pub struct PortHandle<P> {
    instance: InstanceId,
    port_index: usize,
    _port: PhantomData<fn() -> P>,
}

impl<P> PortHandle<P> {
    /// The handle of port number `port_index` (in `Module::PORTS`) of `instance`. Made by
    /// the derive. Unbounded on purpose: a field whose type is not a port is reported
    /// once, by the metadata, not again here.
    #[doc(hidden)]
    pub const fn new(instance: InstanceId, port_index: usize) -> Self {
        PortHandle {
            instance,
            port_index,
            _port: PhantomData,
        }
    }

    /// The instance the port belongs to.
    pub fn instance(&self) -> InstanceId {
        self.instance
    }

    /// The port's index in the module's `PORTS`.
    pub fn port_index(&self) -> usize {
        self.port_index
    }
}

impl<P> Clone for PortHandle<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for PortHandle<P> {}

impl<P> fmt::Debug for PortHandle<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortHandle")
            .field("instance", &self.instance)
            .field("port_index", &self.port_index)
            .finish()
    }
}

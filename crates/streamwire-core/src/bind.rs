//! Binding ports to a runtime, without the runtime naming the port's type.
//!
//! A module's `In<T>` and `Out<T>` fields are inert until a runtime binds them. The
//! runtime sees each port only as a [`AnyPort`] (the derive's
//! [`Module::visit_ports`](crate::Module::visit_ports) hands them over) and gives it an
//! [`InputBinding`] or [`OutputBinding`]: the queue an input reads, the fan-out an output
//! publishes into. Messages cross that seam as an [`Envelope`]: the runtime's [`Header`]
//! and one shared, type-erased message (`Arc<dyn AnyMessage>`), so fan-out to any number
//! of consumers is a reference-count bump per consumer, never a copy.
//!
//! The typed side stays typed: `In<Image>::recv` gives a `Delivered<Image>`, and
//! `In<Compressed<Image>>::recv` the `CompressedImage` bytes; a module author never
//! downcasts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::codec::Codec;
use crate::header::{Delivered, Header, Timestamp};
use crate::message::{AnyMessage, Message, Payload};
use crate::port::{Compressed, Direction, In, Out};

/// A message on its way through a runtime: the runtime's header and the message, shared.
///
/// Cloning an envelope clones an `Arc`: every consumer of one publish sees the same
/// message in memory.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// Sequence number and publish time, set by the runtime when the producer published.
    pub header: Header,
    /// The message (its own sensor stamp untouched).
    pub message: Arc<dyn AnyMessage>,
}

/// Why a message was dropped before a module saw it. Every drop is counted on the port
/// that dropped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DropReason {
    /// The input's queue was full (keep-last evicted the oldest, or keep-all waited past
    /// its deadline).
    QueueFull,
    /// An `all` trigger found no partner with a matching stamp.
    Unpaired,
    /// A decode node could not decode the encoded message.
    DecodeFailed,
    /// A message could not be deserialized, or had another type than the port's.
    DeserializeFailed,
    /// The queue of an encode or decode node on the way was full (the node fell behind
    /// the QoS it was given).
    CodecQueueFull,
    /// The queue of the sender that puts the stream on the wire was full.
    SenderDropped,
    /// Sent on the wire and never received (a gap in the link sequence).
    LostOnWire,
}

impl DropReason {
    /// Every reason, in report order.
    pub const ALL: [DropReason; 7] = [
        DropReason::QueueFull,
        DropReason::Unpaired,
        DropReason::DecodeFailed,
        DropReason::DeserializeFailed,
        DropReason::CodecQueueFull,
        DropReason::SenderDropped,
        DropReason::LostOnWire,
    ];

    /// The short name used in reports: `queue_full`, `unpaired`...
    pub fn name(&self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::Unpaired => "unpaired",
            DropReason::DecodeFailed => "decode_failed",
            DropReason::DeserializeFailed => "deserialize_failed",
            DropReason::CodecQueueFull => "codec_queue_full",
            DropReason::SenderDropped => "sender_dropped",
            DropReason::LostOnWire => "lost_on_wire",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of using a port at run time.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PortError {
    /// The port was never bound by a runtime (the module is not running in one, or the
    /// port was added after binding).
    #[error(
        "port `{port}` is not bound: it is bound when its module runs in a blueprint or a harness"
    )]
    Unbound {
        /// The port's type, e.g. `In<Image>`.
        port: &'static str,
    },
    /// A message of another type arrived (a runtime bug or a hand-written `Module` impl
    /// that lies about its ports). Counted as `deserialize_failed` on the port.
    #[error("port `{port}` expected a `{expected}` message, got `{found}`")]
    WrongMessage {
        /// The port's type.
        port: &'static str,
        /// The message type the port carries.
        expected: &'static str,
        /// The message type that arrived.
        found: &'static str,
    },
    /// The runtime is stopping; the message was not published.
    #[error("the run is stopping: nothing more is published")]
    Stopped,
    /// The port was bound the wrong way round (an input given an output binding).
    #[error("cannot bind {port} as an {direction}")]
    WrongDirection {
        /// The port's type.
        port: &'static str,
        /// The direction of the binding offered.
        direction: Direction,
    },
}

/// The queue an input reads, provided by a runtime.
///
/// Pops never block: the runtime waits for the module's trigger before it calls `step`,
/// so by then the messages are there.
pub trait InputBinding: Send + Sync {
    /// Takes the oldest queued message; `None` when empty, and once the run is stopping.
    fn pop(&self) -> Option<Envelope>;
    /// The oldest queued message, left in the queue.
    fn peek(&self) -> Option<Envelope>;
    /// How many messages are queued.
    fn len(&self) -> usize;
    /// True when nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True when every producer of this input has finished and the queue is empty: no
    /// message will ever arrive again.
    fn is_closed(&self) -> bool;
    /// Counts a message the module side took from the queue and then dropped (unpaired
    /// by an `all` trigger, of another type): counted under `reason`, no longer as
    /// delivered.
    fn count_drop(&self, reason: DropReason);
}

/// The fan-out an output publishes into, provided by a runtime.
pub trait OutputBinding: Send + Sync {
    /// Publishes one message to every consumer: stamps the header (sequence number,
    /// publish time) and hands the same shared message to each.
    fn publish(&self, message: Arc<dyn AnyMessage>) -> Result<Header, PortError>;
    /// True while anyone consumes this output (a module input, a tap, or a codec node
    /// that has consumers of its own). A source may skip expensive work when false.
    fn has_consumers(&self) -> bool;
    /// A buffer of `len` bytes for a message of this output to be filled in place: shared
    /// memory where the stream leaves the process through it, else a pooled heap buffer
    /// (see [`crate::buffer`]). Never blocks. The default is a fresh heap buffer.
    fn loan(&self, len: usize) -> crate::buffer::Loan {
        crate::buffer::Loan::heap(len)
    }
}

/// A port seen without its type: how a runtime binds `In<T>` and `Out<T>` fields it
/// cannot name. `#[derive(Module)]` hands every port field over as one of these.
pub trait AnyPort: Send {
    /// Input or output.
    fn direction(&self) -> Direction;
    /// The port's type, e.g. `In<Image>`, for messages.
    fn type_name(&self) -> &'static str;
    /// Binds an input to its queue. `index` is the port's index in `Module::PORTS`.
    fn bind_input(&mut self, index: usize, binding: Arc<dyn InputBinding>)
    -> Result<(), PortError>;
    /// Binds an output to its fan-out. `index` is the port's index in `Module::PORTS`.
    fn bind_output(
        &mut self,
        index: usize,
        binding: Arc<dyn OutputBinding>,
    ) -> Result<(), PortError>;
    /// Drops the binding (the run ended); using the port is then an error again.
    fn unbind(&mut self);
    /// True once bound.
    fn is_bound(&self) -> bool;
}

/// The binding of one input, with the most recent message it delivered (for
/// [`In::latest`]).
pub(crate) struct InputState {
    pub(crate) index: usize,
    pub(crate) binding: Arc<dyn InputBinding>,
    pub(crate) latest: Option<Envelope>,
}

impl<T: 'static> AnyPort for In<T> {
    fn direction(&self) -> Direction {
        Direction::Input
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    fn bind_input(
        &mut self,
        index: usize,
        binding: Arc<dyn InputBinding>,
    ) -> Result<(), PortError> {
        self.state = Some(InputState {
            index,
            binding,
            latest: None,
        });
        Ok(())
    }

    fn bind_output(&mut self, _: usize, _: Arc<dyn OutputBinding>) -> Result<(), PortError> {
        Err(PortError::WrongDirection {
            port: std::any::type_name::<Self>(),
            direction: Direction::Output,
        })
    }

    fn unbind(&mut self) {
        self.state = None;
    }

    fn is_bound(&self) -> bool {
        self.state.is_some()
    }
}

impl<T: 'static> AnyPort for Out<T> {
    fn direction(&self) -> Direction {
        Direction::Output
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }

    fn bind_input(&mut self, _: usize, _: Arc<dyn InputBinding>) -> Result<(), PortError> {
        Err(PortError::WrongDirection {
            port: std::any::type_name::<Self>(),
            direction: Direction::Input,
        })
    }

    fn bind_output(
        &mut self,
        index: usize,
        binding: Arc<dyn OutputBinding>,
    ) -> Result<(), PortError> {
        self.binding = Some((index, binding));
        Ok(())
    }

    fn unbind(&mut self) {
        self.binding = None;
    }

    fn is_bound(&self) -> bool {
        self.binding.is_some()
    }
}

fn unbound<P>() -> PortError {
    PortError::Unbound {
        port: std::any::type_name::<P>(),
    }
}

/// Downcasts an envelope to the port's delivered type, counting a mismatch.
fn open<D: Message>(
    port: &'static str,
    binding: &dyn InputBinding,
    envelope: &Envelope,
) -> Result<Delivered<D>, PortError> {
    match envelope.message.as_any().downcast_ref::<D>() {
        Some(message) => Ok(Delivered {
            header: envelope.header,
            message: message.clone(),
        }),
        None => {
            binding.count_drop(DropReason::DeserializeFailed);
            Err(PortError::WrongMessage {
                port,
                expected: D::TYPE_NAME,
                found: envelope.message.type_name(),
            })
        }
    }
}

impl<T: Payload> In<T>
where
    T::Delivered: Message,
{
    fn state(&self) -> Result<&InputState, PortError> {
        self.state.as_ref().ok_or_else(unbound::<Self>)
    }

    /// Takes the oldest queued message with its header, or `None` when the queue is
    /// empty or the run is stopping (so `while let Some(m) = self.input.recv()? { .. }`
    /// ends by itself at the stop, however fast input arrives; what is left is counted
    /// as unprocessed at stop). `In<Image>` gives images; `In<Compressed<Image>>` gives the encoded bytes.
    pub fn recv(&mut self) -> Result<Option<Delivered<T::Delivered>>, PortError> {
        let state = self.state.as_mut().ok_or_else(unbound::<Self>)?;
        let Some(envelope) = state.binding.pop() else {
            return Ok(None);
        };
        let delivered = open::<T::Delivered>(
            std::any::type_name::<Self>(),
            state.binding.as_ref(),
            &envelope,
        )?;
        state.latest = Some(envelope);
        Ok(Some(delivered))
    }

    /// Takes every queued message and returns the newest one received so far (this
    /// step or earlier), or `None` if nothing ever arrived: how a module driven by a
    /// fast input reads a slow one (odometry, a map).
    pub fn latest(&mut self) -> Result<Option<Delivered<T::Delivered>>, PortError> {
        let state = self.state.as_mut().ok_or_else(unbound::<Self>)?;
        while let Some(envelope) = state.binding.pop() {
            state.latest = Some(envelope);
        }
        match &state.latest {
            None => Ok(None),
            Some(envelope) => open::<T::Delivered>(
                std::any::type_name::<Self>(),
                state.binding.as_ref(),
                envelope,
            )
            .map(Some),
        }
    }

    /// The oldest queued message, left in the queue.
    pub fn peek(&self) -> Result<Option<Delivered<T::Delivered>>, PortError> {
        let state = self.state()?;
        match state.binding.peek() {
            None => Ok(None),
            Some(envelope) => open::<T::Delivered>(
                std::any::type_name::<Self>(),
                state.binding.as_ref(),
                &envelope,
            )
            .map(Some),
        }
    }

    /// How many messages are queued.
    pub fn len(&self) -> Result<usize, PortError> {
        Ok(self.state()?.binding.len())
    }

    /// True when no message is queued.
    pub fn is_empty(&self) -> Result<bool, PortError> {
        Ok(self.state()?.binding.is_empty())
    }

    /// True when every producer of this input has finished and nothing is queued.
    pub fn is_closed(&self) -> Result<bool, PortError> {
        Ok(self.state()?.binding.is_closed())
    }

    /// Drops the oldest queued message, counting it under `reason`.
    pub fn drop_oldest(&mut self, reason: DropReason) -> Result<bool, PortError> {
        let state = self.state()?;
        let dropped = state.binding.pop().is_some();
        if dropped {
            state.binding.count_drop(reason);
        }
        Ok(dropped)
    }

    /// The port's index in its module's `PORTS`, once bound (used by triggers).
    pub fn port_index(&self) -> Option<usize> {
        self.state.as_ref().map(|s| s.index)
    }
}

impl<T: Payload> Out<T>
where
    T::Logical: Message,
{
    fn binding(&self) -> Result<&Arc<dyn OutputBinding>, PortError> {
        self.binding
            .as_ref()
            .map(|(_, b)| b)
            .ok_or_else(unbound::<Self>)
    }

    /// Publishes `message` to every consumer of this output. The same message is shared
    /// by all of them: publishing never copies the payload.
    pub fn publish(&self, message: T::Logical) -> Result<Header, PortError> {
        self.binding()?.publish(Arc::new(message))
    }

    /// A buffer of `len` bytes to fill with a large field of the next message (its pixels)
    /// and [`freeze`](crate::buffer::Loan::freeze) into its `Bytes`: where the stream
    /// leaves the process through zenoh's shared memory it is shared memory, sent by
    /// reference without a copy; elsewhere a buffer recycled from a pool. Never blocks: a
    /// loan the shared memory cannot serve is a heap buffer, counted in the run's report
    /// as `loan_fallback`.
    ///
    /// The buffer's contents are unspecified (a recycled buffer keeps its old bytes):
    /// write every byte.
    pub fn loan(&self, len: usize) -> Result<crate::buffer::Loan, PortError> {
        Ok(self.binding()?.loan(len))
    }

    /// A handle that lends buffers of this output from another thread (a source's
    /// loader that decodes ahead of publishing).
    pub fn lender(&self) -> Result<Lender, PortError> {
        Ok(Lender(self.binding()?.clone()))
    }

    /// True while anyone consumes this output; a source may skip work when nobody does.
    pub fn has_consumers(&self) -> Result<bool, PortError> {
        Ok(self.binding()?.has_consumers())
    }

    /// The port's index in its module's `PORTS`, once bound.
    pub fn port_index(&self) -> Option<usize> {
        self.binding.as_ref().map(|(index, _)| *index)
    }
}

impl<M: Message, C: Codec<M>> Out<Compressed<M, C>> {
    /// Publishes ready-made encoded bytes (an MJPEG camera's frames): consumers that
    /// want bytes get them unchanged, consumers that want pixels get one decode, and
    /// nothing is re-encoded.
    pub fn publish_encoded(&self, encoded: C::Encoded) -> Result<Header, PortError> {
        self.binding()?.publish(Arc::new(encoded))
    }
}

/// Lends buffers of one output ([`Out::lender`]) from any thread.
#[derive(Clone)]
pub struct Lender(Arc<dyn OutputBinding>);

impl Lender {
    /// As [`Out::loan`].
    pub fn loan(&self, len: usize) -> crate::buffer::Loan {
        self.0.loan(len)
    }
}

impl std::fmt::Debug for Lender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lender")
    }
}

/// A message that carries a sensor stamp (when its data was captured), so inputs can
/// be paired by it ([`pair_by_stamp`]).
pub trait Stamped {
    /// When the data was captured.
    fn stamp(&self) -> Timestamp;
}

/// How close two stamps must be to pair: exactly equal (ROS message_filters'
/// ExactTime), or within a slop (ApproximateTime).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slop {
    /// Stamps must be equal.
    Exact,
    /// Stamps may differ by at most this much.
    Within(Duration),
}

impl Slop {
    fn allows(&self, a: Timestamp, b: Timestamp) -> bool {
        let gap = a.as_nanos().abs_diff(b.as_nanos());
        match self {
            Slop::Exact => gap == 0,
            Slop::Within(slop) => u128::from(gap) <= slop.as_nanos(),
        }
    }
}

/// A pair of messages from two inputs, as [`pair_by_stamp`] returns it.
pub type Pair<A, B> = (
    Delivered<<A as Payload>::Delivered>,
    Delivered<<B as Payload>::Delivered>,
);

/// Takes the next pair of messages from `a` and `b` whose sensor stamps match within
/// `slop`, dropping (and counting as `unpaired`) every older message that has no
/// partner. `None` when one of the queues runs dry before a pair is found.
///
/// Used with a `Trigger::all` on both ports: the runtime steps the module when both have
/// a message, and this pairs them.
pub fn pair_by_stamp<A, B>(
    a: &mut In<A>,
    b: &mut In<B>,
    slop: Slop,
) -> Result<Option<Pair<A, B>>, PortError>
where
    A: Payload,
    B: Payload,
    A::Delivered: Stamped + Message,
    B::Delivered: Stamped + Message,
{
    loop {
        let (Some(first), Some(second)) = (a.peek()?, b.peek()?) else {
            return Ok(None);
        };
        let (ta, tb) = (first.message.stamp(), second.message.stamp());
        if slop.allows(ta, tb) {
            let first = a.recv()?;
            let second = b.recv()?;
            return Ok(first.zip(second));
        }
        // The older one can never pair: its partner would have come already (stamps
        // grow on each stream), so drop it and look again.
        if ta < tb {
            a.drop_oldest(DropReason::Unpaired)?;
        } else {
            b.drop_oldest(DropReason::Unpaired)?;
        }
    }
}

//! Behaviour: what a module does when it runs.
//!
//! [`Module`](crate::Module) (derived) says what a module's ports are; [`Node`]
//! (written by hand) says what it does. The runtime calls [`Node::step`] on a named
//! thread per instance whenever the module's [`Trigger`] fires: an input arrived, all of
//! several inputs have a message, a period elapsed, or (free-running) as soon as the
//! previous step returned. `start` and `stop` are optional. Every blocking wait the
//! runtime does for a module wakes when the run stops.
//!
//! The trait lives here, beside the ports, so that module crates depend on the core
//! only, and so that a blueprint (which knows nothing of threads) can carry module values
//! to whichever runtime runs them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::bind::Envelope;
use crate::header::Timestamp;
use crate::port::In;

/// An error a module returns from `start`, `step` or `stop`: any error type, boxed. It
/// stops the run, reported with the instance's name.
pub type NodeError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What `start`, `step` and `stop` return.
pub type NodeResult = Result<(), NodeError>;

/// A module's behaviour. Implement it next to `#[derive(Module)]`:
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Text")]
/// # pub struct Text(String);
/// /// Turns text upper case: a reactor, stepped once per message.
/// #[derive(Module)]
/// pub struct Shout {
///     pub text: In<Text>,
///     pub loud_text: Out<Text>,
/// }
///
/// impl Node for Shout {
///     // The default trigger: step when any input has a message.
///     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
///         while let Some(text) = self.text.recv()? {
///             self.loud_text.publish(Text(text.message.0.to_uppercase()))?;
///         }
///         Ok(())
///     }
/// }
/// ```
pub trait Node: Send + 'static {
    /// When the runtime calls [`step`](Node::step). Asked once, after the ports are
    /// bound (so it may name them: `Trigger::input(&self.frames)`). The default steps
    /// when any input has a message; a module without inputs must choose
    /// [`Trigger::Period`] or [`Trigger::FreeRunning`].
    fn trigger(&self) -> Trigger {
        Trigger::AnyInput
    }

    /// Called once before the first step, on the module's thread.
    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }

    /// Does the module's work. Called each time the trigger fires; read inputs with
    /// `recv`/`latest`, publish with `publish`, end a finite module with
    /// [`Context::finish`].
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult;

    /// Called once after the last step (the run stops, or the module finished).
    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }

    /// The streams this module taps while it runs ([`Context::taps`]) beyond what its
    /// input ports bring it. The plan carries the declaration (`graph` prints it), so a
    /// closed distributed run's access control lets the module's process subscribe to
    /// those streams in the other processes; an undeclared tap there reaches only the
    /// streams of its own process and those the plan's links bring it. Asked when the
    /// blueprint is built, from the module's settings. The default taps nothing.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # use streamwire::Taps;
    /// /// Counts every message of the run.
    /// #[derive(Module, Default)]
    /// struct Census {
    ///     /// The streams to count (empty: every stream).
    ///     #[config]
    ///     streams: Vec<String>,
    /// }
    ///
    /// impl Node for Census {
    ///     fn trigger(&self) -> Trigger {
    ///         Trigger::rate(1.0)
    ///     }
    ///     fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
    ///         Ok(())
    ///     }
    ///     fn taps(&self) -> Taps {
    ///         Taps::streams_or_all(&self.streams)
    ///     }
    /// }
    ///
    /// let mut blueprint = Blueprint::new();
    /// blueprint.add("census", Census::default());
    /// let plan = blueprint.build()?;
    /// assert_eq!(plan.instance_named("census").map(|i| i.taps()), Some(&Taps::All));
    /// # Ok::<(), streamwire::BuildError>(())
    /// ```
    fn taps(&self) -> Taps {
        Taps::None
    }
}

/// The streams a module taps while it runs, as it declares them ([`Node::taps`]): what
/// a plan carries so that a closed distributed run lets the module's process subscribe
/// to them. A tapped stream includes its encoded forms (`color_image/compressed`), which
/// is how an image that travels compressed is tapped.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Taps {
    /// No tap.
    #[default]
    None,
    /// Every stream of the run.
    All,
    /// These streams, by their resolved names (`left/color_image`).
    Streams(Vec<String>),
}

impl Taps {
    /// [`Taps::All`] for an empty list (a recorder's "every stream"), the streams
    /// otherwise.
    pub fn streams_or_all(streams: &[String]) -> Taps {
        if streams.is_empty() {
            Taps::All
        } else {
            Taps::Streams(streams.to_vec())
        }
    }

    /// True for [`Taps::None`].
    pub fn is_none(&self) -> bool {
        *self == Taps::None
    }

    /// Whether `stream` is declared: every stream, or this one by name (a leading `/`
    /// ignored on both sides). Its encoded forms go with it: who reads the declaration
    /// knows them (a plan's encode nodes).
    pub fn covers(&self, stream: &str) -> bool {
        let stream = stream.trim_start_matches('/');
        match self {
            Taps::None => false,
            Taps::All => true,
            Taps::Streams(streams) => streams.iter().any(|s| s.trim_start_matches('/') == stream),
        }
    }
}

impl fmt::Display for Taps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Taps::None => f.write_str("nothing"),
            Taps::All => f.write_str("every stream"),
            Taps::Streams(streams) => f.write_str(&streams.join(", ")),
        }
    }
}

/// An input named by a trigger: its port index, known once the port is bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRef {
    index: Option<usize>,
    type_name: &'static str,
}

impl PortRef {
    /// The input's index in its module's `PORTS`; `None` when the port is not bound.
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// The port's type, for errors about it.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl<T: crate::Payload> From<&In<T>> for PortRef
where
    T::Delivered: crate::Message,
{
    fn from(port: &In<T>) -> PortRef {
        PortRef {
            index: port.port_index(),
            type_name: std::any::type_name::<In<T>>(),
        }
    }
}

/// When the runtime steps a module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trigger {
    /// Whenever any input has a message (the default).
    AnyInput,
    /// Whenever this input has a message; other inputs are read as they are (`latest`).
    Input(PortRef),
    /// When every one of these inputs has a message (pair them by stamp in the step with
    /// [`pair_by_stamp`](crate::pair_by_stamp), which takes the slop; unpaired messages
    /// are dropped and counted).
    All(Vec<PortRef>),
    /// Every `period` of run-clock time (a source at a fixed rate, like ROS `Rate`).
    Period(Duration),
    /// Again as soon as the previous step returned: the module paces itself, e.g. with
    /// [`Context::sleep_until`], which wakes on stop.
    FreeRunning,
}

impl Trigger {
    /// Step whenever `port` has a message.
    pub fn input(port: impl Into<PortRef>) -> Trigger {
        Trigger::Input(port.into())
    }

    /// Step when every one of `inputs` has a message.
    pub fn all(inputs: impl IntoIterator<Item = PortRef>) -> Trigger {
        Trigger::All(inputs.into_iter().collect())
    }

    /// Step at `hz` times a second of run-clock time.
    pub fn rate(hz: f64) -> Trigger {
        let period = if hz.is_finite() && hz > 0.0 {
            Duration::from_secs_f64(1.0 / hz)
        } else {
            Duration::from_secs(1)
        };
        Trigger::Period(period)
    }
}

/// A counter a module adds to its instance's statistics (`cx.counter("skipped")`).
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// A counter at zero, not registered anywhere (runtimes register theirs).
    pub fn new() -> Counter {
        Counter::default()
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    pub fn increment(&self) {
        self.add(1);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a runtime provides to a running module, behind [`Context`].
pub trait RunContext: Send + Sync {
    /// The instance's full name.
    fn instance_name(&self) -> &str;
    /// The run clock: wall time, a replay's time scaled by its rate, or a test's manual
    /// clock.
    fn now(&self) -> Timestamp;
    /// True once the run is stopping.
    fn is_stopping(&self) -> bool;
    /// Marks the module finished: no more steps; its outputs close.
    fn finish(&self);
    /// The module's counter `name`, created at zero on first use.
    fn counter(&self, name: &str) -> Counter;
    /// Waits until the run clock reaches `deadline` or the run stops; returns false when
    /// it stopped.
    fn sleep_until(&self, deadline: Timestamp) -> bool;
    /// The run's taps, for a module that subscribes to streams while it runs (a web
    /// relay). `None` where there are none (the default, and the `Harness`).
    fn taps(&self) -> Option<Arc<dyn TapService>> {
        None
    }
    /// Tells the person running the run one line (a server's address): the runtime keeps
    /// it for its runner, which prints it at the default log level (`streamwire run` on
    /// standard error, a distributed run through its coordinator). Dropped where nobody
    /// runs the run (the default, and the `Harness`, whose tests read the module).
    fn announce(&self, _line: &str) {}
}

/// Subscriptions at run time from inside a run: what the run handle's `tap` offers
/// outside it, for modules (a web relay) that learn while running which streams they need.
pub trait TapService: Send + Sync {
    /// Every stream a tap can attach to, as (name, message type name), encoded forms
    /// included (`color_image/compressed` carrying `streamwire/CompressedImage`).
    fn streams(&self) -> Vec<(String, &'static str)>;
    /// Attaches to `stream`. `message` picks its form as the run handle's typed `tap`
    /// does (`Some("streamwire/CompressedImage")` gets an image stream's encoded bytes);
    /// `None` takes what the stream carries. Detaches when the tap is dropped.
    fn tap(
        &self,
        stream: &str,
        message: Option<&'static str>,
    ) -> Result<Box<dyn StreamTap>, NodeError>;
    /// The run's module instances with the streams they publish and subscribe and their
    /// resolved settings, for tools that describe the run (a relay's rosapi `nodes`).
    /// The default, for services that do not know the plan, is empty.
    fn run_graph(&self) -> Vec<RunNode> {
        Vec::new()
    }
}

/// One module instance of a run, as a [`TapService`] describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunNode {
    /// The instance's full name (namespaces included).
    pub name: String,
    /// The streams its outputs publish, by resolved stream name.
    pub publishes: Vec<String>,
    /// The streams its inputs are fed from, by resolved stream name.
    pub subscribes: Vec<String>,
    /// Its `#[config]` settings as (field, value as JSON text), by field name; empty
    /// for a module whose settings cannot be serialized.
    pub settings: Vec<(String, String)>,
}

/// One subscription made through a [`TapService`]: a keep-last queue of the stream's
/// messages.
pub trait StreamTap: Send + Sync {
    /// The next message, waiting up to `timeout`; `None` on timeout, when the stream
    /// closed, or when the run stops.
    fn recv_timeout(&self, timeout: Duration) -> Option<Envelope>;
    /// Messages the tap's queue dropped because its reader was behind.
    fn dropped(&self) -> u64;
    /// True once the stream's producer finished and nothing is left queued: no message
    /// will come any more (a recorder drains until then when the run stops). The default,
    /// for taps that cannot tell, is `false`.
    fn is_closed(&self) -> bool {
        false
    }
    /// Messages of the stream that reached the tap's process after the run stopped (on the
    /// wire at stop): published, never delivered to the tap. A recorder counts them as
    /// not recorded once its tap closed. The default, for taps that cannot tell, is 0.
    fn in_flight_at_stop(&self) -> u64 {
        0
    }
}

/// What a module's `start`, `step` and `stop` see of the runtime.
pub struct Context<'a> {
    run: &'a dyn RunContext,
}

impl<'a> Context<'a> {
    /// A context over a runtime's services. Made by runtimes and harnesses.
    pub fn new(run: &'a dyn RunContext) -> Context<'a> {
        Context { run }
    }

    /// The instance's full name (namespaces included).
    pub fn instance_name(&self) -> &str {
        self.run.instance_name()
    }

    /// Now, on the run clock.
    pub fn now(&self) -> Timestamp {
        self.run.now()
    }

    /// True once the run is stopping: a long step should return.
    pub fn is_stopping(&self) -> bool {
        self.run.is_stopping()
    }

    /// Ends this module: no more steps after this one, and its outputs close (their
    /// consumers see `is_closed` once they have read everything). A finite source calls
    /// it at its end; when every module has finished, the run ends with `finished`.
    pub fn finish(&mut self) {
        self.run.finish();
    }

    /// The module's own counter `name`, shown in the run's statistics.
    pub fn counter(&self, name: &str) -> Counter {
        self.run.counter(name)
    }

    /// Sleeps until the run clock reaches `deadline`; returns false (at once) when the
    /// run is stopping.
    pub fn sleep_until(&self, deadline: Timestamp) -> bool {
        self.run.sleep_until(deadline)
    }

    /// The run's taps: subscribe to streams while running (what a web relay does).
    /// `None` where the runtime has none (the `Harness`).
    pub fn taps(&self) -> Option<Arc<dyn TapService>> {
        self.run.taps()
    }

    /// Tells the person running the run `line` (where to point a browser, say): printed
    /// once by whatever runs it, at the default log level, whatever the blueprint.
    pub fn announce(&self, line: &str) {
        self.run.announce(line);
    }
}

impl fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("instance", &self.instance_name())
            .finish_non_exhaustive()
    }
}

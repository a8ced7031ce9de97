//! Modules: structs of ports and configuration.

use std::fmt;

use crate::bind::AnyPort;
use crate::node::Node;
use crate::port::PortInfo;

/// A module: a struct of ports (and configuration) that a blueprint instantiates.
///
/// Derive it; the derive writes the port metadata and a `<Name>Ports` struct of typed
/// handles for explicit connections:
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire::prelude::*;
/// # use streamwire::Direction;
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Text")]
/// # pub struct Text(String);
/// /// Turns text upper case.
/// #[derive(Module)]
/// pub struct Shout {
///     /// Text to shout.
///     #[port(name = "text")]
///     pub input: In<Text>,
///     /// The same text, loud.
///     #[port(name = "loud_text", best_effort, depth = 1)]
///     pub output: Out<Text>,
///     /// How many exclamation marks to add.
///     #[config]
///     pub exclamations: usize,
/// }
///
/// assert_eq!(Shout::TYPE_NAME, "Shout");
/// assert_eq!(Shout::PORTS[1].stream(), "loud_text");
/// assert_eq!(Shout::PORTS[1].direction(), Direction::Output);
/// assert_eq!(Shout::CONFIG_FIELDS, ["exclamations"]);
///
/// let mut shout = Shout { input: In::new(), output: Out::new(), exclamations: 3 };
/// let mut visited = Vec::new();
/// shout.visit_ports(&mut |index, port| visited.push((index, port.direction())));
/// assert_eq!(visited, [(0, Direction::Input), (1, Direction::Output)]);
/// // No `impl Node for Shout`: it describes ports only, and a runtime says so.
/// assert!(shout.behaviour().is_none());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a streamwire module",
    label = "not a module",
    note = "derive it: `#[derive(Module)]` on a struct whose fields are ports (`In<..>`, `Out<..>`) or `#[config]`"
)]
pub trait Module: Send + 'static {
    /// The module's type name, e.g. `Camera`, shown in plans and errors.
    const TYPE_NAME: &'static str;
    /// Every port, in field order.
    const PORTS: &'static [PortInfo];
    /// The names of the fields marked `#[config]`.
    const CONFIG_FIELDS: &'static [&'static str];
    /// The declared ranges of its `#[config]` fields (`#[config(range = 1..=16384)]`),
    /// in field order; fields without one are not listed.
    const CONFIG_RANGES: &'static [crate::FieldRange] = &[];
    /// The generated struct of typed port handles.
    type Ports: Copy;

    /// The typed handles of `instance`'s ports.
    fn port_handles(instance: InstanceId) -> Self::Ports;

    /// Calls `visit` with each port field (`In<..>` or `Out<..>`) and its index in
    /// [`PORTS`](Module::PORTS), so a runtime can bind the ports of a module value to its
    /// queues without knowing their types.
    fn visit_ports(&mut self, visit: &mut dyn FnMut(usize, &mut dyn AnyPort));

    /// The module's behaviour: `Some` when its type implements [`Node`], `None` for a
    /// module that only describes ports (fine for printing plans; a runtime refuses to
    /// run it, naming the instance). The derive writes this.
    fn behaviour(&mut self) -> Option<&mut dyn Node>;

    /// The value as a blueprint file holds it (its `#[config]` fields), so tools can show
    /// a run's resolved settings. The derive writes this for every module a file can
    /// hold; a hand-written module has none.
    fn as_config(&self) -> Option<&dyn crate::ModuleConfig> {
        None
    }

    /// Every setting outside its declared range, then (when every field is in range) what
    /// the module's own check (`#[module(validate = f)]`) refuses: empty when the value
    /// may run. The derive writes this; blueprint files, `-o` and `build()` call it.
    fn check_config(&self) -> Vec<crate::ConfigProblem> {
        Vec::new()
    }

    /// The streams the module taps while it runs: its [`Node::taps`] when its type
    /// implements [`Node`], nothing otherwise. The derive writes this.
    fn taps(&self) -> crate::Taps {
        crate::Taps::None
    }

    /// Takes `from`'s `#[config]` fields (swapped), keeping its own ports and
    /// `#[state]`: settings changed by `-o` applied to a value code built, whose state
    /// (a handle shared with the code) must stay. The derive writes this.
    #[doc(hidden)]
    fn take_config(&mut self, from: &mut Self)
    where
        Self: Sized,
    {
        let _ = from;
    }

    /// The module with every setting at its declared default (`#[config(default = ..)]`,
    /// else the module's own `Default`), ports new: the value a blueprint file that names
    /// only its `type` gets, so a code blueprint needs no second copy of the defaults.
    /// An error names a `#[config]` field that declares none.
    ///
    /// ```
    /// # use streamwire::prelude::*;
    /// # #[derive(Clone, Debug, serde::Serialize, serde::Deserialize, Message)]
    /// # #[message(name = "doc/Tick")]
    /// # pub struct Tick(u64);
    /// #[derive(Module)]
    /// pub struct Ticker {
    ///     pub ticks: Out<Tick>,
    ///     /// Ticks per second.
    ///     #[config(default = 20.0, finite, range = 0.1..=1000.0)]
    ///     pub rate: f64,
    /// }
    ///
    /// let ticker = Ticker::declared()?;
    /// assert_eq!(ticker.rate, 20.0);
    /// # Ok::<(), streamwire::registry::UndeclaredSetting>(())
    /// ```
    fn declared() -> Result<Self, crate::registry::UndeclaredSetting>
    where
        Self: Sized + serde::de::DeserializeOwned,
    {
        crate::registry::declared::<Self>()
    }
}

/// A module value with its type erased: what a blueprint holds and hands to a runtime.
pub trait ModuleValue: Send {
    /// The module's type name.
    fn module_type(&self) -> &'static str;
    /// Its ports' metadata.
    fn ports(&self) -> &'static [PortInfo];
    /// See [`Module::visit_ports`].
    fn visit_ports(&mut self, visit: &mut dyn FnMut(usize, &mut dyn AnyPort));
    /// See [`Module::behaviour`].
    fn behaviour(&mut self) -> Option<&mut dyn Node>;
    /// The value itself, for code that knows its type (tests, harnesses).
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
    /// See [`Module::as_config`].
    fn as_config(&self) -> Option<&dyn crate::ModuleConfig>;
    /// See [`Module::check_config`].
    fn check_config(&self) -> Vec<crate::ConfigProblem>;
    /// See [`Module::CONFIG_RANGES`].
    fn config_ranges(&self) -> &'static [crate::FieldRange];
    /// See [`Module::taps`].
    fn taps(&self) -> crate::Taps;
    /// Takes the `#[config]` fields of `from`, a value of the same module type (see
    /// [`Module::take_config`]); false (nothing taken) when its type differs.
    fn take_config(&mut self, from: &mut dyn ModuleValue) -> bool;
}

impl<M: Module> ModuleValue for M {
    fn module_type(&self) -> &'static str {
        M::TYPE_NAME
    }

    fn ports(&self) -> &'static [PortInfo] {
        M::PORTS
    }

    fn visit_ports(&mut self, visit: &mut dyn FnMut(usize, &mut dyn AnyPort)) {
        Module::visit_ports(self, visit);
    }

    fn behaviour(&mut self) -> Option<&mut dyn Node> {
        Module::behaviour(self)
    }

    fn as_config(&self) -> Option<&dyn crate::ModuleConfig> {
        Module::as_config(self)
    }

    fn check_config(&self) -> Vec<crate::ConfigProblem> {
        Module::check_config(self)
    }

    fn config_ranges(&self) -> &'static [crate::FieldRange] {
        M::CONFIG_RANGES
    }

    fn taps(&self) -> crate::Taps {
        Module::taps(self)
    }

    fn take_config(&mut self, from: &mut dyn ModuleValue) -> bool {
        match from.as_any_mut().downcast_mut::<M>() {
            Some(from) => {
                Module::take_config(self, from);
                true
            }
            None => false,
        }
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// Probes used by the derive's generated code ("autoref specialization": the generated
/// code names a concrete type, so method resolution picks the first probe whose bound
/// holds, and a field that is not a port, or a module without `Node`, compiles to
/// `None` instead of a second error).
#[doc(hidden)]
pub mod probe {
    use super::{AnyPort, Node};

    /// Wraps a field or the module for probing.
    pub struct Probe<'a, T: ?Sized>(pub &'a mut T);

    /// Picked when the field is a port.
    pub trait IsPort<'a> {
        fn erase_port(self) -> Option<&'a mut dyn AnyPort>;
    }
    impl<'a, T: AnyPort> IsPort<'a> for Probe<'a, T> {
        fn erase_port(self) -> Option<&'a mut dyn AnyPort> {
            Some(self.0)
        }
    }
    /// Picked otherwise (the metadata already reported the field).
    pub trait NotPort<'a> {
        fn erase_port(self) -> Option<&'a mut dyn AnyPort>;
    }
    impl<'a, T: ?Sized> NotPort<'a> for &Probe<'a, T> {
        fn erase_port(self) -> Option<&'a mut dyn AnyPort> {
            None
        }
    }

    /// Makes a `T` with `Default` when it has one, for `#[state]` fields of a module loaded
    /// from a file; `None` otherwise (the load is then refused with an error naming it).
    pub struct DefaultProbe<T>(pub core::marker::PhantomData<T>);

    /// Picked when `T: Default`.
    pub trait HasDefault<T> {
        fn make(&self) -> Option<T>;
        /// Whether `T` implements `Default`, without making one.
        fn exists(&self) -> bool;
    }
    impl<T: Default> HasDefault<T> for DefaultProbe<T> {
        fn make(&self) -> Option<T> {
            Some(T::default())
        }
        fn exists(&self) -> bool {
            true
        }
    }
    /// Picked otherwise.
    pub trait NoDefault<T> {
        fn make(&self) -> Option<T>;
        /// Whether `T` implements `Default`, without making one.
        fn exists(&self) -> bool;
    }
    impl<T> NoDefault<T> for &DefaultProbe<T> {
        fn make(&self) -> Option<T> {
            None
        }
        fn exists(&self) -> bool {
            false
        }
    }

    /// Picked when the module implements `Node`.
    pub trait IsNode<'a> {
        fn erase_node(self) -> Option<&'a mut dyn Node>;
    }
    impl<'a, T: Node> IsNode<'a> for Probe<'a, T> {
        fn erase_node(self) -> Option<&'a mut dyn Node> {
            Some(self.0)
        }
    }
    /// Picked for a module without behaviour.
    pub trait NotNode<'a> {
        fn erase_node(self) -> Option<&'a mut dyn Node>;
    }
    impl<'a, T: ?Sized> NotNode<'a> for &Probe<'a, T> {
        fn erase_node(self) -> Option<&'a mut dyn Node> {
            None
        }
    }

    /// Wraps the module, shared, for probing what it declares.
    pub struct RefProbe<'a, T: ?Sized>(pub &'a T);

    /// Picked when the module implements `Node`: its declared taps.
    pub trait IsNodeRef {
        fn node_taps(self) -> crate::Taps;
    }
    impl<T: Node> IsNodeRef for RefProbe<'_, T> {
        fn node_taps(self) -> crate::Taps {
            Node::taps(self.0)
        }
    }
    /// Picked for a module without behaviour: it taps nothing.
    pub trait NotNodeRef {
        fn node_taps(self) -> crate::Taps;
    }
    impl<T: ?Sized> NotNodeRef for &RefProbe<'_, T> {
        fn node_taps(self) -> crate::Taps {
            crate::Taps::None
        }
    }
}

/// Identifies a module instance within one blueprint. Handles carry the blueprint's
/// identity too, so a handle from another blueprint is an error, not a wrong port.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId {
    blueprint: u64,
    index: u32,
}

impl InstanceId {
    /// Instance number `index` of blueprint `blueprint`. Made by the blueprint builder.
    #[doc(hidden)]
    pub const fn new(blueprint: u64, index: u32) -> InstanceId {
        InstanceId { blueprint, index }
    }

    /// The blueprint this instance belongs to.
    pub fn blueprint(&self) -> u64 {
        self.blueprint
    }

    /// The instance's position in its blueprint.
    pub fn index(&self) -> u32 {
        self.index
    }
}

impl fmt::Debug for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InstanceId({}:{})", self.blueprint, self.index)
    }
}

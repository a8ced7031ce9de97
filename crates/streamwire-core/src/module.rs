//! Modules: structs of ports and configuration.

use std::fmt;

use crate::port::PortInfo;

/// A module: a struct of ports (and configuration) that a blueprint instantiates.
///
/// Derive it; the derive writes the port metadata and a `<Name>Ports` struct of typed
/// handles for explicit connections:
///
/// ```
/// # use serde::{Deserialize, Serialize};
/// # use streamwire_core::{Compressed, In, Module, Out, Direction};
/// # use streamwire_macros::{Message, Module};
/// # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
/// # #[message(name = "doc/Text", crate = streamwire_core)]
/// # pub struct Text(String);
/// /// Turns text upper case.
/// #[derive(Module)]
/// #[module(crate = streamwire_core)]
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
/// shout.visit_ports(&mut |index, port| visited.push((index, port.is::<Out<Text>>())));
/// assert_eq!(visited, [(0, false), (1, true)]);
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
    /// The generated struct of typed port handles.
    type Ports: Copy;

    /// The typed handles of `instance`'s ports.
    fn port_handles(instance: InstanceId) -> Self::Ports;

    /// Calls `visit` with each port field (`In<..>` or `Out<..>`) and its index in
    /// [`PORTS`](Module::PORTS), so a runtime can bind the ports of a module value to its
    /// transport without knowing the type.
    fn visit_ports(&mut self, visit: &mut dyn FnMut(usize, &mut dyn std::any::Any));
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

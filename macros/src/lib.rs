//! The derives of streamwire: `#[derive(Module)]` and `#[derive(Message)]`.
//!
//! Use them through the facade (`use streamwire::prelude::*;`). This crate only parses
//! and generates; the rules they rely on (what a port is, how ports match) live in
//! `streamwire-core`, where they are tested as ordinary code.
//!
//! Both derives parse into a small model first (`model.rs`), collect every mistake
//! (`ctxt.rs`), and only then generate code, so one compile reports all errors, each on
//! the offending field or attribute.

extern crate proc_macro;

mod ctxt;
mod message;
mod model;
mod module;
mod names;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Turns a struct of ports into a streamwire module: static port metadata
/// (`Module::PORTS`) and a `<Name>Ports` struct of typed handles for explicit
/// `connect(from, to)` calls.
///
/// Field attributes:
/// - `#[port(name = "...")]`: the stream name (defaults to the field name).
/// - `#[port(optional)]` (inputs): may stay unconnected.
/// - `#[port(lossless)]` (inputs): never receives lossy or downscaled data.
/// - `#[port(reliable | best_effort, volatile | transient_local, depth = N | keep_all)]`: QoS;
///   what is not written comes from the message's kind (`#[message(kind = ..)]`).
/// - `#[config]`: a configuration field, not a port; `#[config(default)]` (the type's
///   `Default`) or `#[config(default = <expr>)]` declares the value a blueprint file that
///   leaves the field out gets.
/// - `#[state]`: the module's own run-time state (buffers, counters): neither a port nor
///   configuration; `#[state(default)]`, `#[state(default = <expr>)]` declare its start
///   value.
///
/// A blueprint file builds the value code builds from the same settings: a module that
/// implements `Default` starts from `default()` (the derive finds the impl through a trait
/// probe, so nothing is declared for it), then each field's declared default applies,
/// then the file's values. A `#[config]` field is required in a file only when neither
/// exists; a `#[state]` field of a module without `Default` and without a declared one
/// starts from its type's `Default`.
///
/// Struct attribute: `#[module(name = "...", crate = path, internal)]`; `internal` leaves
/// the module out of the registry (`list`, blueprint files' `type:`), for modules a tool
/// builds in code (the benchmark's pinger, `topic bench`'s statistics source).
#[proc_macro_derive(Module, attributes(module, port, config, state))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    module::expand(&input).into()
}

/// Makes a type a streamwire message: a stable type name (`#[message(name = "...")]`,
/// default `<crate>/<Type>`), the port plumbing, and registration for type-erased
/// (de)serialization by name.
///
/// `#[message(kind = sensor)]` marks sensor data (images, clouds: ports default to best
/// effort, keep the newest 1); `kind = state` (the default) marks state (reliable, keep the
/// last 10).
///
/// The type must also derive `Clone`, `Debug`, `Serialize` and `Deserialize`.
#[proc_macro_derive(Message, attributes(message))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    message::expand(&input).into()
}

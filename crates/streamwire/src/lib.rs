#![doc = include_str!("../../../README.md")]
//!
//! ## Crates
//!
//! This facade re-exports the parts; most users only write `use streamwire::prelude::*;`.
//! - [`streamwire_core`]: messages, codecs, ports, modules (re-exported at the root).
//! - [`streamwire_graph`]: blueprints and plans (re-exported at the root).
//! - [`msgs`]: the built-in messages and their codecs (JPEG, lossless zstd).
//! - `streamwire-macros`: `#[derive(Module)]` and `#[derive(Message)]`.

// Lets derive output that names `::streamwire::..` compile inside this crate too.
extern crate self as streamwire;

pub use streamwire_core::*;
pub use streamwire_graph::*;
pub use streamwire_macros::{Message, Module};

/// The built-in messages and their codecs.
pub use streamwire_msgs as msgs;

/// Running blueprints: [`Runtime`](runtime::Runtime), run handles, taps, statistics and
/// the one-module [`Harness`](runtime::Harness).
pub use streamwire_runtime as runtime;

/// Everything a module author or blueprint writer needs, in one `use`.
pub mod prelude {
    pub use streamwire_core::{
        Codec, CodecError, CodecParams, Compressed, Context, DefaultCodec, Delivered, Fidelity,
        Header, In, Message, Module, Node, NodeResult, Out, Slop, Timestamp, Trigger,
        pair_by_stamp,
    };
    pub use streamwire_graph::{
        AutoTable, Blueprint, BuildError, Compression, Locality, Placement, Plan, Report,
        StreamSettings, WireFormat,
    };
    pub use streamwire_macros::{Message, Module};
    pub use streamwire_msgs::{
        CompressedImage, DepthImage, Image, ImageEncoding, Jpeg, Odometry, PointCloud, Zstd,
    };
    pub use streamwire_runtime::{EndReason, Harness, Run, RunHandle, RunOptions, RunReport};
}

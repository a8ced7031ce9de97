//! streamwire's built-in modules: what feeds a blueprint and what consumes it.
//!
//! Every module here is an ordinary streamwire module (`#[derive(Module)]` plus
//! [`Node`](streamwire_core::Node)), documented with its ports and config, runnable in any
//! blueprint and testable with the runtime's `Harness`. Every config field is
//! serde-serializable and has a default (`Default` on each module).
//!
//! An application reaches them through the facade's `modules` feature
//! (`streamwire::modules::SimCamera`), or by depending on this crate. This crate sits below
//! the facade: it depends on the core, the graph, the messages, the codec engines and the
//! derive, never on the facade (which re-exports it) nor on the runtime.
//!
//! | module | ports | what it does |
//! |---|---|---|
//! | [`replay::ReplaySource`] | `color_image: Out<Compressed<Image>>` | plays a folder of numbered JPEG/PNG frames at their recorded rate |
//! | [`world::SimCamera`] | `color_image: Out<Compressed<Image>>` | the simulated world's colour camera |
//! | [`world::SimDepth`] | `depth: Out<Compressed<DepthImage>>` | its depth sensor (16UC1) |
//! | [`world::SimLidar`] | `cloud: Out<Compressed<PointCloud>>` | its 10 Hz, ~30k-point lidar |
//! | [`world::SimOdometry`] | `odometry: Out<Odometry>` | its 50 Hz odometry (truth plus noise) |
//! | [`sinks::RecordingSink`] | `frames: In<Image>` | writes every arrival as a JSON line |
//! | [`sinks::BusySink`] | `frames: In<Image>` | spends N CPU-ms of filtering per frame, and records |
//! | [`sinks::ByteConsumer`] | `jpeg: In<Compressed<Image>>` | keeps the JPEG bytes and checks they decode |
//! | [`detector::Detector`] | `frames: In<Image>` → `detections` | finds the moving object's box |
//! | [`mapper::Mapper`] | `cloud`, `depth`, `odometry` → `map` | a 2D occupancy grid at 1 Hz |
//!
//! [`demo`] puts them together into the demo blueprint; [`replay_bench`] holds the three
//! blueprints the replay benchmark (`streamwire bench replay`) runs.

pub mod demo;
pub mod detector;
pub mod mapper;
pub mod replay;
pub mod replay_bench;
pub mod sinks;
pub mod world;

pub use detector::Detector;
pub use mapper::Mapper;
pub use replay::ReplaySource;
pub use sinks::{BusySink, ByteConsumer, RecordingSink};
pub use world::{SimCamera, SimDepth, SimLidar, SimOdometry};

/// What the modules here use of the layers below, by the names the facade's prelude gives
/// them (the derive is told `crate = streamwire_core`, as in every crate below the facade).
mod prelude {
    pub(crate) use streamwire_core::{
        Codec, Compressed, Context, In, Node, NodeResult, Out, Timestamp, Trigger,
    };
    pub(crate) use streamwire_graph::{
        AutoTable, Blueprint, Compression, Locality, Placement, Report, StreamSettings, WireFormat,
    };
    pub(crate) use streamwire_macros::Module;
    pub(crate) use streamwire_msgs::{CompressedImage, DepthImage, Image, ImageEncoding, Odometry};
}

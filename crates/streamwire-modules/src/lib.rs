//! streamwire's built-in modules: what feeds a blueprint and what consumes it.
//!
//! Every module here is an ordinary streamwire module (`#[derive(Module)]` plus
//! [`Node`](streamwire::Node)), documented with its ports and config, runnable in any
//! blueprint and testable with [`Harness`](streamwire::runtime::Harness). Every config
//! field is serde-serializable and has a default (`Default` on each module).
//!
//! | module | ports | what it does |
//! |---|---|---|
//! | [`replay::ReplaySource`] | `color_image: Out<Compressed<Image>>` | plays a folder of numbered JPEG/PNG frames at their recorded rate |
//! | [`world::SimCamera`] | `color_image: Out<Compressed<Image>>` | the simulated world's colour camera |
//! | [`world::SimDepth`] | `depth: Out<Compressed<DepthImage>>` | its depth sensor (16UC1) |
//! | [`world::SimLidar`] | `cloud: Out<PointCloud>` | its 10 Hz, ~30k-point lidar |
//! | [`world::SimOdometry`] | `odometry: Out<Odometry>` | its 50 Hz odometry (truth plus noise) |
//! | [`sinks::RecordingSink`] | `frames: In<Image>` | writes every arrival as a JSON line |
//! | [`sinks::BusySink`] | `frames: In<Image>` | spends N CPU-ms of filtering per frame, and records |
//! | [`sinks::ByteConsumer`] | `jpeg: In<Compressed<Image>>` | keeps the JPEG bytes and checks they decode |
//! | [`detector::Detector`] | `frames: In<Image>` → `detections` | finds the moving object's box |
//! | [`mapper::Mapper`] | `cloud`, `depth`, `odometry` → `map` | a 2D occupancy grid at 1 Hz |
//!
//! [`demo`] puts them together into the demo blueprint.

pub mod bench;
pub mod demo;
pub mod detector;
pub mod mapper;
pub mod replay;
pub mod sinks;
pub mod world;

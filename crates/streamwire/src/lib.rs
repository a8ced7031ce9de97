//! Typed robot dataflow: modules exchange typed streams, and how a stream travels (raw
//! pixels or compressed bytes) is part of its type, checked by the compiler.
//!
//! This page is a guide, from a first message and module to a blueprint and its printed
//! plan. Everything in it is reachable from one import:
//!
//! ```
//! use streamwire::prelude::*;
//! ```
//!
//! Add `streamwire` and `serde = { version = "1", features = ["derive"] }` to your
//! `Cargo.toml`.
//!
//! # 1. A message
//!
//! A message is what travels on a stream. The built-in ones ([`msgs::Image`],
//! [`msgs::DepthImage`], [`msgs::PointCloud`], [`msgs::Odometry`], ...) are in the prelude;
//! your own is any `Clone + Debug + Serialize + Deserialize` type with
//! `#[derive(Message)]` and a stable name (the name goes on the wire and in recordings, so
//! it must not change when the Rust type moves):
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use streamwire::prelude::*;
//!
//! /// The boxes a detector found in one frame.
//! #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! #[message(name = "acme/Detections")]
//! pub struct Detections {
//!     pub boxes: Vec<[f32; 4]>,
//! }
//!
//! assert_eq!(Detections::TYPE_NAME, "acme/Detections");
//! ```
//!
//! # 2. A module
//!
//! A module is a struct of ports and configuration. `In<M>` receives `M`, `Out<M>` sends
//! it; fields marked `#[config]` are settings of the module. The stream a port reads or
//! writes is its field name, unless `#[port(name = "...")]` says otherwise; the same
//! attribute carries `optional`, `lossless` and QoS (`best_effort`, `depth = 1`):
//!
//! ```
//! # use serde::{Deserialize, Serialize};
//! use streamwire::prelude::*;
//! # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! # #[message(name = "acme/Detections")]
//! # pub struct Detections { pub boxes: Vec<[f32; 4]> }
//!
//! /// Finds objects in colour frames.
//! #[derive(Module, Default)]
//! pub struct Detector {
//!     /// The newest frame only: drop rather than fall behind.
//!     #[port(name = "color_image", best_effort, depth = 1)]
//!     pub frames: In<Image>,
//!     pub detections: Out<Detections>,
//!     #[config]
//!     pub threshold: f32,
//! }
//!
//! // Ports are placeholders until the runtime binds them: `Default` makes them all, so
//! // only the configuration is written out.
//! let detector = Detector { threshold: 0.5, ..Default::default() };
//! assert_eq!(Detector::PORTS[0].stream(), "color_image");
//! # let _ = detector;
//! ```
//!
//! Deriving `Default` next to `Module` is the way to skip writing `In::new()` and
//! `Out::new()` for every port; without it, write them: `Detector { frames: In::new(),
//! detections: Out::new(), threshold: 0.5 }`. Mistakes are compile errors on your field:
//! a field that is not a port, two ports on one stream, an `Out` connected into an `Out`,
//! connecting an `Out<Image>` to an `In<PointCloud>`.
//!
//! # 3. Ports that may compress
//!
//! How a stream may travel is part of the port's type:
//!
//! | field type                | means                                                        |
//! |---------------------------|--------------------------------------------------------------|
//! | `Out<Image>`              | sends images, always raw (unless a stream setting asks)      |
//! | `Out<Compressed<Image>>`  | sends images that the wire may compress (JPEG by default)    |
//! | `In<Image>`               | wants pixels: decoded for it if the link was compressed      |
//! | `In<Compressed<Image>>`   | wants the encoded bytes (a web relay, a recorder)            |
//!
//! Ports match on the message (`Image`); the codec is a permission on an output and a
//! requirement on an input. `Compressed<DepthImage, Jpeg>` does not compile (JPEG carries
//! 8-bit colour, not depth): depth uses the lossless [`msgs::Zstd`] by default.
//!
//! ```
//! use streamwire::prelude::*;
//!
//! /// A camera whose frames the wire may compress.
//! #[derive(Module, Default)]
//! pub struct Camera {
//!     #[port(best_effort, depth = 1)]
//!     pub color_image: Out<Compressed<Image>>,
//! }
//!
//! /// Relays the JPEG bytes to browsers as they are: no decode, no re-encode.
//! #[derive(Module, Default)]
//! pub struct WebRelay {
//!     #[port(name = "color_image/compressed")]
//!     pub jpeg: In<Compressed<Image>>,
//! }
//! ```
//!
//! # 4. A blueprint, and its plan
//!
//! A [`Blueprint`] names module instances, places them into processes and hosts
//! ([`Placement`]), and connects their ports: `autoconnect()` by stream name and message
//! type, or explicitly and checked by the compiler with `connect(from, to)` on the typed
//! handles of `instance.ports()`. [`Blueprint::build`] checks everything and returns a
//! [`Plan`]: which instance runs where, which encode and decode nodes were inserted, and
//! why each link is raw or compressed.
//!
//! ```
//! # use serde::{Deserialize, Serialize};
//! use streamwire::prelude::*;
//! # #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! # #[message(name = "acme/Detections")]
//! # pub struct Detections { pub boxes: Vec<[f32; 4]> }
//! # #[derive(Module, Default)]
//! # pub struct Detector {
//! #     #[port(name = "color_image", best_effort, depth = 1)]
//! #     pub frames: In<Image>,
//! #     pub detections: Out<Detections>,
//! #     #[config]
//! #     pub threshold: f32,
//! # }
//! # #[derive(Module, Default)]
//! # pub struct Camera {
//! #     #[port(best_effort, depth = 1)]
//! #     pub color_image: Out<Compressed<Image>>,
//! # }
//! # #[derive(Module, Default)]
//! # pub struct WebRelay {
//! #     #[port(name = "color_image/compressed")]
//! #     pub jpeg: In<Compressed<Image>>,
//! # }
//!
//! fn main() -> Result<(), BuildError> {
//!     let mut blueprint = Blueprint::new();
//!     let camera = blueprint.add("camera", Camera::default());
//!     let detector = blueprint.add("detector", Detector { threshold: 0.5, ..Default::default() });
//!     let web = blueprint.add("web", WebRelay::default());
//!     // The detector runs on the base station's GPU, the relay on an operator's laptop.
//!     blueprint.place(&detector, Placement::process("perception").on_host("base_station"));
//!     blueprint.place(&web, Placement::process("ui").on_host("laptop"));
//!
//!     // The detector is wired explicitly (typed: an `In<PointCloud>` here would not
//!     // compile); the relay finds `color_image/compressed` by name.
//!     blueprint.connect(camera.ports().color_image, detector.ports().frames);
//!     let plan = blueprint.autoconnect().build()?;
//!     println!("{plan}");
//!
//!     // One JPEG encode in the camera's process, shared by the relay and the detector's
//!     // link; one decode in `perception`, since the detector wants pixels.
//!     assert_eq!(plan.codec_nodes().count(), 2);
//!     Ok(())
//! }
//! ```
//!
//! `println!("{plan}")` lists the instances by process, the codec nodes with every
//! parameter, and each link with its reason:
//!
//! ```text
//! plan: 3 instances in 3 processes on 3 hosts; 2 codec nodes; 4 links
//! settings: compression auto (in-process raw, same-host raw, cross-host compress); lossy pixels warn; unfed optional inputs ignore; incompatible qos error
//!
//! placement
//!   base_station/perception  detector (Detector)
//!   laptop/ui                web (WebRelay)
//!   localhost/main           camera (Camera)
//!
//! qos
//!   camera.color_image   out  best_effort, volatile, keep_last(1)  #[port] reliability, depth; sensor defaults otherwise
//!   detector.frames      in   best_effort, volatile, keep_last(1)  #[port] reliability, depth; sensor defaults otherwise
//!   detector.detections  out  reliable, volatile, keep_last(10)    state defaults
//!   web.jpeg             in   best_effort, volatile, keep_last(1)  sensor defaults
//!
//! stream color_image (Image) from camera.color_image: Out<Compressed<Image>>
//!   compression auto (global setting), codec jpeg
//!   encode color_image -> color_image/compressed at localhost/main: jpeg (Jpeg; lossy)
//!     params chroma_downsampling=average, drop_alpha=false, jpeg_quality=75, max_width=none, subsampling=4:2:0 (defaults)
//!   decode color_image/compressed -> color_image at base_station/perception: jpeg (Jpeg; lossy)
//!   camera.color_image                 -> [encode color_image/compressed]     Image                   in-process  to the encoder, in the producer's process
//!   [encode color_image/compressed]    -> [decode @ base_station/perception]  CompressedImage (jpeg)  cross-host  compressed: auto compresses cross-host links
//!   [decode @ base_station/perception] -> detector.frames                     Image                   in-process  decoded once for base_station/perception (connected explicitly)
//!   [encode color_image/compressed]    -> web.jpeg                            CompressedImage (jpeg)  cross-host  the input asked for bytes: `In<Compressed<Image>>`
//!
//! stream detections (Detections) from detector.detections: Out<Detections>
//!   compression off (plain output), codec none
//!   no consumers
//!
//! notes
//!   lossy pixels: detector.frames receives lossy pixels of `color_image` (decoded from jpeg)
//! ```
//!
//! The camera's frames are encoded once in `localhost/main`; the relay on `laptop/ui`
//! receives the bytes as they are; a decoder in `base_station/perception` gives the detector
//! pixels, and the plan notes that they are lossy (make that an error with
//! `blueprint.lossy_pixels(Report::Error)`, or mark the input `#[port(lossless)]`).
//! [`Plan::to_dot`] draws the same graph for Graphviz.
//!
//! # 5. Settings
//!
//! Global settings decide when pixel links compress ([`Compression`]: `Auto` by
//! locality with an [`AutoTable`], `On`, `Off`) and how loudly to report findings such as
//! lossy pixels reaching an input ([`Report`]). Per-stream [`StreamSettings`] beat them and
//! pick a codec and its parameters, typed or as text:
//!
//! ```
//! use streamwire::prelude::*;
//! # #[derive(Module, Default)]
//! # pub struct Camera { pub color_image: Out<Compressed<Image>> }
//!
//! let mut blueprint = Blueprint::new();
//! blueprint.add("camera", Camera::default());
//! blueprint.compression(Compression::Auto);
//! // A codec value, checked by the compiler...
//! blueprint.stream(
//!     "color_image",
//!     StreamSettings::new().codec_value::<Image>(Jpeg { quality: 90, ..Jpeg::default() }),
//! );
//! // ...or the same as text, as a blueprint file or `-o key=value` gives it.
//! let from_text: StreamSettings = "codec=jpeg, jpeg_quality=90".parse()?;
//! assert_eq!(from_text.params().get("jpeg_quality"), Some("90"));
//! # Ok::<(), streamwire::text::ParseError>(())
//! ```
//!
//! Every setting parses what it prints and serializes with serde to the same text; see
//! [`text`] for QoS (`"best_effort, keep_last(1)"`) and the rules shared by all.
//!
//! # 6. When something is wrong
//!
//! `build` reports every problem at once in a [`BuildError`], each naming instances,
//! ports and types, with a suggestion where one is likely: an input fed by nobody, two
//! outputs on one stream, a codec parameter the codec does not know, a lossless input
//! behind a lossy link.
//!
//! ```
//! use streamwire::prelude::*;
//! # #[derive(Module, Default)]
//! # pub struct Viewer { #[port(name = "color_image")] pub frames: In<Image> }
//!
//! let mut blueprint = Blueprint::new();
//! blueprint.add("viewer", Viewer::default());
//! let error = blueprint.autoconnect().build().unwrap_err();
//! assert!(error.to_string().contains("viewer.frames"));
//! ```
//!
//! # 7. Running it
//!
//! A module's behaviour is [`Node`]: a `step` the runtime calls when its [`Trigger`]
//! fires (any input has a message, by default; a rate for a source; all of several inputs,
//! paired by stamp with [`pair_by_stamp`]). `blueprint.run(..)` builds the plan and runs
//! every instance on a thread of its own, with the codec nodes the plan shows:
//!
//! ```
//! use std::time::Duration;
//! use streamwire::prelude::*;
//!
//! /// A source: a small grey frame at 50 Hz, then done after 5. Reliable: the viewer
//! /// below keeps every frame from another process, which a best-effort wire cannot
//! /// promise (the planner's `lossy_path` check refuses that pairing).
//! #[derive(Module, Default)]
//! pub struct Camera {
//!     #[port(reliable)]
//!     pub color_image: Out<Compressed<Image>>,
//!     #[state]
//!     pub sent: u32,
//! }
//!
//! impl Node for Camera {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::rate(50.0)
//!     }
//!     fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
//!         if self.sent == 5 {
//!             cx.finish(); // a finite source: the run ends when everyone is done
//!             return Ok(());
//!         }
//!         let frame = Image::from_packed(64, 48, ImageEncoding::Mono8, vec![128u8; 64 * 48])?;
//!         self.color_image.publish(frame.with_stamp(cx.now()))?;
//!         self.sent += 1;
//!         Ok(())
//!     }
//! }
//!
//! /// A reactor: counts what it sees.
//! #[derive(Module, Default)]
//! pub struct Viewer {
//!     #[port(name = "color_image", keep_all)]
//!     pub frames: In<Image>,
//! }
//!
//! impl Node for Viewer {
//!     fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
//!         while let Some(frame) = self.frames.recv()? {
//!             cx.counter("seen").increment();
//!             assert_eq!(frame.message.width(), 64);
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut blueprint = Blueprint::new();
//! blueprint.add("camera", Camera::default());
//! let viewer = blueprint.add("viewer", Viewer::default());
//! // Another process on the same host: under `Compression::Auto` the frames stay raw
//! // (shared memory is cheaper there than a codec). Placed on another host
//! // (`.on_host("laptop")`), they would be JPEG-encoded once and decoded once.
//! blueprint.place(&viewer, Placement::process("ui"));
//! blueprint.autoconnect();
//!
//! let report = blueprint.run(RunOptions::default())?.wait_timeout(Duration::from_secs(30));
//! println!("{report}"); // every input's deliveries and drops, the codec nodes' work
//! assert_eq!(report.reason, EndReason::Finished);
//! assert_eq!(report.stats.outputs[0].published, 5);
//! # Ok::<(), streamwire::runtime::RunError>(())
//! ```
//!
//! The viewer's `while let` loop drains its queue and ends by itself when the run stops:
//! from then on `recv()` returns `None`, and what is left is counted as unprocessed at
//! stop.
//!
//! While it runs, [`RunHandle::stats`](runtime::RunHandle::stats) reads every counter and
//! [`RunHandle::tap`](runtime::RunHandle::tap) listens to any stream by name (pixels, or
//! the encoded bytes). [`Harness`](runtime::Harness) tests one module without a
//! blueprint, on the same queues, with a manual clock.
//!
//! A source of large frames writes them into a buffer its output lends:
//! `let mut pixels = self.color_image.loan(width * height * 3)?;`, fill it, then
//! `Image::from_packed(width, height, ImageEncoding::Rgb8, pixels.freeze())`. Where the
//! stream leaves the process through zenoh's shared memory the buffer is shared memory,
//! sent by reference without a copy; elsewhere it is recycled from a pool. A loan never
//! blocks: one the shared memory cannot serve is a heap buffer, counted as
//! `loan fallback` in the run's report (see [`buffer`]).
//!
//! # 8. Pairing streams by stamp
//!
//! A module that fuses two sensors steps when both inputs have a message
//! ([`Trigger::all`]) and pairs them by their sensor stamps with [`pair_by_stamp`]
//! (ROS message_filters' ExactTime, or ApproximateTime with a [`Slop`]); a message that
//! can never pair is dropped and counted as `unpaired`. Your own message takes part by
//! implementing [`Stamped`]:
//!
//! ```
//! use std::time::Duration;
//! use serde::{Deserialize, Serialize};
//! use streamwire::prelude::*;
//!
//! /// A range reading, stamped with when it was measured.
//! #[derive(Clone, Debug, Serialize, Deserialize, Message)]
//! #[message(name = "acme/Range")]
//! pub struct Range {
//!     pub stamp: Timestamp,
//!     pub metres: f32,
//! }
//!
//! impl Stamped for Range {
//!     fn stamp(&self) -> Timestamp {
//!         self.stamp
//!     }
//! }
//!
//! /// Two rangefinders measuring together, five times, 1 ms apart.
//! #[derive(Module, Default)]
//! pub struct Rangefinders {
//!     pub left: Out<Range>,
//!     pub right: Out<Range>,
//!     #[state]
//!     pub sent: u64,
//! }
//!
//! impl Node for Rangefinders {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::rate(200.0)
//!     }
//!     fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
//!         if self.sent == 5 {
//!             cx.finish();
//!             return Ok(());
//!         }
//!         self.sent += 1;
//!         let stamp = Timestamp::from_nanos(self.sent * 1_000_000);
//!         self.left.publish(Range { stamp, metres: 1.0 })?;
//!         self.right.publish(Range { stamp, metres: 1.2 })?;
//!         Ok(())
//!     }
//! }
//!
//! /// Steps when both inputs have a reading, and takes them in pairs.
//! #[derive(Module, Default)]
//! pub struct Fusion {
//!     #[port(keep_all)]
//!     pub left: In<Range>,
//!     #[port(keep_all)]
//!     pub right: In<Range>,
//! }
//!
//! impl Node for Fusion {
//!     fn trigger(&self) -> Trigger {
//!         Trigger::all([(&self.left).into(), (&self.right).into()])
//!     }
//!     fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
//!         let slop = Slop::Within(Duration::from_micros(100));
//!         while let Some((left, right)) = pair_by_stamp(&mut self.left, &mut self.right, slop)? {
//!             assert_eq!(left.message.stamp, right.message.stamp);
//!             cx.counter("pairs").increment();
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let mut blueprint = Blueprint::new();
//! blueprint.add("rangefinders", Rangefinders::default());
//! blueprint.add("fusion", Fusion::default());
//! blueprint.autoconnect();
//! let report = blueprint.run(RunOptions::default())?.wait_timeout(Duration::from_secs(30));
//! let fusion = report.stats.instances.iter().find(|i| i.name == "fusion").unwrap();
//! assert_eq!(fusion.counters, [("pairs".to_owned(), 5)]);
//! # Ok::<(), streamwire::runtime::RunError>(())
//! ```
//!
//! # Where next
//!
//! - [`msgs`]: the built-in messages and codecs, and a complete example of your own
//!   message with its own codec.
//! - [`Codec`]: writing a codec; [`Module`] and [`Message`]: what the derives generate.
//! - [`runtime`]: running plans, taps, statistics and the one-module harness.
//! - `RFC.md` in the repository: why compression is part of a port's type, and the rules
//!   by which the planner inserts codec nodes.
//!
//! This crate re-exports the parts: `streamwire-core` (messages, codecs, ports, modules,
//! behaviour) and `streamwire-graph` (blueprints, plans) at its root, the runtime as
//! [`runtime`], the built-in messages as [`msgs`], the codec engines as [`engines`], and
//! the derives; behind features, the built-in modules (`modules`), the command line
//! (`cli`), the web relay (`web`), MCAP (`mcap`) and distributed runs on zenoh (`zenoh`).

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
/// The transport seam: the trait a transport implements, the wire frame, the loopback.
pub use streamwire_transport as transport;

/// The codec engines behind the built-in codecs (JPEG with decoder limits, exact-size
/// lossless zstd), for writing codecs of your own messages.
pub use streamwire_codec as engines;

/// The `streamwire` command line as a library (feature `cli`): a user's `main` calls
/// [`cli::Cli::new`], registers its blueprints and runs the CLI with every module type
/// linked into the binary.
#[cfg(feature = "cli")]
pub use streamwire_cli as cli;
/// The web relay (feature `web`, off by default: it brings an HTTP server): streams to
/// browsers over a rosbridge-compatible websocket, and a live viewer page.
#[cfg(feature = "web")]
pub use streamwire_web as web;

/// Distributed runs on zenoh (feature `zenoh`, off by default: it brings the zenoh
/// engine): the coordinator and workers of `streamwire-cluster`;
/// [`cluster::Distributed`] is the plugin a CLI adds (`Cli::add_plugin`) so that `run`
/// and `worker` start and supervise a plan's processes as processes.
#[cfg(feature = "zenoh")]
pub use streamwire_cluster as cluster;
/// MCAP recordings that ROS 2 tools and Foxglove read, and their replay (feature `mcap`);
/// [`mcap::cli::Mcap`] is the plugin that gives a CLI `run --record` and `info`.
#[cfg(feature = "mcap")]
pub use streamwire_mcap as mcap;
/// The zenoh transport (feature `zenoh`).
#[cfg(feature = "zenoh")]
pub use streamwire_zenoh as zenoh;

/// The built-in modules (feature `modules`, off by default): the simulated world's sensors
/// ([`SimCamera`](modules::SimCamera), [`SimDepth`](modules::SimDepth),
/// [`SimLidar`](modules::SimLidar), [`SimOdometry`](modules::SimOdometry)), replay of
/// recorded frames ([`ReplaySource`](modules::ReplaySource)), the recording, busy and byte
/// sinks, the [`Detector`](modules::Detector) and the [`Mapper`](modules::Mapper), and the
/// demo and replay-benchmark blueprints; each is a module like your own, from the crate
/// `streamwire-modules` (which sits below this one and does not depend on it).
///
/// ```
/// use streamwire::modules::{Detector, SimCamera};
/// use streamwire::prelude::*;
///
/// let mut blueprint = Blueprint::new();
/// let camera = blueprint.add("camera", SimCamera::default());
/// let detector = blueprint.add("detector", Detector::default());
/// blueprint.place(&camera, Placement::process("sensors").on_host("robot"));
/// blueprint.place(&detector, Placement::process("perception").on_host("base"));
/// blueprint.autoconnect();
/// let plan = blueprint.build()?;
/// // Across hosts the camera's frames travel as JPEG: encoded once in the camera's
/// // process, decoded once in the detector's.
/// assert_eq!(plan.codec_nodes().count(), 2);
/// # Ok::<(), streamwire::BuildError>(())
/// ```
#[cfg(feature = "modules")]
pub mod modules {
    pub use streamwire_modules::*;
}

/// Everything a module author or blueprint writer needs, in one `use`.
pub mod prelude {
    pub use streamwire_core::{
        Codec, CodecError, CodecParams, Compressed, Context, DefaultCodec, Delivered, Fidelity,
        Header, In, Message, Module, Node, NodeResult, Out, Slop, Stamped, Timestamp, Trigger,
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
    pub use streamwire_runtime::{
        EndReason, Harness, Partitions, Run, RunHandle, RunOptions, RunReport,
    };
}

/// The repository README's examples, run as doctests so they keep compiling.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The guide's examples (docs/guide/src), run as doctests so they keep compiling: each
/// chapter with Rust code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/src/concepts.md")]
pub struct GuideConceptsDoctests;

/// The guide's application chapter: its `main` compiles with the facade's `cli` and
/// `zenoh` features on (`cfg`'d away otherwise).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/src/your-application.md")]
pub struct GuideApplicationDoctests;

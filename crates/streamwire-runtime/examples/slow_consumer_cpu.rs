//! The CPU a slow keep-last(1) pixel consumer of a compressed stream costs its process:
//! a camera publishes the first 150 cockatoo 720p JPEG frames as ready-made bytes at
//! 30 Hz on an `Out<Compressed<Image>>`; a rectifier on `In<Image>` (keep-last 1) takes
//! 70 ms a frame. Prints the frames decoded, taken and dropped, and the process's CPU
//! time (user + system) over the run.
//!
//! ```text
//! cargo run -p streamwire-runtime --example slow_consumer_cpu
//! ```
//!
//! Needs the shared data (`STREAMWIRE_DATA`, see `streamwire-testdata`).

use std::time::{Duration, Instant};

use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out, Trigger};
use streamwire_graph::Blueprint;
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image};
use streamwire_runtime::{RunOptions, Runtime};

const FRAMES: usize = 150;

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Camera {
    #[port(name = "color_image", keep_all)]
    color_image: Out<Compressed<Image>>,
    #[state]
    frames: Vec<CompressedImage>,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_nanos(1_000_000_000 / 30))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.frames.is_empty() {
            cx.finish();
            return Ok(());
        }
        self.color_image.publish_encoded(self.frames.remove(0))?;
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
struct Rectifier {
    #[port(name = "color_image", depth = 1)]
    frames: In<Image>,
}

impl Node for Rectifier {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if self.frames.recv()?.is_some() {
            // Busy elsewhere (a GPU, a solver): wall time, not this process's CPU.
            std::thread::sleep(Duration::from_millis(70));
        }
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let frames = (0..FRAMES)
        .map(|i| {
            let data = streamwire_testdata::read(&streamwire_testdata::cockatoo_frame(i));
            CompressedImage::new("rgb8; jpeg compressed bgr8", data, 1280, 720)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut bp = Blueprint::new();
    bp.add(
        "camera",
        Camera {
            color_image: Out::new(),
            frames,
        },
    );
    bp.add("rectifier", Rectifier { frames: In::new() });
    bp.autoconnect();
    let cpu = cpu_time::ProcessTime::now();
    let wall = Instant::now();
    let report = Runtime::start(bp.into_runnable()?, RunOptions::default())?
        .wait_timeout(Duration::from_secs(60));
    let (cpu, wall) = (cpu.elapsed(), wall.elapsed());
    let input = report
        .stats
        .inputs
        .iter()
        .find(|i| i.port == "rectifier.frames")
        .ok_or("no rectifier row")?;
    let decoded = report
        .stats
        .codecs
        .iter()
        .find(|c| c.codec == "ready-made")
        .map_or(0, |c| c.done);
    println!(
        "published {} decoded {decoded} taken {} dropped {} cpu_ms {} wall_ms {}",
        report.stats.outputs.first().map_or(0, |o| o.published),
        input.delivered,
        input.dropped.queue_full,
        cpu.as_millis(),
        wall.as_millis(),
    );
    Ok(())
}

//! A first run: a source, a reactor and a two-input module, wired by autoconnect, run for
//! two seconds, then the report. See README.md beside this file.

use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

// --- Messages -------------------------------------------------------------------------

/// The mean brightness of one colour frame, 0 to 255.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "first_run/Brightness")]
pub struct Brightness {
    /// Mean over every channel of every pixel.
    pub mean: f32,
}

// --- A source: produces on its own schedule --------------------------------------------

/// Synthetic colour frames: a gradient that drifts, stamped with the run clock.
#[derive(Module)]
pub struct Camera {
    /// "I emit images; the wire may compress them."
    pub color_image: Out<Compressed<Image>>,
    /// Frames per second.
    #[config]
    pub fps: f64,
    /// Frames sent so far.
    #[state]
    pub frame: u32,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let (width, height) = (320u32, 240u32);
        let shift = self.frame;
        let mut data = Vec::with_capacity((width * height * 3) as usize);
        for y in 0..height {
            for x in 0..width {
                data.extend_from_slice(&[(x + shift) as u8, (y + shift) as u8, 128]);
            }
        }
        let image = Image::from_packed(width, height, ImageEncoding::Rgb8, data)?
            .with_stamp(stamp_of(cx, self.frame, self.fps));
        self.color_image.publish(image)?;
        self.frame += 1;
        Ok(())
    }
}

/// Depth frames with the same stamps as the camera's colour frames (one sensor).
#[derive(Module)]
pub struct DepthCamera {
    /// Depth in millimetres.
    pub depth: Out<DepthImage>,
    /// Frames per second.
    #[config]
    pub fps: f64,
    /// Frames sent so far.
    #[state]
    pub frame: u32,
}

impl Node for DepthCamera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let millimetres = vec![1500u16; 160 * 120];
        let depth = DepthImage::from_mm(160, 120, &millimetres)?
            .with_stamp(stamp_of(cx, self.frame, self.fps));
        self.depth.publish(depth)?;
        self.frame += 1;
        Ok(())
    }
}

/// A sensor stamp on a grid of frame periods from the start of the run, so that the two
/// cameras agree on it (as one device's colour and depth do).
fn stamp_of(cx: &Context<'_>, frame: u32, fps: f64) -> Timestamp {
    let period = 1e9 / fps;
    let now = cx.now().as_nanos();
    let start = now.saturating_sub((f64::from(frame) * period) as u64);
    // Round the start to a whole second so both cameras compute the same grid.
    let start = start - start % 1_000_000_000;
    Timestamp::from_nanos(start + (f64::from(frame) * period) as u64)
}

// --- A reactor: one input at a time ---------------------------------------------------

/// Measures each frame's brightness.
#[derive(Module)]
pub struct BrightnessMeter {
    /// "I want pixels": decoded if the link compresses.
    #[port(name = "color_image")]
    pub frames: In<Image>,
    /// One value per frame.
    pub brightness: Out<Brightness>,
}

impl Node for BrightnessMeter {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            let data = frame.message.data();
            let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
            let mean = sum as f32 / data.len().max(1) as f32;
            self.brightness.publish(Brightness { mean })?;
        }
        Ok(())
    }
}

// --- A two-input module: waits for colour and depth together ---------------------------

/// Pairs colour and depth by stamp; reads the latest brightness as a slow input.
#[derive(Module)]
pub struct Fuse {
    /// Colour frames, as pixels.
    #[port(name = "color_image")]
    pub color: In<Image>,
    /// Depth frames.
    pub depth: In<DepthImage>,
    /// The latest brightness, whenever it came.
    pub brightness: In<Brightness>,
}

impl Node for Fuse {
    fn trigger(&self) -> Trigger {
        Trigger::all([(&self.color).into(), (&self.depth).into()])
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some((_color, _depth)) =
            pair_by_stamp(&mut self.color, &mut self.depth, FUSE_SLOP)?
        {
            cx.counter("pairs").increment();
            if let Some(brightness) = self.brightness.latest()?
                && brightness.message.mean > 100.0
            {
                cx.counter("bright_pairs").increment();
            }
        }
        Ok(())
    }
}

const FUSE_SLOP: Slop = Slop::Within(Duration::from_millis(5));

// --- The blueprint, run ----------------------------------------------------------------

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").init();

    let mut blueprint = Blueprint::new();
    blueprint.add(
        "camera",
        Camera {
            color_image: Out::new(),
            fps: 30.0,
            frame: 0,
        },
    );
    blueprint.add(
        "depth_camera",
        DepthCamera {
            depth: Out::new(),
            fps: 30.0,
            frame: 0,
        },
    );
    blueprint.add(
        "brightness",
        BrightnessMeter {
            frames: In::new(),
            brightness: Out::new(),
        },
    );
    let fuse = blueprint.add(
        "fuse",
        Fuse {
            color: In::new(),
            depth: In::new(),
            brightness: In::new(),
        },
    );
    // A planned process on another host (a base station): the camera's frames are
    // JPEG-encoded once for it and decoded once in it. On the camera's own host they
    // would travel raw, cheaper there than a codec (RFC.md, open question 1). (This
    // runtime runs every planned process inside this one.)
    blueprint.place(
        &fuse,
        Placement::process("perception").on_host("base_station"),
    );
    blueprint.autoconnect();
    println!(
        "{}",
        blueprint.build().context("the blueprint has problems")?
    );

    let handle = blueprint
        .run(RunOptions::default())
        .context("the run did not start")?;
    let stop = handle.stop_flag();
    ctrlc::set_handler(move || stop.stop()).context("cannot install the Ctrl+C handler")?;
    let report = handle.wait_timeout(Duration::from_secs(2));
    println!("{report}");
    Ok(())
}

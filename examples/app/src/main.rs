//! An application on streamwire: its own message, its own modules, its own blueprint file,
//! and a `main` that is the whole `streamwire` CLI for them.
//!
//! ```sh
//! cargo run -p streamwire-example-app -- list
//! cargo run -p streamwire-example-app -- run robot --duration 2 -o camera.fps=20
//! cargo run -p streamwire-example-app -- config robot -o detector.threshold=5
//! ```

use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use streamwire::cli::Cli;
use streamwire::cluster::Distributed;
use streamwire::prelude::*;

/// How many things the camera saw in one frame.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Count", kind = sensor)]
pub struct Count {
    /// The frame number.
    pub frame: u64,
    /// Things seen.
    pub things: u32,
}

/// A camera that counts instead of taking pictures (no hardware needed).
#[derive(Module)]
pub struct CounterCamera {
    /// One count per frame.
    pub counts: Out<Count>,
    /// Frames per second.
    #[config(default = 50.0, finite, range = 0.1..=1000.0)]
    pub fps: f64,
    /// Frames sent so far.
    #[state]
    pub frame: u64,
}

impl Node for CounterCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(std::time::Duration::from_secs_f64(
            1.0 / self.fps.max(0.001),
        ))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.frame += 1;
        let things = u32::try_from(self.frame % 7).unwrap_or(0);
        self.counts.publish(Count {
            frame: self.frame,
            things,
        })?;
        Ok(())
    }
}

/// Raises an alarm when a frame has more than `threshold` things.
#[derive(Module)]
pub struct Detector {
    /// The camera's counts.
    pub counts: In<Count>,
    /// More than this many things is an alarm.
    #[config(default = 3)]
    pub threshold: u32,
    /// Fail on purpose after this many frames (0, the default: never), to see a failure
    /// reported. A blueprint file may leave it out.
    #[config(default = 0)]
    pub fail_after: u64,
    /// Fail on purpose in `start` (false, the default: never), as a module does whose
    /// device or port is taken. A blueprint file may leave it out.
    #[config(default = false)]
    pub fail_on_start: bool,
    /// Frames seen.
    #[state]
    pub seen: u64,
}

impl Node for Detector {
    fn trigger(&self) -> Trigger {
        Trigger::AnyInput
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if self.fail_on_start {
            return Err("detector failed on purpose in start".into());
        }
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(count) = self.counts.recv()? {
            self.seen += 1;
            if self.fail_after > 0 && self.seen >= self.fail_after {
                panic!("detector failed on purpose after {} frames", self.seen);
            }
            if count.message.things > self.threshold {
                cx.counter("alarms").add(1);
            }
        }
        Ok(())
    }
}

/// `robot.yaml` made in code: no config struct, each setting comes from its module's
/// declared default (`robot-code`'s keys are `camera.fps`, `detector.threshold`, ... as
/// the file's are), and both give the same plan.
fn robot_in_code() -> Result<Blueprint, streamwire::UndeclaredSetting> {
    let mut blueprint = Blueprint::new();
    blueprint.add("camera", CounterCamera::declared()?);
    let detector = blueprint.add("detector", Detector::declared()?);
    blueprint.place(&detector, Placement::process("perception"));
    blueprint.autoconnect();
    Ok(blueprint)
}

fn main() -> ExitCode {
    Cli::new("acme-robot", "The ACME robot's software, on streamwire")
        .blueprint_file(
            "robot",
            "camera -> detector (own process)",
            include_str!("../blueprints/robot.yaml"),
        )
        .blueprint_fn(
            "robot-code",
            "robot.yaml made in code, from the modules' declared settings",
            robot_in_code,
        )
        // The detector's own process is a worker process, joined by zenoh.
        .add_plugin(Distributed)
        .main()
}

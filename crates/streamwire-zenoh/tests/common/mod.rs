//! Modules and blueprints shared by the zenoh tests: a camera of small raw frames, a
//! pixel viewer, a byte recorder, each keep-all (every frame must arrive), and their
//! sensor-QoS (keep-last) twins.

#![allow(dead_code, reason = "each test binary uses a part")]

use std::time::Duration;

use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, Report, WireFormat};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image, ImageEncoding};
use streamwire_runtime::{EndReason, RunReport, RunStats, balance_checks, check_balance};

/// A camera of small raw frames, finishing after `count`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub(crate) struct Camera {
    #[port(keep_all)]
    pub(crate) color_image: Out<Compressed<Image>>,
    #[config]
    pub(crate) count: u32,
    #[state]
    pub(crate) sent: u32,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(if self.count == 0 {
            3_600_000
        } else {
            5
        }))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.count == 0 {
            return Ok(());
        }
        if self.sent == self.count {
            cx.finish();
            return Ok(());
        }
        self.color_image.publish(frame(self.sent)?)?;
        self.sent += 1;
        Ok(())
    }
}

/// Frame `n` of the test cameras: 32 x 16 RGB, stamped `n + 1` ns.
pub(crate) fn frame(n: u32) -> Result<Image, streamwire_msgs::LayoutError> {
    let data: Vec<u8> = (0..32 * 16 * 3).map(|i| (i % 251) as u8).collect();
    Ok(Image::from_packed(32, 16, ImageEncoding::Rgb8, data)?
        .with_stamp(Timestamp::from_nanos(u64::from(n) + 1)))
}

#[derive(Module)]
#[module(crate = streamwire_core)]
pub(crate) struct Viewer {
    #[port(name = "color_image", keep_all)]
    pub(crate) frames: In<Image>,
}

impl Node for Viewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {
            cx.counter("seen").increment();
        }
        Ok(())
    }
}

#[derive(Module)]
#[module(crate = streamwire_core)]
pub(crate) struct Recorder {
    #[port(name = "color_image/compressed", keep_all)]
    pub(crate) jpeg: In<Compressed<Image>>,
}

impl Node for Recorder {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(jpeg) = self.jpeg.recv()? {
            let _: &CompressedImage = &jpeg.message;
            cx.counter("recorded").increment();
        }
        Ok(())
    }
}

pub(crate) fn blueprint(count: u32) -> Blueprint {
    let mut bp = Blueprint::new();
    bp.add(
        "camera",
        Camera {
            color_image: Out::new(),
            count,
            sent: 0,
        },
    );
    let viewer = bp.add("viewer", Viewer { frames: In::new() });
    let recorder = bp.add("recorder", Recorder { jpeg: In::new() });
    bp.place(&viewer, Placement::process("ui"))
        .place(&recorder, Placement::process("web"));
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    // Keep-all consumers of a best-effort camera in other processes: on the tests'
    // loopback zenoh nothing is lost (and what would be is counted `lost_on_wire`).
    bp.lossy_path(Report::Warn);
    bp.autoconnect();
    bp
}

pub(crate) fn counter(stats: &RunStats, instance: &str, name: &str) -> u64 {
    stats.counter(instance, name)
}

/// A camera publishing `count` small frames as fast as every millisecond, with sensor QoS
/// (best effort, keep the last one): what a slow consumer cannot take is dropped and
/// counted.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub(crate) struct SensorCamera {
    pub(crate) color_image: Out<Compressed<Image>>,
    #[config]
    pub(crate) count: u32,
    #[state]
    pub(crate) sent: u32,
}

impl Node for SensorCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(1))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == self.count {
            cx.finish();
            return Ok(());
        }
        self.color_image.publish(frame(self.sent)?)?;
        self.sent += 1;
        Ok(())
    }
}

/// A viewer with sensor QoS that takes 3 ms per frame: slower than the sensor camera.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub(crate) struct SlowViewer {
    #[port(name = "color_image")]
    pub(crate) frames: In<Image>,
}

impl Node for SlowViewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {
            cx.counter("seen").increment();
            std::thread::sleep(Duration::from_millis(3));
        }
        Ok(())
    }
}

/// Checks the accounting equation on `report` (rows whose producer reported in another
/// process are left to the merged report) and prints how many reports were checked.
pub(crate) fn balanced(report: RunReport) -> RunReport {
    if let Err(error) = check_balance(&report) {
        panic!("{error}\n{report}");
    }
    eprintln!(
        "balance: {} reports checked in this test binary so far",
        balance_checks()
    );
    report
}

/// The reports of one run's processes, merged as a coordinator merges them, balanced.
pub(crate) fn balanced_merge(reports: &[(&str, &RunReport)]) -> RunReport {
    balanced(RunReport::merge(
        EndReason::Finished,
        None,
        Vec::new(),
        reports
            .iter()
            .map(|(process, report)| ((*process).to_owned(), (*report).clone())),
    ))
}

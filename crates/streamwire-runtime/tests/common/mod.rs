//! Modules shared by the runtime's tests.
#![allow(dead_code, unreachable_pub, reason = "each test binary uses a part")]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test failing"
)]

use std::time::{Duration, Instant};

use streamwire_core::{Compressed, Context, In, Node, NodeResult, Out, Timestamp, Trigger};
use streamwire_macros::Module;
use streamwire_msgs::{CompressedImage, Image, ImageEncoding};
use streamwire_runtime::{
    InputStats, RunHandle, RunReport, RunStats, balance_checks, check_balance,
};

/// Checks the accounting equation on `report` (every test that makes a report passes it
/// through here) and prints how many reports this test binary has checked so far.
pub fn balanced(report: RunReport) -> RunReport {
    if let Err(error) = check_balance(&report) {
        panic!("{error}\n{report}");
    }
    eprintln!(
        "balance: {} reports checked in this test binary so far",
        balance_checks()
    );
    report
}

/// Generous guard for waits in tests: never a bound on speed, only a way not to hang.
pub const GUARD: Duration = Duration::from_secs(20);

/// A small test image whose first byte says which frame it is.
pub fn frame(n: u32, width: u32, height: u32) -> Image {
    let mut data = vec![0u8; (width * height * 3) as usize];
    for (i, byte) in data.iter_mut().enumerate() {
        *byte = ((i as u32 * 7 + n * 13) % 251) as u8;
    }
    Image::from_packed(width, height, ImageEncoding::Rgb8, data)
        .unwrap()
        .with_stamp(Timestamp::from_nanos((u64::from(n) + 1) * 1_000_000))
}

/// Publishes `count` frames, one per step, every `period`, then finishes.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Camera {
    pub color_image: Out<Compressed<Image>>,
    #[config]
    pub count: u32,
    #[config]
    pub period: Duration,
    #[config]
    pub size: (u32, u32),
    #[state]
    pub sent: u32,
}

impl Camera {
    pub fn new(count: u32, period: Duration) -> Camera {
        Camera {
            color_image: Out::new(),
            count,
            period,
            size: (32, 16),
            sent: 0,
        }
    }
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        if self.period.is_zero() {
            Trigger::FreeRunning
        } else {
            Trigger::Period(self.period)
        }
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent >= self.count {
            cx.finish();
            return Ok(());
        }
        self.color_image
            .publish(frame(self.sent, self.size.0, self.size.1))?;
        self.sent += 1;
        Ok(())
    }
}

/// Counts the frames it receives; optionally works `work` per frame (sleeping, so the
/// test does not depend on CPU speed).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Viewer {
    #[port(name = "color_image")]
    pub frames: In<Image>,
    #[config]
    pub work: Duration,
    #[state]
    pub seen: u64,
}

impl Viewer {
    pub fn new() -> Viewer {
        Viewer {
            frames: In::new(),
            work: Duration::ZERO,
            seen: 0,
        }
    }
}

impl Node for Viewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if let Some(_frame) = self.frames.recv()? {
            self.seen += 1;
            cx.counter("seen").increment();
            if !self.work.is_zero() {
                std::thread::sleep(self.work);
            }
        }
        Ok(())
    }
}

/// A consumer of the encoded bytes (a recorder, a web relay).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Recorder {
    #[port(name = "color_image/compressed")]
    pub jpeg: In<Compressed<Image>>,
    #[state]
    pub bytes: Vec<Vec<u8>>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            jpeg: In::new(),
            bytes: Vec::new(),
        }
    }
}

impl Node for Recorder {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(jpeg) = self.jpeg.recv()? {
            let _: &CompressedImage = &jpeg.message;
            cx.counter("recorded").increment();
            cx.counter("first_byte_sum")
                .add(u64::from(jpeg.message.data()[0]));
        }
        Ok(())
    }
}

/// An MJPEG camera: publishes the ready-made JPEG bytes it is given, one per 2 ms.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct MjpegCamera {
    // Keep-all, so that the codec nodes' queues (which follow the stream's QoS) drop
    // nothing even on a loaded machine: the counts below are then exact.
    #[port(keep_all)]
    pub color_image: Out<Compressed<Image>>,
    #[state]
    pub frames: Vec<CompressedImage>,
}

impl MjpegCamera {
    /// A camera that publishes `frames`, one every 2 ms, then finishes.
    pub fn new(frames: Vec<CompressedImage>) -> MjpegCamera {
        MjpegCamera {
            color_image: Out::new(),
            frames,
        }
    }
}

impl Node for MjpegCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.frames.is_empty() {
            cx.finish();
            return Ok(());
        }
        let frame = self.frames.remove(0);
        self.color_image.publish_encoded(frame)?;
        Ok(())
    }
}

pub fn jpeg_frames(n: u32) -> Vec<CompressedImage> {
    use streamwire_core::Codec;
    let jpeg = streamwire_msgs::Jpeg::default();
    (0..n)
        .map(|i| jpeg.encode(&frame(i, 32, 16)).unwrap())
        .collect()
}

/// Sums what a byte consumer received, to compare with what was sent.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct ByteSink {
    #[port(name = "color_image/compressed", keep_all)]
    pub jpeg: In<Compressed<Image>>,
    #[state]
    pub received: std::sync::Arc<parking_lot::Mutex<Vec<Vec<u8>>>>,
}

impl Node for ByteSink {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(jpeg) = self.jpeg.recv()? {
            self.received.lock().push(jpeg.message.data().to_vec());
        }
        Ok(())
    }
}

/// Polls `stats` until `done` holds, within the guard.
pub fn wait_until(handle: &RunHandle, done: impl Fn(&RunStats) -> bool) -> RunStats {
    let began = Instant::now();
    loop {
        let stats = handle.stats();
        if done(&stats) || began.elapsed() > GUARD {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The statistics of input `port` (`instance.field`).
pub fn input<'a>(stats: &'a RunStats, port: &str) -> &'a InputStats {
    stats.inputs.iter().find(|i| i.port == port).unwrap()
}

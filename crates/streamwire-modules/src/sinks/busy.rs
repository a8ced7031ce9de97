//! The busy sink: real image work per frame, measured in CPU time.

use std::path::PathBuf;
use std::time::Duration;

use crate::prelude::*;
use cpu_time::ThreadTime;

use super::{Record, Recorder, open, stream_of};

/// Rows one filter pass covers: small, so that `work_ms` is met to within a pass.
pub const PASS_ROWS: u32 = 8;

/// Spends `work_ms` of its thread's CPU time on real image work for every frame, then
/// records the arrival like the [`RecordingSink`](super::RecordingSink) (with the passes
/// in each line).
///
/// The work is an edge filter ([`filter_pass`]: Sobel magnitude of the green channel)
/// over strips of [`PASS_ROWS`] rows, cycling through the frame, repeated until the
/// thread's CPU clock has advanced `work_ms`: N means CPU-milliseconds on any machine and
/// under `taskset`, not sleep. Counters: `frames`, `passes` (passes per frame =
/// passes / frames); the last frame's passes are in [`BusySink::last_passes`].
///
/// Ports: `frames` (`In<Image>`, stream `color_image`). Config: `work_ms` (default 20),
/// `path`, `stream`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct BusySink {
    /// Colour frames.
    #[port(name = "color_image")]
    pub frames: In<Image>,
    /// CPU milliseconds of filtering per frame (default 20; 0 records only).
    #[config(finite, range = 0.0..=60000.0)]
    pub work_ms: f64,
    /// Where to write the JSON lines (default: nowhere).
    #[config]
    pub path: Option<PathBuf>,
    /// The stream name written in each line (default: the port's).
    #[config]
    pub stream: Option<String>,
    /// The open recording.
    #[state]
    pub recorder: Option<Recorder>,
    /// Passes spent on the last frame.
    #[state]
    pub last_passes: u64,
    /// Sum of the filter's output, so the work cannot be optimized away.
    #[state]
    pub checksum: u64,
    /// The filter's output row.
    #[state]
    pub scratch: Vec<u16>,
}

impl Default for BusySink {
    fn default() -> Self {
        BusySink {
            frames: In::new(),
            work_ms: 20.0,
            path: None,
            stream: None,
            recorder: None,
            last_passes: 0,
            checksum: 0,
            scratch: Vec::new(),
        }
    }
}

/// One pass of the edge filter over rows `first..first + PASS_ROWS` (wrapping) of
/// `image`: Sobel gradient magnitude (|gx| + |gy|) of the first channel after red
/// (green; mono images their only channel) into `out`; returns the sum of the magnitudes.
pub fn filter_pass(image: &Image, first: u32, out: &mut Vec<u16>) -> u64 {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let bpp = image.row_bytes() / w.max(1);
    let channel = usize::from(bpp >= 3);
    out.resize(w, 0);
    if w < 3 || h < 3 {
        return 0;
    }
    let px = |row: &[u8], x: usize| i32::from(row[x * bpp + channel]);
    let mut sum = 0u64;
    for r in 0..PASS_ROWS as usize {
        let y = 1 + (first as usize + r) % (h - 2);
        let (Some(up), Some(mid), Some(down)) = (
            image.row(y as u32 - 1),
            image.row(y as u32),
            image.row(y as u32 + 1),
        ) else {
            continue;
        };
        for (x, slot) in out.iter_mut().enumerate().take(w - 1).skip(1) {
            let gx = px(up, x + 1) + 2 * px(mid, x + 1) + px(down, x + 1)
                - px(up, x - 1)
                - 2 * px(mid, x - 1)
                - px(down, x - 1);
            let gy = px(down, x - 1) + 2 * px(down, x) + px(down, x + 1)
                - px(up, x - 1)
                - 2 * px(up, x)
                - px(up, x + 1);
            let magnitude = (gx.unsigned_abs() + gy.unsigned_abs()).min(u32::from(u16::MAX)) as u16;
            *slot = magnitude;
            sum += u64::from(magnitude);
        }
    }
    sum
}

impl BusySink {
    /// Filters `image` until this thread's CPU clock advanced `work_ms` (or the run
    /// stops); returns the passes.
    pub fn work(&mut self, image: &Image, stopping: impl Fn() -> bool) -> u64 {
        if !(self.work_ms.is_finite() && self.work_ms > 0.0) {
            return 0;
        }
        let budget = Duration::from_secs_f64(self.work_ms / 1000.0);
        let start = ThreadTime::now();
        let mut passes = 0u64;
        let mut row = 0u32;
        while start.elapsed() < budget && !stopping() {
            let sum = filter_pass(image, row, &mut self.scratch);
            self.checksum = self.checksum.wrapping_add(std::hint::black_box(sum));
            row = row.wrapping_add(PASS_ROWS);
            passes += 1;
        }
        passes
    }
}

impl Node for BusySink {
    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.recorder = open(&self.path)?;
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let stream = stream_of::<Self>("frames", &self.stream);
        while let Some(frame) = self.frames.recv()? {
            let arrival = cx.now();
            let passes = self.work(&frame.message, || cx.is_stopping());
            self.last_passes = passes;
            cx.counter("frames").increment();
            cx.counter("passes").add(passes);
            if let Some(recorder) = self.recorder.as_mut() {
                let mut record = Record::new(
                    cx.instance_name(),
                    &stream,
                    &frame.header,
                    arrival,
                    frame.message.stamp(),
                    frame.message.data().len(),
                );
                record.passes = Some(passes);
                recorder.record(&record)?;
            }
        }
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.flush()?;
        }
        Ok(())
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.flush()?;
        }
        Ok(())
    }
}

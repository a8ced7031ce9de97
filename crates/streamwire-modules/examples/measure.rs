//! Measures what the issue asks to report: the simulated camera's CPU per 720p frame, its
//! JPEG size per frame at q75 against the real cockatoo frames re-encoded at q75, and the
//! busy sink's passes per frame for N = 1, 5, 20 CPU-ms.
//!
//! `cargo run --release -p streamwire-modules --example measure [-- render]` (the real data
//! must be present; `render` measures the camera's CPU only).
//!
//! The camera's CPU: 5 rounds of 100 frames of the default camera (1280x720, 20 fps, so
//! 5 s of its world each), the process CPU clock (`CLOCK_PROCESS_CPUTIME_ID`, every
//! thread) read around each round; the median and the spread of the rounds' per-frame
//! means.

use streamwire::Timestamp;
use streamwire::engines::jpeg::{self, EncodeOptions, JpegDecoder, PixelFormat, PixelsRef};
use streamwire::msgs::{Image, ImageEncoding};
use streamwire_modules::sinks::BusySink;
use streamwire_modules::world::SimCamera;

fn encode_size(width: u32, height: u32, rgb: &[u8]) -> anyhow::Result<usize> {
    let pixels = PixelsRef::new(width, height, width as usize * 3, PixelFormat::Rgb8, rgb)?;
    Ok(jpeg::encode(&pixels, &EncodeOptions::default())?.data.len())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The default camera's process CPU per rendered 1280x720 frame, ms: per round.
fn render_cpu_ms() -> anyhow::Result<Vec<f64>> {
    let camera = SimCamera::default();
    let mut rounds = Vec::new();
    for round in 0..5u64 {
        let cpu = cpu_time::ProcessTime::now();
        for k in 0..100u64 {
            let stamp = Timestamp::from_nanos(1_000_000_000 + (round * 100 + k) * 50_000_000);
            std::hint::black_box(camera.frame_at(stamp)?);
        }
        rounds.push(cpu.elapsed().as_secs_f64() * 1000.0 / 100.0);
    }
    Ok(rounds)
}

fn main() -> anyhow::Result<()> {
    let rounds = render_cpu_ms()?;
    println!(
        "simulated camera, 1280x720: {:.2} ms of CPU per frame (median of 5 rounds of 100 \
         frames; rounds {})",
        median(rounds.clone()),
        rounds
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if std::env::args().nth(1).as_deref() == Some("render") {
        return Ok(());
    }
    let data = streamwire_testdata::dir();
    let decoder = JpegDecoder::default();
    let mut real = Vec::new();
    let mut real_frames = Vec::new();
    for i in 0..streamwire_testdata::COCKATOO_FRAMES {
        let bytes = std::fs::read(data.join(streamwire_testdata::cockatoo_frame(i)))?;
        let decoded = decoder.decode(&bytes, PixelFormat::Rgb8)?;
        real.push(encode_size(decoded.width, decoded.height, &decoded.data)? as f64);
        if i % 28 == 0 {
            real_frames.push(Image::from_packed(
                decoded.width,
                decoded.height,
                ImageEncoding::Rgb8,
                decoded.data,
            )?);
        }
    }
    let camera = SimCamera::default();
    let mut synthetic = Vec::new();
    let started = std::time::Instant::now();
    for k in 0..280u64 {
        // 20 fps from t = 1 s: the same 14 s the real sequence lasts.
        let stamp = Timestamp::from_nanos(1_000_000_000 + k * 50_000_000);
        let frame = camera.frame_at(stamp)?;
        synthetic.push(encode_size(frame.width(), frame.height(), frame.data())? as f64);
    }
    println!(
        "render + encode of a synthetic 720p frame: {:.1} ms (wall, this build)",
        started.elapsed().as_secs_f64() * 1000.0 / 280.0
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "JPEG q75 bytes/frame, 1280x720: real cockatoo mean {:.0} (median {:.0}, {} frames), \
         synthetic mean {:.0} (median {:.0}, min {:.0}, max {:.0}, {} frames); ratio synthetic/real {:.2}",
        mean(&real),
        median(real.clone()),
        real.len(),
        mean(&synthetic),
        median(synthetic.clone()),
        synthetic.iter().copied().fold(f64::INFINITY, f64::min),
        synthetic.iter().copied().fold(0.0, f64::max),
        synthetic.len(),
        mean(&synthetic) / mean(&real),
    );
    for work_ms in [1.0, 5.0, 20.0] {
        let mut sink = BusySink {
            work_ms,
            ..BusySink::default()
        };
        let passes: Vec<f64> = (0..30)
            .map(|i| sink.work(&real_frames[i % real_frames.len()], || false) as f64)
            .collect();
        println!(
            "busy sink N={work_ms} ms: median {:.0} passes/frame (min {:.0}, max {:.0}; 30 real 720p frames; a pass = Sobel over {} rows)",
            median(passes.clone()),
            passes.iter().copied().fold(f64::INFINITY, f64::min),
            passes.iter().copied().fold(0.0, f64::max),
            streamwire_modules::sinks::PASS_ROWS,
        );
    }
    Ok(())
}

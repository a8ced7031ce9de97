//! Measures what the issue asks to report: the simulated camera's JPEG size per frame at
//! q75 against the real cockatoo frames re-encoded at q75, and the busy sink's passes per
//! frame for N = 1, 5, 20 CPU-ms.
//!
//! `cargo run -p streamwire-modules --example measure` (the real data must be present).

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

fn main() -> anyhow::Result<()> {
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

//! Measures the point-cloud codecs on the demo's lidar scan (30,720 points, x/y/z float32)
//! and the real clouds of the test data (640x480 organized, NaN points, packed colour):
//! bytes and encode/decode milliseconds of cloudini at 1 mm, zstd (the serialized
//! PointCloud2, point_cloud_transport's format) and zstd-shuffled (ours), and cloudini's
//! largest x/y/z error. With `-- --dump DIR` it also writes each cloud's finite x/y/z as
//! little-endian float32 triples (`DIR/<name>.xyz.f32`) for `examples/draco/compare.py`,
//! which measures DracoPy at the same quantization.
//!
//! `cargo run --release -p streamwire-modules --example measure_clouds [-- --dump DIR]`
//! (the real clouds are measured when the data is present). Times are medians of 21 runs,
//! wall clock on one thread; the load average is printed with them.

use std::time::Instant;

use streamwire::Codec;
use streamwire::Timestamp;
use streamwire::msgs::{CloudZstd, Cloudini, PointCloud};
use streamwire_modules::world::SimLidar;

const RUNS: usize = 21;

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}

/// Bytes, encode ms and decode ms of `codec` on `cloud`.
fn measure<C: Codec<PointCloud, Encoded = streamwire::msgs::CompressedPointCloud>>(
    codec: &C,
    cloud: &PointCloud,
) -> anyhow::Result<(usize, f64, f64, PointCloud)> {
    let encoded = codec.encode(cloud)?;
    let decoded = codec.decode(&encoded)?;
    let encode = median_ms(|| {
        std::hint::black_box(codec.encode(cloud).ok());
    });
    let decode = median_ms(|| {
        std::hint::black_box(codec.decode(&encoded).ok());
    });
    Ok((encoded.compressed_data().len(), encode, decode, decoded))
}

/// The largest |error| over x, y and z (NaN points skipped: they stay NaN).
fn max_error(a: &PointCloud, b: &PointCloud) -> anyhow::Result<f64> {
    let mut worst = 0.0f64;
    for axis in ["x", "y", "z"] {
        for (u, v) in a.values::<f32>(axis)?.zip(b.values::<f32>(axis)?) {
            if !u.is_nan() {
                worst = worst.max((f64::from(u) - f64::from(v)).abs());
            }
        }
    }
    Ok(worst)
}

fn finite_xyz(cloud: &PointCloud) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    for [x, y, z] in cloud.xyz()? {
        if x.is_finite() && y.is_finite() && z.is_finite() {
            for v in [x, y, z] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(out)
}

fn clouds() -> anyhow::Result<Vec<(String, PointCloud)>> {
    let lidar = SimLidar::default();
    let mut clouds = vec![(
        "demo lidar scan".to_owned(),
        lidar.scan_at(Timestamp::from_nanos(1_000_000_000))?,
    )];
    let dir = streamwire_testdata::dir().join("rgbd_pointcloud");
    for file in [
        "milk_cartoon_all_small_clorox.pcd",
        "table_scene_mug_stereo_textured.pcd",
    ] {
        match std::fs::read(dir.join(file)) {
            Ok(bytes) => clouds.push((file.to_owned(), PointCloud::from_pcd(&bytes)?)),
            Err(e) => eprintln!("{file}: not measured ({e})"),
        }
    }
    Ok(clouds)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dump = args
        .iter()
        .position(|a| a == "--dump")
        .and_then(|i| args.get(i + 1));
    let load = std::fs::read_to_string("/proc/loadavg")?;
    println!("load average at start: {}", load.trim());
    println!(
        "| cloud | points | raw B | codec | B | ratio | encode ms | decode ms | max xyz error |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, cloud) in clouds()? {
        let raw = cloud.data().len();
        let shuffled = CloudZstd {
            shuffle: true,
            ..CloudZstd::default()
        };
        let results = [
            ("cloudini 1 mm", measure(&Cloudini::default(), &cloud)?),
            ("zstd", measure(&CloudZstd::default(), &cloud)?),
            ("zstd-shuffled", measure(&shuffled, &cloud)?),
        ];
        for (codec, (bytes, encode, decode, decoded)) in results {
            println!(
                "| {name} | {} | {raw} | {codec} | {bytes} | {:.1} | {encode:.2} | {decode:.2} | {:.6} |",
                cloud.len(),
                raw as f64 / bytes as f64,
                max_error(&cloud, &decoded)?
            );
        }
        if let Some(dir) = dump {
            let file = format!("{dir}/{}.xyz.f32", name.replace([' ', '.'], "_"));
            std::fs::write(&file, finite_xyz(&cloud)?)?;
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg")?;
    println!("load average at end: {}", load.trim());
    Ok(())
}

//! Server-side encode time and size, JSON against CBOR, of the messages a ROS websocket
//! bridge was measured on: a 640x480 RGB image, a 1928-point and an 80,000-point cloud,
//! a pose (odometry), and the 640x480 JPEG the relay forwards. Each round times one JSON
//! and one CBOR encode of the same message back to back (interleaved); the medians are
//! printed. Run with `cargo bench -p streamwire-web --bench encode`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use streamwire_core::{Codec, Timestamp};
use streamwire_msgs::{
    Image, ImageEncoding, Jpeg, Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion,
    Twist, Vector3,
};
use streamwire_web::wire;

fn image() -> Image {
    let pixels: Vec<u8> = (0..640 * 480 * 3)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8 / 4 + (i % 640) as u8 / 3)
        .collect();
    Image::from_packed(640, 480, ImageEncoding::Rgb8, pixels)
        .expect("valid")
        .with_stamp(Timestamp::from_nanos(1_700_000_000_123_456_789))
        .with_frame_id("camera")
}

/// x, y, z, rgb: 16 bytes a point.
fn cloud(points: u32) -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("rgb", 12, PointDatatype::Float32, 1),
    ];
    let mut data = Vec::with_capacity(points as usize * 16);
    for i in 0..points {
        let a = i as f32 * 0.013;
        for v in [
            a.cos() * 3.0,
            a.sin() * 3.0,
            (i % 97) as f32 * 0.01,
            f32::from_bits(0x00ff_8040 + i),
        ] {
            data.extend_from_slice(&v.to_le_bytes());
        }
    }
    PointCloud::new(fields, points, 1, 16, points * 16, data)
        .expect("valid")
        .with_frame_id("lidar")
}

fn pose() -> Odometry {
    let pose = Pose {
        position: Vector3::new(1.25, -0.5, 0.0),
        orientation: Quaternion::from_yaw(0.3),
    };
    let twist = Twist {
        linear: Vector3::new(0.2, 0.0, 0.0),
        angular: Vector3::new(0.0, 0.0, 0.1),
    };
    Odometry::new("odom", "base_link", pose, twist).expect("valid")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn measure(name: &str, rounds: usize, shape: impl Fn() -> wire::Value) {
    let mut json_times = Vec::with_capacity(rounds);
    let mut cbor_times = Vec::with_capacity(rounds);
    let (mut json_size, mut cbor_size) = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        let text = wire::publish_json("/topic", &shape());
        json_times.push(t.elapsed());
        json_size = black_box(text).len();
        let t = Instant::now();
        let bytes = wire::publish_cbor("/topic", &shape());
        cbor_times.push(t.elapsed());
        cbor_size = black_box(bytes).len();
    }
    let (json, cbor) = (median(json_times), median(cbor_times));
    println!(
        "| {name} | {:.3} ms | {:.3} ms | {:.1}x | {} | {} |",
        json.as_secs_f64() * 1e3,
        cbor.as_secs_f64() * 1e3,
        json.as_secs_f64() / cbor.as_secs_f64().max(1e-12),
        size(json_size),
        size(cbor_size),
    );
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.2} MB", bytes as f64 / 1e6)
    } else if bytes >= 1 << 10 {
        format!("{:.1} kB", bytes as f64 / 1e3)
    } else {
        format!("{bytes} B")
    }
}

fn main() {
    let image = image();
    let jpeg = Jpeg::default().encode(&image).expect("encodes");
    let small = cloud(1928);
    let big = cloud(80_000);
    let odometry = pose();
    println!("| message | JSON encode | CBOR encode | JSON/CBOR time | JSON size | CBOR size |");
    println!("|---|---|---|---|---|---|");
    measure("640x480 rgb8 sensor_msgs/Image", 61, || wire::image(&image));
    measure("640x480 JPEG sensor_msgs/CompressedImage", 201, || {
        wire::compressed_image(&jpeg)
    });
    measure("1928-point sensor_msgs/PointCloud2", 401, || {
        wire::point_cloud(&small)
    });
    measure("80,000-point sensor_msgs/PointCloud2", 61, || {
        wire::point_cloud(&big)
    });
    measure("pose (nav_msgs/Odometry)", 2001, || {
        wire::odometry(&odometry)
    });
}

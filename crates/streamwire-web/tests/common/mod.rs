//! A small blueprint for the relay's tests: a synthetic camera (a moving pattern, JPEG on
//! the wire), odometry on a circle, a point cloud, a sink of browser commands, and the
//! relay on port 0.

#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test file uses part of this; pub for the derive"
)]

pub mod chromium;
pub mod raw;
pub mod ws;

use parking_lot::Mutex;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use streamwire::msgs::{
    DepthImage, Image, ImageEncoding, Odometry, PointCloud, PointDatatype, PointField, Pose,
    Quaternion, Twist, Vector3,
};
use streamwire::prelude::*;
use streamwire_web::{RelayConfig, WebRelay};

/// A camera drawing a bright square that moves over a gradient, with noise so that the
/// JPEG frames have a realistic size.
#[derive(Module)]
pub struct SyntheticCamera {
    pub color_image: Out<Compressed<Image>>,
    #[config]
    pub width: u32,
    #[config]
    pub height: u32,
    #[config]
    pub fps: f64,
    /// Frames to publish, then finish (`None`: until the run stops).
    #[config]
    pub frames: Option<u64>,
    #[state]
    pub seq: u64,
}

impl SyntheticCamera {
    pub fn new(width: u32, height: u32, fps: f64, frames: Option<u64>) -> SyntheticCamera {
        SyntheticCamera {
            color_image: Out::new(),
            width,
            height,
            fps,
            frames,
            seq: 0,
        }
    }
}

/// A frame of the moving pattern.
pub fn pattern(width: u32, height: u32, seq: u64) -> Vec<u8> {
    let (w, h) = (width as usize, height as usize);
    let side = (h / 4).max(1);
    let x0 = (seq as usize * 7) % w.saturating_sub(side).max(1);
    let y0 = (seq as usize * 3) % h.saturating_sub(side).max(1);
    let mut noise = 0x2545_f491_u32 ^ seq as u32;
    let mut pixels = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            noise ^= noise << 13;
            noise ^= noise >> 17;
            noise ^= noise << 5;
            let n = (noise & 31) as u8;
            let inside = (x0..x0 + side).contains(&x) && (y0..y0 + side).contains(&y);
            if inside {
                pixels.extend_from_slice(&[255 - n, 255 - n, 255 - n]);
            } else {
                pixels.extend_from_slice(&[
                    (x * 255 / w) as u8 / 2 + n,
                    (y * 255 / h) as u8 / 2 + n,
                    96 + n,
                ]);
            }
        }
    }
    pixels
}

impl Node for SyntheticCamera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.frames.is_some_and(|n| self.seq >= n) {
            cx.finish();
            return Ok(());
        }
        let image = Image::from_packed(
            self.width,
            self.height,
            ImageEncoding::Rgb8,
            pattern(self.width, self.height, self.seq),
        )?
        .with_stamp(Timestamp::now())
        .with_frame_id("camera");
        self.color_image.publish(image)?;
        self.seq += 1;
        Ok(())
    }
}

/// Odometry of a robot driving a circle.
#[derive(Module)]
pub struct CircleOdometry {
    #[port(name = "odom")]
    pub odometry: Out<Odometry>,
    #[state]
    pub seq: u64,
}

impl Node for CircleOdometry {
    fn trigger(&self) -> Trigger {
        Trigger::rate(20.0)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let t = self.seq as f64 * 0.05;
        let pose = Pose {
            position: Vector3::new(2.0 * t.cos(), 2.0 * t.sin(), 0.0),
            orientation: Quaternion::from_yaw(t + std::f64::consts::FRAC_PI_2),
        };
        let twist = Twist {
            linear: Vector3::new(0.1, 0.0, 0.0),
            angular: Vector3::new(0.0, 0.0, 0.05),
        };
        let odometry =
            Odometry::new("odom", "base_link", pose, twist)?.with_stamp(Timestamp::now());
        self.odometry.publish(odometry)?;
        self.seq += 1;
        Ok(())
    }
}

/// A cloud of `points` xyz points on a turning spiral.
pub fn cloud(points: u32, turn: f32) -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
    ];
    let mut data = Vec::with_capacity(points as usize * 12);
    for i in 0..points {
        let a = i as f32 * 0.05 + turn;
        let r = 0.5 + i as f32 / points as f32 * 4.0;
        for v in [r * a.cos(), r * a.sin(), 0.1 * (i % 10) as f32] {
            data.extend_from_slice(&v.to_le_bytes());
        }
    }
    #[expect(clippy::unwrap_used, reason = "a valid layout, built here")]
    PointCloud::new(fields, points, 1, 12, points * 12, data)
        .unwrap()
        .with_frame_id("lidar")
}

/// A lidar publishing 1928-point clouds.
#[derive(Module)]
pub struct SpiralLidar {
    #[port(name = "cloud")]
    pub points: Out<PointCloud>,
    #[state]
    pub seq: u64,
}

impl Node for SpiralLidar {
    fn trigger(&self) -> Trigger {
        Trigger::rate(10.0)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.points
            .publish(cloud(1928, self.seq as f32 * 0.1).with_stamp(Timestamp::now()))?;
        self.seq += 1;
        Ok(())
    }
}

/// A depth camera: millimetres rising left to right, zstd on the wire.
#[derive(Module)]
pub struct DepthCamera {
    pub depth: Out<Compressed<DepthImage>>,
}

/// The depth frame: `x * 100 + y` millimetres.
pub fn depth_mm(width: u32, height: u32) -> Vec<u16> {
    (0..height)
        .flat_map(|y| (0..width).map(move |x| (x * 100 + y) as u16))
        .collect()
}

impl Node for DepthCamera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(5.0)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let depth = DepthImage::from_mm(64, 48, &depth_mm(64, 48))?
            .with_stamp(Timestamp::now())
            .with_frame_id("depth");
        self.depth.publish(depth)?;
        Ok(())
    }
}

/// Receives the relay's `cmd_vel`.
#[derive(Module)]
pub struct CommandSink {
    pub cmd_vel: In<Twist>,
    #[config]
    pub received: Arc<Mutex<Vec<Twist>>>,
}

impl Node for CommandSink {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(twist) = self.cmd_vel.recv()? {
            self.received.lock().push(twist.message);
        }
        Ok(())
    }
}

/// A running test blueprint.
pub struct TestRun {
    pub run: RunHandle,
    pub addr: SocketAddr,
    /// The token the relay asks (`None` when it asks none).
    pub token: Option<String>,
    /// The URL the relay says to open (with its token).
    pub url: String,
    pub commands: Arc<Mutex<Vec<Twist>>>,
}

impl TestRun {
    /// `path` (which may have a query) with the relay's token added to its query.
    pub fn with_token(&self, path: &str) -> String {
        match &self.token {
            None => path.to_owned(),
            Some(token) if path.contains('?') => format!("{path}&token={token}"),
            Some(token) => format!("{path}?token={token}"),
        }
    }
}

/// Starts the camera (`color_image`), odometry (`odom`), the lidar (`cloud`), a command
/// sink and the relay with `config` (port 0).
pub fn start(config: RelayConfig, camera: SyntheticCamera) -> TestRun {
    start_with(config, camera, |_| {})
}

/// [`start`] with more modules, added by `more` before the streams are connected.
#[expect(clippy::unwrap_used, reason = "test setup")]
pub fn start_with(
    config: RelayConfig,
    camera: SyntheticCamera,
    more: impl FnOnce(&mut Blueprint),
) -> TestRun {
    let config = config.with_port(0);
    let address = config.address.clone();
    let commands = Arc::new(Mutex::new(Vec::new()));
    let mut blueprint = Blueprint::new();
    blueprint.add("camera", camera);
    blueprint.add(
        "base",
        CircleOdometry {
            odometry: Out::new(),
            seq: 0,
        },
    );
    blueprint.add(
        "lidar",
        SpiralLidar {
            points: Out::new(),
            seq: 0,
        },
    );
    blueprint.add("depth_camera", DepthCamera { depth: Out::new() });
    blueprint.add(
        "commands",
        CommandSink {
            cmd_vel: In::new(),
            received: commands.clone(),
        },
    );
    blueprint.add("web", WebRelay::new(config));
    more(&mut blueprint);
    blueprint.autoconnect();
    let run = blueprint.run(RunOptions::default()).unwrap();
    let addr = address
        .wait(Duration::from_secs(20))
        .expect("the relay listens");
    TestRun {
        run,
        addr,
        token: address.token(),
        url: address.url().unwrap(),
        commands,
    }
}

/// A plain HTTP GET: (status code, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    http_get_with(addr, path, "")
}

/// A plain HTTP GET with extra header lines (each ending in `\r\n`): (status code, body).
#[expect(clippy::unwrap_used, reason = "test helper")]
pub fn http_get_with(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{headers}\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The relay's `/stats` as JSON (asked with its token).
#[expect(clippy::unwrap_used, reason = "test helper")]
pub fn stats(run: &TestRun) -> serde_json::Value {
    let (status, body) = http_get(run.addr, &run.with_token("/stats"));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The relay's counter `name` in the run's report (0 while it has none).
pub fn relay_counter(run: &TestRun, name: &str) -> u64 {
    run.run
        .stats()
        .instances
        .iter()
        .find(|i| i.name == "web")
        .and_then(|i| i.counters.iter().find(|(n, _)| n == name))
        .map_or(0, |(_, v)| *v)
}

//! The simulated world's sensors, as modules.

use std::sync::Arc;

use crate::prelude::*;
use streamwire_core::buffer::Loan;
use streamwire_msgs::{
    DepthEncoding, DepthImage, Image, ImageEncoding, Odometry, PointCloud, PointDatatype,
    PointField, Pose, Quaternion, Twist, Vector3,
};

use super::{World, grid_stamp, world_time};

/// The most bytes one simulated frame or scan may take: 128 MiB (an 8K colour frame is
/// 95 MiB), so a mistyped size is refused before a run instead of aborting a worker on
/// its first allocation.
pub(crate) const FRAME_BUDGET_BYTES: u64 = 128 << 20;

/// `count` items of `each` bytes within [`FRAME_BUDGET_BYTES`], or what to change.
fn within_budget(what: String, count: u64, each: u64, change: &str) -> Result<(), String> {
    let bytes = count.saturating_mul(each);
    if bytes > FRAME_BUDGET_BYTES {
        return Err(format!(
            "{what} is {bytes} bytes, over the {FRAME_BUDGET_BYTES} bytes (128 MiB) one frame \
             may take: lower {change}"
        ));
    }
    Ok(())
}

impl SimCamera {
    /// `width` x `height` x 3 bytes within the frame budget (`#[module(validate)]`).
    fn check_frame(&self) -> Result<(), String> {
        within_budget(
            format!(
                "a frame of {} x {} pixels x 3 bytes",
                self.width, self.height
            ),
            u64::from(self.width) * u64::from(self.height),
            3,
            "`width` or `height`",
        )
    }
}

impl SimDepth {
    /// `width` x `height` x 2 bytes within the frame budget (`#[module(validate)]`).
    fn check_frame(&self) -> Result<(), String> {
        within_budget(
            format!(
                "a frame of {} x {} pixels x 2 bytes",
                self.width, self.height
            ),
            u64::from(self.width) * u64::from(self.height),
            2,
            "`width` or `height`",
        )
    }
}

impl SimLidar {
    /// `beams` x `azimuths` points of 12 bytes within the frame budget (`#[module(validate)]`).
    fn check_scan(&self) -> Result<(), String> {
        within_budget(
            format!(
                "a scan of {} x {} points x 12 bytes",
                self.beams, self.azimuths
            ),
            u64::from(self.beams) * u64::from(self.azimuths),
            12,
            "`beams` or `azimuths`",
        )
    }
}

fn period_ns(hz: f64) -> u64 {
    if hz.is_finite() && hz > 0.0 {
        (1e9 / hz) as u64
    } else {
        1_000_000_000
    }
}

/// The stamp of this step's tick, or `None` if that tick was already published (a
/// trigger that fired early or twice within one grid period).
fn next_stamp(now: Timestamp, hz: f64, last: &mut Option<Timestamp>) -> Option<Timestamp> {
    let stamp = grid_stamp(now, period_ns(hz));
    if last.is_some_and(|l| l >= stamp) {
        return None;
    }
    *last = Some(stamp);
    Some(stamp)
}

/// The simulated world's colour camera: renders the robot's view at `width x height`,
/// `fps` frames a second (rgb8, frame `camera`). The sensor stamp of each frame is its
/// tick on an absolute grid of the frame period, so a [`SimDepth`] at the same rate
/// stamps (and sees) the same instants. Deterministic: the same seed and stamp give the
/// same pixels, noise included.
///
/// At 1280x720 its JPEG at q75 (the codec's default) is 51.6-74.5 KB a frame, mean
/// 58.8 KB over 14 s at 20 fps, against 42.6 KB for the real cockatoo frames re-encoded
/// the same way: 1.38 times (`cargo run -p streamwire-modules --example measure`;
/// the same figures after the renderer's rework, issue 29). Rendering a 1280x720 frame
/// costs about 10 ms of CPU (see the [world's docs](super)).
///
/// Ports: `color_image` (`Out<Compressed<Image>>`: the wire may JPEG it).
/// Config: `width`, `height` (pixels, any size), `fps`, `seed`, `hfov_deg`.
#[derive(Module)]
#[module(crate = streamwire_core, validate = SimCamera::check_frame)]
pub struct SimCamera {
    /// Colour frames.
    pub color_image: Out<Compressed<Image>>,
    /// Width in pixels (default 1280).
    #[config(range = 1..=16384)]
    pub width: u32,
    /// Height in pixels (default 720).
    #[config(range = 1..=16384)]
    pub height: u32,
    /// Frames per second (default 20).
    #[config(finite, range = 0.01..=1000.0)]
    pub fps: f64,
    /// The world's seed (default 1).
    #[config]
    pub seed: u64,
    /// Horizontal field of view, degrees (default 90).
    #[config(finite, range = 1.0..=179.0)]
    pub hfov_deg: f64,
    /// The world, built at start.
    #[state]
    pub world: Option<World>,
    /// The last stamp published.
    #[state]
    pub last_stamp: Option<Timestamp>,
}

impl Default for SimCamera {
    fn default() -> Self {
        SimCamera {
            color_image: Out::new(),
            width: 1280,
            height: 720,
            fps: 20.0,
            seed: 1,
            hfov_deg: 90.0,
            world: None,
            last_stamp: None,
        }
    }
}

impl SimCamera {
    /// The frame this camera publishes for sensor stamp `stamp`.
    pub fn frame_at(&self, stamp: Timestamp) -> Result<Image, streamwire_msgs::LayoutError> {
        self.frame_into(stamp, Loan::heap(self.frame_len()))
    }

    /// The bytes of one frame.
    fn frame_len(&self) -> usize {
        let (w, h) = World::frame_size(self.width, self.height);
        w * h * 3
    }

    /// The frame for `stamp`, rendered into `pixels` (a loan of [`Self::frame_len`] bytes).
    fn frame_into(
        &self,
        stamp: Timestamp,
        mut pixels: Loan,
    ) -> Result<Image, streamwire_msgs::LayoutError> {
        let fresh;
        let world = match &self.world {
            Some(world) => world,
            None => {
                fresh = World::new(self.seed);
                &fresh
            }
        };
        world.render_color_into(
            world_time(stamp),
            self.width,
            self.height,
            self.hfov_deg,
            &mut pixels,
        );
        let (w, h) = World::frame_size(self.width, self.height);
        Ok(
            Image::from_packed(w as u32, h as u32, ImageEncoding::Rgb8, pixels.freeze())?
                .with_stamp(stamp)
                .with_frame_id("camera"),
        )
    }
}

impl Node for SimCamera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.world = Some(World::new(self.seed));
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(stamp) = next_stamp(cx.now(), self.fps, &mut self.last_stamp) else {
            return Ok(());
        };
        // Rendered straight into a buffer lent by the output: shared memory when the
        // frame leaves the process through it (no copy on the way), else a pooled one.
        let pixels = self.color_image.loan(self.frame_len())?;
        self.color_image.publish(self.frame_into(stamp, pixels)?)?;
        cx.counter("frames").increment();
        Ok(())
    }
}

/// The simulated world's depth sensor, at the colour camera's pose: 16UC1 millimetres
/// along the optical axis (frame `camera`), with noise of 1 mm plus 0.15% of the depth;
/// 0 (no return) beyond `max_range_m`.
///
/// Ports: `depth` (`Out<Compressed<DepthImage>>`: lossless zstd on the wire).
/// Config: `width`, `height`, `fps`, `seed`, `hfov_deg`, `max_range_m`.
#[derive(Module)]
#[module(crate = streamwire_core, validate = SimDepth::check_frame)]
pub struct SimDepth {
    /// Depth frames.
    pub depth: Out<Compressed<DepthImage>>,
    /// Width in pixels (default 640).
    #[config(range = 1..=16384)]
    pub width: u32,
    /// Height in pixels (default 360).
    #[config(range = 1..=16384)]
    pub height: u32,
    /// Frames per second (default 10).
    #[config(finite, range = 0.01..=1000.0)]
    pub fps: f64,
    /// The world's seed (default 1).
    #[config]
    pub seed: u64,
    /// Horizontal field of view, degrees (default 90).
    #[config(finite, range = 1.0..=179.0)]
    pub hfov_deg: f64,
    /// Farthest return, metres (default 20: the whole room).
    #[config(finite, range = 0.01..=1000.0)]
    pub max_range_m: f64,
    /// The world, built at start.
    #[state]
    pub world: Option<World>,
    /// The last stamp published.
    #[state]
    pub last_stamp: Option<Timestamp>,
}

impl Default for SimDepth {
    fn default() -> Self {
        SimDepth {
            depth: Out::new(),
            width: 640,
            height: 360,
            fps: 10.0,
            seed: 1,
            hfov_deg: 90.0,
            max_range_m: 20.0,
            world: None,
            last_stamp: None,
        }
    }
}

impl SimDepth {
    /// The depth frame this sensor publishes for sensor stamp `stamp`.
    pub fn frame_at(&self, stamp: Timestamp) -> Result<DepthImage, streamwire_msgs::LayoutError> {
        let (w, h) = World::frame_size(self.width, self.height);
        self.frame_into(stamp, Loan::heap(w * h * 2))
    }

    /// The frame for `stamp`, written into `bytes` (a loan of width x height x 2 bytes:
    /// 16UC1 little-endian).
    fn frame_into(
        &self,
        stamp: Timestamp,
        mut bytes: Loan,
    ) -> Result<DepthImage, streamwire_msgs::LayoutError> {
        let fresh;
        let world = match &self.world {
            Some(world) => world,
            None => {
                fresh = World::new(self.seed);
                &fresh
            }
        };
        let t = world_time(stamp);
        let frame = world.render(t, self.width, self.height, self.hfov_deg, false);
        let key = (t * 1000.0).round() as u64;
        let w = frame.width as usize;
        let mm = frame.depth_m.iter().enumerate().map(|(i, &m)| {
            let m = f64::from(m);
            if m > self.max_range_m || m <= 0.0 {
                return 0;
            }
            let noise = f64::from(world.noise(key, (i % w) as u64, (i / w) as u64 + 7_000_000))
                * (1.0 + 1.5 * m);
            (m * 1000.0 + noise).round().clamp(1.0, 65534.0) as u16
        });
        for (out, mm) in bytes.chunks_exact_mut(2).zip(mm) {
            out.copy_from_slice(&mm.to_le_bytes());
        }
        Ok(DepthImage::from_packed(
            frame.width,
            frame.height,
            DepthEncoding::Mm16,
            bytes.freeze(),
        )?
        .with_stamp(stamp)
        .with_frame_id("camera"))
    }
}

impl Node for SimDepth {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.world = Some(World::new(self.seed));
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(stamp) = next_stamp(cx.now(), self.fps, &mut self.last_stamp) else {
            return Ok(());
        };
        let (w, h) = World::frame_size(self.width, self.height);
        let bytes = self.depth.loan(w * h * 2)?;
        self.depth.publish(self.frame_into(stamp, bytes)?)?;
        cx.counter("frames").increment();
        Ok(())
    }
}

/// The simulated world's spinning lidar: `beams` x `azimuths` points (default 30 x 1024 =
/// 30 720) at `hz` (default 10), x/y/z float32 in frame `base_link` (on the floor under
/// the robot, x forward), with `noise_m` of range noise.
///
/// Ports: `cloud` (`Out<Compressed<PointCloud>>`: cloudini at 1 mm on the wire, where the
/// stream's compression setting or the auto table compresses it).
#[derive(Module)]
#[module(crate = streamwire_core, validate = SimLidar::check_scan)]
pub struct SimLidar {
    /// Point clouds.
    pub cloud: Out<Compressed<PointCloud>>,
    /// Scans per second (default 10).
    #[config(finite, range = 0.01..=1000.0)]
    pub hz: f64,
    /// Elevation beams, -15° to +15° (default 30).
    #[config(range = 1..=1024)]
    pub beams: u32,
    /// Steps per turn (default 1024).
    #[config(range = 1..=65536)]
    pub azimuths: u32,
    /// The world's seed (default 1).
    #[config]
    pub seed: u64,
    /// Range noise, metres (default 0.01).
    #[config(finite, range = 0.0..=10.0)]
    pub noise_m: f64,
    /// The world, built at start.
    #[state]
    pub world: Option<World>,
    /// The last stamp published.
    #[state]
    pub last_stamp: Option<Timestamp>,
}

impl Default for SimLidar {
    fn default() -> Self {
        SimLidar {
            cloud: Out::new(),
            hz: 10.0,
            beams: 30,
            azimuths: 1024,
            seed: 1,
            noise_m: 0.01,
            world: None,
            last_stamp: None,
        }
    }
}

impl SimLidar {
    /// The scan this lidar publishes for sensor stamp `stamp`.
    pub fn scan_at(
        &self,
        stamp: Timestamp,
    ) -> Result<PointCloud, streamwire_msgs::PointCloudError> {
        let world = self.world.clone().unwrap_or_else(|| World::new(self.seed));
        let points = world.lidar_scan(world_time(stamp), self.beams, self.azimuths, self.noise_m);
        let mut data = Vec::with_capacity(points.len() * 12);
        for p in &points {
            for v in p {
                data.extend_from_slice(&v.to_le_bytes());
            }
        }
        let fields: Arc<[PointField]> = Arc::from(vec![
            PointField::new("x", 0, PointDatatype::Float32, 1),
            PointField::new("y", 4, PointDatatype::Float32, 1),
            PointField::new("z", 8, PointDatatype::Float32, 1),
        ]);
        let width = u32::try_from(points.len()).unwrap_or(u32::MAX);
        Ok(
            PointCloud::new(fields, width, 1, 12, width.saturating_mul(12), data)?
                .with_dense(true)
                .with_stamp(stamp)
                .with_frame_id("base_link"),
        )
    }
}

impl Node for SimLidar {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.hz)
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.world = Some(World::new(self.seed));
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(stamp) = next_stamp(cx.now(), self.hz, &mut self.last_stamp) else {
            return Ok(());
        };
        self.cloud.publish(self.scan_at(stamp)?)?;
        cx.counter("scans").increment();
        Ok(())
    }
}

/// The simulated robot's wheel odometry: its true pose and velocity in `odom` (the
/// world's frame) plus independent noise per sample, at `hz` (default 50).
///
/// Ports: `odometry` (`Out<Odometry>`).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct SimOdometry {
    /// Pose and velocity estimates.
    pub odometry: Out<Odometry>,
    /// Samples per second (default 50).
    #[config(finite, range = 0.01..=1000.0)]
    pub hz: f64,
    /// The world's seed (default 1).
    #[config]
    pub seed: u64,
    /// Position noise, metres (uniform, default 0.01).
    #[config(finite, range = 0.0..=10.0)]
    pub position_noise_m: f64,
    /// Heading noise, radians (uniform, default 0.005).
    #[config(finite, range = 0.0..=3.15)]
    pub yaw_noise_rad: f64,
    /// The world, built at start.
    #[state]
    pub world: Option<World>,
    /// The last stamp published.
    #[state]
    pub last_stamp: Option<Timestamp>,
}

impl Default for SimOdometry {
    fn default() -> Self {
        SimOdometry {
            odometry: Out::new(),
            hz: 50.0,
            seed: 1,
            position_noise_m: 0.01,
            yaw_noise_rad: 0.005,
            world: None,
            last_stamp: None,
        }
    }
}

impl SimOdometry {
    /// The estimate this odometry publishes for sensor stamp `stamp`.
    pub fn sample_at(&self, stamp: Timestamp) -> Result<Odometry, streamwire_msgs::OdometryError> {
        let world = self.world.clone().unwrap_or_else(|| World::new(self.seed));
        let t = world_time(stamp);
        let pose = world.robot_pose(t);
        let (speed, turn) = world.robot_velocity(t);
        let key = stamp.as_nanos() / 1_000_000;
        let n = |k: u64| f64::from(world.noise(key, k, 9_000_000));
        let pose = Pose {
            position: Vector3::new(
                pose.x + n(0) * self.position_noise_m,
                pose.y + n(1) * self.position_noise_m,
                0.0,
            ),
            orientation: Quaternion::from_yaw(pose.yaw + n(2) * self.yaw_noise_rad),
        };
        let twist = Twist {
            linear: Vector3::new(speed * (1.0 + 0.02 * n(3)), 0.0, 0.0),
            angular: Vector3::new(0.0, 0.0, turn + 0.01 * n(4)),
        };
        Ok(Odometry::new("odom", "base_link", pose, twist)?.with_stamp(stamp))
    }
}

impl Node for SimOdometry {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.hz)
    }

    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.world = Some(World::new(self.seed));
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let Some(stamp) = next_stamp(cx.now(), self.hz, &mut self.last_stamp) else {
            return Ok(());
        };
        self.odometry.publish(self.sample_at(stamp)?)?;
        cx.counter("samples").increment();
        Ok(())
    }
}

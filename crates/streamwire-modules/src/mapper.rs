//! The mapper: a 2D occupancy grid from the lidar (or depth) and odometry.

use crate::prelude::*;
use streamwire_msgs::{OccupancyGrid, PointCloud};

/// Builds a 2D occupancy grid in `odom` from point clouds (or depth images) placed by the
/// latest odometry, and publishes it once per `1 / publish_hz` seconds of run clock
/// (default 1 Hz) once anything was integrated.
///
/// A point between `min_height_m` and `max_height_m` above the floor marks its cell
/// occupied; the cells on the line from the robot to every `ray_every`-th such point are
/// marked free (log-odds, clamped, so a moving object's trail clears). Depth pixels (every
/// 4th row and column) are back-projected with a pinhole camera of `hfov_deg` at
/// `camera_height_m`, looking along the robot's heading.
///
/// Ports: `cloud` (`In<PointCloud>`, optional), `depth` (`In<DepthImage>`, optional,
/// lossless), `odometry` (`In<Odometry>`), `map` (`Out<OccupancyGrid>`).
#[derive(Module)]
#[module(crate = streamwire_core, validate = Mapper::check_grid)]
pub struct Mapper {
    /// Lidar clouds: x forward, y left, z up from the floor under the robot.
    #[port(optional)]
    pub cloud: In<PointCloud>,
    /// Depth images from a camera on the robot.
    #[port(optional, lossless)]
    pub depth: In<DepthImage>,
    /// Where the robot is.
    pub odometry: In<Odometry>,
    /// The grid.
    pub map: Out<OccupancyGrid>,
    /// Metres per cell (default 0.1).
    #[config(finite, range = 0.01..=10.0)]
    pub resolution_m: f64,
    /// Side of the square grid, centred on the origin, metres (default 16).
    #[config(finite, range = 0.1..=10000.0)]
    pub size_m: f64,
    /// Grids per second (default 1).
    #[config(finite, range = 0.01..=100.0)]
    pub publish_hz: f64,
    /// Lowest point height that is an obstacle, metres (default 0.1).
    #[config(finite, range = -100.0..=100.0)]
    pub min_height_m: f64,
    /// Highest, metres (default 2.0: below the ceiling).
    #[config(finite, range = -100.0..=100.0)]
    pub max_height_m: f64,
    /// Trace free space to every this-many obstacle points (default 8).
    #[config(range = 1..=1_000_000)]
    pub ray_every: usize,
    /// The depth camera's horizontal field of view, degrees (default 90).
    #[config(finite, range = 1.0..=179.0)]
    pub hfov_deg: f64,
    /// The depth camera's height, metres (default 0.5).
    #[config(finite, range = -100.0..=100.0)]
    pub camera_height_m: f64,
    /// Log-odds per cell.
    #[state]
    pub log_odds: Vec<f32>,
    /// When the last grid was published.
    #[state]
    pub last_publish: Option<Timestamp>,
    /// The newest stamp integrated.
    #[state]
    pub newest: Option<Timestamp>,
}

impl Default for Mapper {
    fn default() -> Self {
        Mapper {
            cloud: In::new(),
            depth: In::new(),
            odometry: In::new(),
            map: Out::new(),
            resolution_m: 0.1,
            size_m: 16.0,
            publish_hz: 1.0,
            min_height_m: 0.1,
            max_height_m: 2.0,
            ray_every: 8,
            hfov_deg: 90.0,
            camera_height_m: 0.5,
            log_odds: Vec::new(),
            last_publish: None,
            newest: None,
        }
    }
}

const HIT: f32 = 0.85;
const MISS: f32 = -0.4;
const CLAMP: f32 = 4.0;

/// The most cells along one side of the grid: 4096 x 4096 cells of log-odds are 64 MiB.
pub const MAX_GRID_SIDE_CELLS: f64 = 4096.0;

impl Mapper {
    /// The settings together (`#[module(validate)]`): the grid fits its budget, and the
    /// obstacle band is not empty.
    fn check_grid(&self) -> Result<(), String> {
        let side = (self.size_m / self.resolution_m).ceil();
        if side > MAX_GRID_SIDE_CELLS {
            return Err(format!(
                "a grid of {} m at {} m per cell is {side} cells a side, over the {MAX_GRID_SIDE_CELLS} \
                 a side (64 MiB) a map may take: raise `resolution_m` or lower `size_m`",
                self.size_m, self.resolution_m
            ));
        }
        if self.min_height_m >= self.max_height_m {
            return Err(format!(
                "`min_height_m` ({}) must be below `max_height_m` ({}): no point would be an obstacle",
                self.min_height_m, self.max_height_m
            ));
        }
        Ok(())
    }

    fn cells(&self) -> usize {
        (self.size_m / self.resolution_m)
            .ceil()
            .clamp(1.0, 10_000.0) as usize
    }

    fn origin(&self) -> f64 {
        -(self.cells() as f64 * self.resolution_m) / 2.0
    }

    fn index(&self, x: f64, y: f64) -> Option<usize> {
        let n = self.cells();
        let col = ((x - self.origin()) / self.resolution_m).floor();
        let row = ((y - self.origin()) / self.resolution_m).floor();
        (col >= 0.0 && row >= 0.0 && (col as usize) < n && (row as usize) < n)
            .then(|| row as usize * n + col as usize)
    }

    fn add(&mut self, index: usize, delta: f32) {
        if let Some(cell) = self.log_odds.get_mut(index) {
            *cell = (*cell + delta).clamp(-CLAMP, CLAMP);
        }
    }

    /// Integrates points (robot frame: forward, left, up) seen from `pose` (x, y, yaw).
    pub fn integrate(&mut self, pose: (f64, f64, f64), points: impl Iterator<Item = [f64; 3]>) {
        let n = self.cells();
        if self.log_odds.len() != n * n {
            self.log_odds = vec![0.0; n * n];
        }
        let (px, py, yaw) = pose;
        let (sin, cos) = yaw.sin_cos();
        let mut obstacles = 0usize;
        for [f, l, z] in points {
            if !(z >= self.min_height_m && z <= self.max_height_m) {
                continue;
            }
            let (x, y) = (px + f * cos - l * sin, py + f * sin + l * cos);
            obstacles += 1;
            if self.ray_every > 0 && obstacles.is_multiple_of(self.ray_every) {
                // Free space up to (not including) the hit cell.
                let steps = ((x - px).hypot(y - py) / (self.resolution_m * 0.5)) as usize;
                let hit = self.index(x, y);
                for s in 0..steps {
                    let a = s as f64 / steps.max(1) as f64;
                    if let Some(i) = self.index(px + (x - px) * a, py + (y - py) * a)
                        && Some(i) != hit
                    {
                        self.add(i, MISS);
                    }
                }
            }
            if let Some(i) = self.index(x, y) {
                self.add(i, HIT);
            }
        }
    }

    /// The grid as it stands: -1 where nothing was seen, else occupancy percent.
    pub fn grid(
        &self,
        stamp: Timestamp,
    ) -> Result<OccupancyGrid, streamwire_msgs::PerceptionError> {
        let n = self.cells();
        let cells: Vec<i8> = if self.log_odds.len() == n * n {
            self.log_odds
                .iter()
                .map(|&l| {
                    if l == 0.0 {
                        -1
                    } else {
                        (100.0 * (1.0 - 1.0 / (1.0 + l.exp()))).round() as i8
                    }
                })
                .collect()
        } else {
            vec![-1; n * n]
        };
        Ok(OccupancyGrid::new(
            "odom",
            self.resolution_m,
            (self.origin(), self.origin()),
            n as u32,
            n as u32,
            cells,
        )?
        .with_stamp(stamp))
    }
}

fn pose_of(odometry: &Odometry) -> (f64, f64, f64) {
    let p = odometry.pose();
    let q = p.orientation;
    let yaw = (2.0 * (q.w * q.z + q.x * q.y)).atan2(1.0 - 2.0 * (q.y * q.y + q.z * q.z));
    (p.position.x, p.position.y, yaw)
}

impl Node for Mapper {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let odometry = self.odometry.latest()?;
        let pose = odometry.as_ref().map(|o| pose_of(&o.message));
        while let Some(cloud) = self.cloud.recv()? {
            let Some(pose) = pose else {
                cx.counter("without_odometry").increment();
                continue;
            };
            let points: Vec<[f64; 3]> = cloud
                .message
                .xyz()?
                .map(|[x, y, z]| [f64::from(x), f64::from(y), f64::from(z)])
                .collect();
            self.integrate(pose, points.into_iter());
            self.newest = Some(cloud.message.stamp());
            cx.counter("clouds").increment();
        }
        while let Some(depth) = self.depth.recv()? {
            let Some(pose) = pose else {
                cx.counter("without_odometry").increment();
                continue;
            };
            let image = &depth.message;
            let (w, h) = (image.width(), image.height());
            let fx =
                (f64::from(w) / 2.0) / (self.hfov_deg.clamp(10.0, 170.0).to_radians() / 2.0).tan();
            let (cxp, cyp) = (f64::from(w) / 2.0, f64::from(h) / 2.0);
            let mut points = Vec::new();
            for v in (0..h).step_by(4) {
                for u in (0..w).step_by(4) {
                    let Some(z) = image.depth_m(u, v) else {
                        continue;
                    };
                    let z = f64::from(z);
                    let right = (f64::from(u) + 0.5 - cxp) / fx * z;
                    let down = (f64::from(v) + 0.5 - cyp) / fx * z;
                    points.push([z, -right, self.camera_height_m - down]);
                }
            }
            self.integrate(pose, points.into_iter());
            self.newest = Some(image.stamp());
            cx.counter("depth_frames").increment();
        }
        let now = cx.now();
        let period = std::time::Duration::from_secs_f64(1.0 / self.publish_hz.clamp(1e-3, 1e3));
        if let Some(newest) = self.newest
            && self
                .last_publish
                .is_none_or(|last| now.saturating_since(last) >= period)
        {
            self.map.publish(self.grid(newest)?)?;
            self.last_publish = Some(now);
            cx.counter("maps").increment();
        }
        Ok(())
    }
}

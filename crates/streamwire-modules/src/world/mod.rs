//! One simulated world that every synthetic sensor sees: a robot driving a loop through a
//! walled room with textured walls, a plank floor, a tiled ceiling, a few static blocks and
//! one block that moves, all deterministic from a seed.
//!
//! The world is a function of time: [`World::robot_pose`] and
//! [`World::moving_object`] give the state at `t` seconds, and the sensors
//! ([`SimCamera`], [`SimDepth`], [`SimLidar`], [`SimOdometry`]) render or measure it. Every
//! sensor takes `t` from its frame's sensor stamp (the stamp on an absolute grid of its
//! period, see [`world_time`]), so a camera and a depth sensor at the same rate publish the
//! same stamps and see the same instant.
//!
//! Geometry is 2.5D: vertical walls and blocks on a flat floor under a flat ceiling, cast
//! one ray per image column (or lidar azimuth) and resolved per row by height, so colour,
//! depth and the lidar agree exactly.
//!
//! The camera moves every frame, so no part of its image stays put and nothing is kept
//! from one frame to the next; what is precomputed is everything that does not depend on
//! the pixel: per frame the columns' rays and the slopes at which each face they cross
//! begins and ends, per camera size the rows' slopes and their distances to the floor and
//! ceiling, per world the planks' tones and the grain's sine. A pixel is then a few
//! comparisons, multiplications and one table lookup, written row by row into the loaned
//! buffer, and the camera asks for colour alone ([`World::render_color_into`]: no depth,
//! no labels). A 1280x720 frame costs about 10 ms of CPU (release, on a 2-core machine
//! at load 5-7: 9.6-9.8 ms a frame over 60 s of the demo, 10.3 ms median in `cargo run
//! --release -p streamwire-modules --example measure -- render`), 24 ms before.

mod sensors;

pub use sensors::{SimCamera, SimDepth, SimLidar, SimOdometry};

use streamwire_core::Timestamp;

/// Height of the ceiling (and of the walls), metres.
pub const CEILING_M: f64 = 2.5;
/// The room spans x in `-ROOM_X..ROOM_X` and y in `-ROOM_Y..ROOM_Y`, metres.
pub const ROOM_X: f64 = 7.0;
/// See [`ROOM_X`].
pub const ROOM_Y: f64 = 5.0;
/// Height of the camera (and depth sensor) above the floor, metres.
pub const CAMERA_HEIGHT_M: f64 = 0.5;
/// Height of the lidar above the floor, metres.
pub const LIDAR_HEIGHT_M: f64 = 0.8;
/// Amplitude of the camera's per-pixel noise (uniform, in 8-bit levels): sensor noise,
/// chosen so that a 720p frame's JPEG at q75 is the size of a real camera's.
pub const PIXEL_NOISE: f32 = 1.0;
/// The label [`World::render`] gives the pixels of the moving object.
pub const MOVING_LABEL: u8 = 255;
/// Label of wall pixels.
pub const WALL_LABEL: u8 = 0;
/// Label of floor pixels.
pub const FLOOR_LABEL: u8 = 1;
/// Label of ceiling pixels.
pub const CEILING_LABEL: u8 = 2;

/// The world time of a sensor stamp, seconds: the stamp's time within the hour. Every
/// sensor uses this, so the same stamp is the same instant for all of them (the world
/// repeats every hour).
pub fn world_time(stamp: Timestamp) -> f64 {
    (stamp.as_nanos() % 3_600_000_000_000) as f64 * 1e-9
}

/// The stamp of the newest tick of a `period_ns` grid at or before `now` (ticks at whole
/// multiples of the period since the epoch), so that sensors of the same rate agree.
pub fn grid_stamp(now: Timestamp, period_ns: u64) -> Timestamp {
    let period = period_ns.max(1);
    Timestamp::from_nanos(now.as_nanos() / period * period)
}

/// The robot's pose: position (metres) and heading (radians, 0 along +x).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose2 {
    /// X, metres.
    pub x: f64,
    /// Y, metres.
    pub y: f64,
    /// Heading, radians.
    pub yaw: f64,
}

/// An axis-aligned block standing on the floor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Block {
    /// Smallest x and y corner, metres.
    pub min: [f64; 2],
    /// Largest x and y corner, metres.
    pub max: [f64; 2],
    /// Height, metres.
    pub height: f64,
    /// Base colour, rgb.
    pub color: [f32; 3],
    /// Label of its pixels in [`World::render`].
    pub label: u8,
}

impl Block {
    /// Whether the point (`x`, `y`) lies inside the block's footprint.
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.min[0] && x <= self.max[0] && y >= self.min[1] && y <= self.max[1]
    }
}

/// A deterministic world (see the [module docs](self)).
///
/// ```
/// use streamwire_modules::world::World;
/// let world = World::new(7);
/// let frame = world.render(1.0, 64, 48, 90.0, true);
/// assert_eq!(frame.rgb.len(), 64 * 48 * 3);
/// assert_eq!(World::new(7).render(1.0, 64, 48, 90.0, true).rgb, frame.rgb);
/// ```
#[derive(Clone, Debug)]
pub struct World {
    seed: u64,
    obstacles: Vec<Block>,
    /// The tones of the planks `-PLANKS_EACH_SIDE..=PLANKS_EACH_SIDE` (every plank of the
    /// room), computed once.
    plank_tones: Vec<f32>,
    /// The planks' grain over one period: `0.5 + 0.5 sin`, `SINE_STEPS` steps.
    grain: Vec<f32>,
}

/// What a camera at the robot sees: colour, depth along the optical axis, and which
/// surface each pixel shows.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Packed rgb8 rows (empty if colour was not asked).
    pub rgb: Vec<u8>,
    /// Depth along the optical axis, metres, noise-free, per pixel.
    pub depth_m: Vec<f32>,
    /// Surface label per pixel ([`MOVING_LABEL`], [`WALL_LABEL`], ... or an obstacle's).
    pub labels: Vec<u8>,
}

impl Frame {
    /// The ground-truth box of the moving object: (x, y, width, height) pixels of the
    /// bounding box of its visible pixels, or `None` if fewer than `min_pixels` show.
    pub fn moving_object_box(&self, min_pixels: usize) -> Option<(u32, u32, u32, u32)> {
        bounding_box(&self.labels, self.width, |l| l == MOVING_LABEL, min_pixels)
    }
}

/// The bounding box (x, y, w, h) of the pixels where `hit` holds, if at least `min` do.
pub(crate) fn bounding_box(
    values: &[u8],
    width: u32,
    hit: impl Fn(u8) -> bool,
    min: usize,
) -> Option<(u32, u32, u32, u32)> {
    let w = width.max(1) as usize;
    let (mut x0, mut y0, mut x1, mut y1, mut n) = (usize::MAX, usize::MAX, 0, 0, 0usize);
    for (i, &v) in values.iter().enumerate() {
        if hit(v) {
            let (x, y) = (i % w, i / w);
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            n += 1;
        }
    }
    (n >= min.max(1)).then(|| {
        (
            x0 as u32,
            y0 as u32,
            (x1 - x0 + 1) as u32,
            (y1 - y0 + 1) as u32,
        )
    })
}

/// A surface a ray hit, before the row decides whether it is seen.
#[derive(Clone, Copy, Debug)]
struct Hit {
    /// Horizontal distance along the ray, metres.
    distance: f64,
    /// Height of the surface's top, metres.
    top: f64,
    /// Coordinate along the face, metres (texture).
    along: f64,
    /// Whether the face is perpendicular to x (shaded darker).
    x_face: bool,
    color: [f32; 3],
    label: u8,
}

/// What one ray of given slope ends on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Surface {
    /// A block or wall face: index into the column's hits.
    Face(usize),
    /// The floor at this horizontal distance.
    Floor(f64),
    /// The ceiling at this horizontal distance.
    Ceiling(f64),
}

const PALETTE: [[f32; 3]; 6] = [
    [40.0, 70.0, 190.0],  // blue
    [50.0, 150.0, 60.0],  // green
    [210.0, 190.0, 40.0], // yellow
    [30.0, 150.0, 150.0], // teal
    [120.0, 60.0, 160.0], // purple
    [90.0, 90.0, 95.0],   // dark grey
];

/// The moving object's colour: a saturated red nothing else in the world has.
pub const MOVING_COLOR: [f32; 3] = [215.0, 35.0, 30.0];

impl World {
    /// The world of `seed`: the same seed gives the same world, block for block.
    pub fn new(seed: u64) -> World {
        let mut rng = SplitMix(seed ^ 0x5EED_0FA0_0000);
        let spots = [
            (-5.5, -3.5),
            (5.5, -3.4),
            (0.0, -3.9),
            (-6.0, 1.2),
            (5.9, 1.0),
        ];
        let mut palette: Vec<[f32; 3]> = PALETTE.to_vec();
        let mut obstacles = Vec::new();
        for (i, (x, y)) in spots.into_iter().enumerate() {
            let cx = x + rng.symmetric() * 0.3;
            let cy = y + rng.symmetric() * 0.3;
            let half_x = 0.2 + rng.unit() * 0.3;
            let half_y = 0.2 + rng.unit() * 0.3;
            let pick = (rng.next() % palette.len() as u64) as usize;
            let color = palette.swap_remove(pick);
            obstacles.push(Block {
                min: [cx - half_x, cy - half_y],
                max: [cx + half_x, cy + half_y],
                height: 0.4 + rng.unit() * 1.1,
                color,
                label: 3 + i as u8,
            });
        }
        let plank_tones = (-PLANKS_EACH_SIDE..=PLANKS_EACH_SIDE)
            .map(|plank| plank_tone(seed, plank))
            .collect();
        let grain = (0..SINE_STEPS)
            .map(|step| {
                let phase = (step as f64 + 0.5) / SINE_STEPS as f64 * std::f64::consts::TAU;
                (phase.sin() * 0.5 + 0.5) as f32
            })
            .collect();
        World {
            seed,
            obstacles,
            plank_tones,
            grain,
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The static blocks.
    pub fn obstacles(&self) -> &[Block] {
        &self.obstacles
    }

    /// The robot's true pose at `t` seconds: an ellipse (3 m by 1.5 m) around the room's
    /// centre, counter-clockwise, heading along the path, at 0.2 to 0.45 m/s.
    pub fn robot_pose(&self, t: f64) -> Pose2 {
        let theta = 0.15 * t;
        let (x, y) = (3.0 * theta.cos(), 1.5 * theta.sin());
        let (dx, dy) = (-3.0 * theta.sin(), 1.5 * theta.cos());
        Pose2 {
            x,
            y,
            yaw: dy.atan2(dx),
        }
    }

    /// The robot's true velocity at `t`: forward speed (m/s) and turn rate (rad/s).
    pub fn robot_velocity(&self, t: f64) -> (f64, f64) {
        let dt = 1e-3;
        let (a, b) = (self.robot_pose(t - dt), self.robot_pose(t + dt));
        let speed = ((b.x - a.x).hypot(b.y - a.y)) / (2.0 * dt);
        let mut dyaw = b.yaw - a.yaw;
        if dyaw > std::f64::consts::PI {
            dyaw -= std::f64::consts::TAU;
        } else if dyaw < -std::f64::consts::PI {
            dyaw += std::f64::consts::TAU;
        }
        (speed, dyaw / (2.0 * dt))
    }

    /// The moving object at `t`: a red 0.6 m block 1.2 m tall sliding along y = 3.3 m,
    /// between x = -4.5 and 4.5 m.
    pub fn moving_object(&self, t: f64) -> Block {
        let cx = 4.5 * (0.4 * t).sin();
        Block {
            min: [cx - 0.3, 3.0],
            max: [cx + 0.3, 3.6],
            height: 1.2,
            color: MOVING_COLOR,
            label: MOVING_LABEL,
        }
    }

    /// Whether (`x`, `y`) is occupied at `t`: outside the room, in a wall, a block or the
    /// moving object (for checking maps).
    pub fn occupied(&self, t: f64, x: f64, y: f64) -> bool {
        x.abs() >= ROOM_X
            || y.abs() >= ROOM_Y
            || self.obstacles.iter().any(|b| b.contains(x, y))
            || self.moving_object(t).contains(x, y)
    }

    /// What a horizontal ray from (`x`, `y`) along `heading` hits, nearest first; the
    /// room's wall is always last.
    fn column_hits(&self, t: f64, x: f64, y: f64, heading: f64, hits: &mut Vec<Hit>) {
        hits.clear();
        let (dx, dy) = (heading.cos(), heading.sin());
        let moving = self.moving_object(t);
        for block in self.obstacles.iter().chain(std::iter::once(&moving)) {
            if let Some(hit) = ray_block(x, y, dx, dy, block) {
                hits.push(hit);
            }
        }
        hits.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        // The wall: where the ray leaves the room.
        let tx = if dx > 1e-12 {
            (ROOM_X - x) / dx
        } else if dx < -1e-12 {
            (-ROOM_X - x) / dx
        } else {
            f64::INFINITY
        };
        let ty = if dy > 1e-12 {
            (ROOM_Y - y) / dy
        } else if dy < -1e-12 {
            (-ROOM_Y - y) / dy
        } else {
            f64::INFINITY
        };
        let (distance, x_face) = if tx < ty { (tx, true) } else { (ty, false) };
        let along = if x_face {
            y + dy * distance
        } else {
            x + dx * distance
        };
        hits.push(Hit {
            distance: distance.max(0.0),
            top: CEILING_M,
            along,
            x_face,
            color: [0.0; 3],
            label: WALL_LABEL,
        });
    }

    /// Renders what a camera on the robot (at [`CAMERA_HEIGHT_M`], looking along its
    /// heading, horizontal field of view `hfov_deg`) sees at `t`: colour (if `color`),
    /// depth and labels, `width x height` pixels.
    pub fn render(&self, t: f64, width: u32, height: u32, hfov_deg: f64, color: bool) -> Frame {
        let (w, h) = World::frame_size(width, height);
        let mut rgb = if color {
            vec![0u8; w * h * 3]
        } else {
            Vec::new()
        };
        let mut frame = self.render_into(t, width, height, hfov_deg, color.then_some(&mut rgb));
        frame.rgb = rgb;
        frame
    }

    /// The size in pixels of a frame rendered at `width x height` (at least 1 x 1).
    pub fn frame_size(width: u32, height: u32) -> (usize, usize) {
        (width.max(1) as usize, height.max(1) as usize)
    }

    /// As [`render`](Self::render), with the colour written into `rgb` (a loaned buffer
    /// of [`frame_size`](Self::frame_size) x 3 bytes: every byte is written) instead of
    /// the frame's own `rgb`, which stays empty. A buffer of another length gets no
    /// colour.
    pub fn render_into(
        &self,
        t: f64,
        width: u32,
        height: u32,
        hfov_deg: f64,
        rgb: Option<&mut [u8]>,
    ) -> Frame {
        let (w, h) = World::frame_size(width, height);
        let rgb = rgb.filter(|rgb| rgb.len() == w * h * 3);
        let mut depth_m = vec![0f32; w * h];
        let mut labels = vec![0u8; w * h];
        let camera = CameraRays::new(w, h, hfov_deg);
        self.draw(
            t,
            &camera,
            Targets {
                rgb,
                depth_m: Some(&mut depth_m),
                labels: Some(&mut labels),
            },
        );
        Frame {
            width: w as u32,
            height: h as u32,
            rgb: Vec::new(),
            depth_m,
            labels,
        }
    }

    /// The colour of [`render`](Self::render) alone, written into `rgb` (every byte of
    /// [`frame_size`](Self::frame_size) x 3 bytes), with no depth and no labels: what the
    /// camera publishes. `false` (nothing written) if `rgb` has another length.
    pub fn render_color_into(
        &self,
        t: f64,
        width: u32,
        height: u32,
        hfov_deg: f64,
        rgb: &mut [u8],
    ) -> bool {
        let (w, h) = World::frame_size(width, height);
        if rgb.len() != w * h * 3 {
            return false;
        }
        let camera = CameraRays::new(w, h, hfov_deg);
        self.draw(
            t,
            &camera,
            Targets {
                rgb: Some(rgb),
                depth_m: None,
                labels: None,
            },
        );
        true
    }

    /// Casts one ray per column and fills the column's pixels of every target, top to
    /// bottom.
    ///
    /// The per-pixel work is a few comparisons and multiplications: the rows' slopes and
    /// their distances to the floor and ceiling are tables ([`CameraRays`]), a column's
    /// faces are resolved by comparing the row's slope with slopes precomputed per face
    /// ([`Face`]), the floor point is the column's direction scaled by the row's distance,
    /// a brick's tone is kept while the column stays on the brick, the planks' tones and
    /// their grain are tables, and the noise is a xorshift stream per column.
    fn draw(&self, t: f64, camera: &CameraRays, mut targets: Targets<'_>) {
        let (w, h) = (camera.width, camera.height);
        let pose = self.robot_pose(t);
        let frame_key = (t * 1000.0).round() as u64;
        // The columns first (one ray each), then the pixels row by row, so that every
        // target is written in order.
        let mut hits = Vec::new();
        let mut column_hits = Vec::new();
        let mut faces = Vec::new();
        let mut columns = Vec::with_capacity(w);
        for col in 0..w {
            // Image x grows to the right, which is clockwise: subtract from the heading.
            let angle = camera.column_offset[col].atan();
            let heading = pose.yaw - angle;
            let cos = angle.cos();
            self.column_hits(t, pose.x, pose.y, heading, &mut column_hits);
            let first = hits.len();
            hits.extend_from_slice(&column_hits);
            faces.extend(
                column_hits
                    .iter()
                    .map(|hit| Face::new(hit, CAMERA_HEIGHT_M)),
            );
            columns.push(Column {
                cos,
                inverse_cos: 1.0 / cos,
                dx: heading.cos(),
                dy: heading.sin(),
                faces: first..hits.len(),
                brick: BrickTone::default(),
            });
        }
        for row in 0..h {
            let row_slope = camera.row_slope[row];
            let (floor_depth, ceiling_depth) = (camera.floor_depth[row], camera.ceiling_depth[row]);
            let mut noise = Xorshift::new(mix(self.seed
                ^ frame_key.wrapping_mul(0xA24B_AED4_963E_E407)
                ^ (row as u64).wrapping_mul(0x9FB2_1C65_1E98_DF25)));
            for (col, column) in columns.iter_mut().enumerate() {
                let i = row * w + col;
                let (hits, faces) = (&hits[column.faces.clone()], &faces[column.faces.clone()]);
                let seen = resolve_faces(faces, row_slope * column.cos);
                let (distance, label) = match seen {
                    Seen::Face(k, _) => (hits[k].distance, hits[k].label),
                    Seen::Floor => (floor_depth * column.inverse_cos, FLOOR_LABEL),
                    Seen::Ceiling => (ceiling_depth * column.inverse_cos, CEILING_LABEL),
                };
                if let Some(depth_m) = targets.depth_m.as_deref_mut() {
                    depth_m[i] = (distance * column.cos) as f32;
                }
                if let Some(labels) = targets.labels.as_deref_mut() {
                    labels[i] = label;
                }
                if let Some(rgb) = targets.rgb.as_deref_mut() {
                    let (x, y) = (pose.x + column.dx * distance, pose.y + column.dy * distance);
                    let c = match seen {
                        Seen::Face(k, height) => {
                            self.shade_face(&hits[k], faces[k].light, height, &mut column.brick)
                        }
                        Seen::Floor => lit(self.planks(x, y), distance),
                        Seen::Ceiling => lit(ceiling_tiles(x, y), distance),
                    };
                    let n = PIXEL_NOISE * noise.symmetric();
                    // `as u8` saturates: below 0 is 0, above 255 is 255.
                    rgb[i * 3] = (c[0] + n) as u8;
                    rgb[i * 3 + 1] = (c[1] + n) as u8;
                    rgb[i * 3 + 2] = (c[2] + n) as u8;
                }
            }
        }
    }

    /// A lidar scan at `t` from [`LIDAR_HEIGHT_M`]: `beams` elevations evenly from -15°
    /// to +15°, `azimuths` steps around; points (x forward, y left, z up, metres) in the
    /// robot's frame on the floor, with `noise_m` of range noise.
    pub fn lidar_scan(&self, t: f64, beams: u32, azimuths: u32, noise_m: f64) -> Vec<[f32; 3]> {
        let pose = self.robot_pose(t);
        let mut points = Vec::with_capacity(beams as usize * azimuths as usize);
        let mut hits = Vec::new();
        let key = (t * 1000.0).round() as u64;
        for a in 0..azimuths {
            let az = f64::from(a) / f64::from(azimuths.max(1)) * std::f64::consts::TAU;
            self.column_hits(t, pose.x, pose.y, pose.yaw + az, &mut hits);
            for b in 0..beams {
                let elevation = if beams > 1 {
                    (-15.0 + 30.0 * f64::from(b) / f64::from(beams - 1)).to_radians()
                } else {
                    0.0
                };
                let slope = -elevation.tan();
                let distance = match resolve(&hits, slope, LIDAR_HEIGHT_M) {
                    Surface::Face(k) => hits[k].distance,
                    Surface::Floor(d) | Surface::Ceiling(d) => d,
                };
                let noise =
                    f64::from(self.noise(key, u64::from(a), u64::from(b) + 1_000_000)) * noise_m;
                let d = (distance + noise).max(0.0);
                let z = LIDAR_HEIGHT_M - slope * d;
                points.push([(d * az.cos()) as f32, (d * az.sin()) as f32, z as f32]);
            }
        }
        points
    }

    /// Uniform noise in -1..1 for (key, a, b), fixed by the seed.
    pub(crate) fn noise(&self, key: u64, a: u64, b: u64) -> f32 {
        // One mix of the coordinates, each spread by an odd constant: per pixel, this is
        // most of the render's cost after the texture.
        let h = mix(self.seed
            ^ key.wrapping_mul(0xA24B_AED4_963E_E407)
            ^ a.wrapping_mul(0x9FB2_1C65_1E98_DF25)
            ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        (h >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }

    /// The colour of a face's pixel at `height` metres, `light` its distance's light.
    fn shade_face(&self, hit: &Hit, light: f32, height: f64, brick: &mut BrickTone) -> [f32; 3] {
        let mut c = if hit.label == WALL_LABEL {
            self.brick(hit.along, height, brick)
        } else {
            // Blocks: their colour with a darker band near the top edge.
            let band = if hit.top - height < 0.05 { 0.8 } else { 1.0 };
            hit.color.map(|v| v * band)
        };
        if hit.x_face {
            c = c.map(|v| v * 0.82);
        }
        c.map(|v| v * light)
    }

    /// Brick wall texture at (along, height) metres (height at least 0); `cache` keeps the
    /// last brick's tone.
    fn brick(&self, along: f64, height: f64, cache: &mut BrickTone) -> [f32; 3] {
        let rows = height.max(0.0) * (1.0 / 0.13);
        // Rows are 0.13 m, every other one shifted by half a brick.
        let row = rows as i64;
        let shift = if row % 2 == 0 { 0.0 } else { 0.2 };
        let u = (along + shift) * (1.0 / 0.4);
        let col = floor(u);
        // As `fract() < 0.03`, which is true for every negative `u` (the walls' negative
        // halves are mortar-coloured: the look the world has always had).
        let mortar = rows - (row as f64) < 0.1 || u < 0.0 || u - col < 0.03;
        if mortar {
            return [170.0, 150.0, 130.0];
        }
        let key = (row, col as i64);
        if cache.key != Some(key) {
            let tone =
                (mix(self.seed ^ mix(key.0 as u64 ^ mix(key.1 as u64))) >> 56) as f32 / 255.0;
            *cache = BrickTone {
                key: Some(key),
                tone,
            };
        }
        let v = 0.88 + 0.24 * cache.tone;
        [150.0 * v, 105.0 * v, 85.0 * v]
    }

    /// Plank floor texture at (x, y) metres.
    fn planks(&self, x: f64, y: f64) -> [f32; 3] {
        let planks = y * (1.0 / 0.3);
        let plank = floor(planks);
        // As `fract() < 0.03`, true for every negative `planks` (half the floor is
        // seam-coloured: the look the world has always had).
        if planks < 0.0 || planks - plank < 0.03 {
            return [95.0, 68.0, 45.0];
        }
        let tone = self.plank_tone(plank as i64);
        // The grain: a sine along x, from a table of one period.
        let phase = (x * 9.0 + plank * 1.7) * (SINE_STEPS as f64 / std::f64::consts::TAU);
        let step = (floor(phase) as i64).rem_euclid(SINE_STEPS as i64) as usize;
        let grain = self.grain.get(step).copied().unwrap_or(0.5);
        let v = 0.75 + 0.3 * tone + 0.05 * grain;
        [140.0 * v, 100.0 * v, 66.0 * v]
    }

    /// The tone (0..1) of plank `plank` (planks run along x, 0.3 m wide, numbered along y).
    fn plank_tone(&self, plank: i64) -> f32 {
        usize::try_from(plank + PLANKS_EACH_SIDE)
            .ok()
            .and_then(|index| self.plank_tones.get(index).copied())
            .unwrap_or_else(|| plank_tone(self.seed, plank))
    }
}

/// Planks on each side of y = 0 whose tones [`World`] keeps (the room's 5 m / 0.3 m = 17,
/// and a margin).
const PLANKS_EACH_SIDE: i64 = 24;
/// Steps of the grain's sine table.
const SINE_STEPS: usize = 256;

/// The tone (0..1) of plank `plank` of the world of `seed`.
fn plank_tone(seed: u64, plank: i64) -> f32 {
    (mix(seed ^ mix(plank as u64 ^ 0xF100)) >> 56) as f32 / 255.0
}

/// `x` rounded toward zero, by a conversion (`f64::trunc` is a call into libm on x86-64
/// without SSE4.1, a sixth of the render's time); exact within +-2^63.
fn trunc(x: f64) -> f64 {
    x as i64 as f64
}

/// `x` rounded down (see [`trunc`]).
fn floor(x: f64) -> f64 {
    let t = trunc(x);
    if t > x { t - 1.0 } else { t }
}

/// `base` lit at `distance` metres: farther is darker.
fn lit(base: [f32; 3], distance: f64) -> [f32; 3] {
    let light = 0.55 + 0.45 / (1.0 + 0.035 * distance as f32);
    base.map(|v| v * light)
}

/// Ceiling tile texture at (x, y) metres: 0.6 m tiles with darker joints.
fn ceiling_tiles(x: f64, y: f64) -> [f32; 3] {
    let (u, v) = (x * (1.0 / 0.6), y * (1.0 / 0.6));
    let line = (u - trunc(u)).abs() < 0.03 || (v - trunc(v)).abs() < 0.03;
    let v = if line { 178.0 } else { 205.0 };
    [v, v, v + 4.0]
}

/// The rays of a camera of one size and field of view: per column its offset from the
/// optical axis, per row its slope and its depths (along the optical axis) to the floor
/// and the ceiling, metres.
struct CameraRays {
    width: usize,
    height: usize,
    /// Per column, the ray's tangent from the optical axis (right positive).
    column_offset: Vec<f64>,
    /// Per row, height lost per metre along the optical axis (down positive).
    row_slope: Vec<f64>,
    /// Per row, depth to the floor (infinite for rows at or above the horizon).
    floor_depth: Vec<f64>,
    /// Per row, depth to the ceiling (infinite for rows at or below the horizon).
    ceiling_depth: Vec<f64>,
}

impl CameraRays {
    fn new(width: usize, height: usize, hfov_deg: f64) -> CameraRays {
        let fx = (width as f64 / 2.0) / (hfov_deg.clamp(10.0, 170.0).to_radians() / 2.0).tan();
        let (cx, cy) = (width as f64 / 2.0, height as f64 / 2.0);
        let column_offset = (0..width).map(|col| (col as f64 + 0.5 - cx) / fx).collect();
        let row_slope: Vec<f64> = (0..height)
            .map(|row| (row as f64 + 0.5 - cy) / fx)
            .collect();
        let floor_depth = row_slope
            .iter()
            .map(|&s| {
                if s > 1e-12 {
                    CAMERA_HEIGHT_M / s
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let ceiling_depth = row_slope
            .iter()
            .map(|&s| {
                if s < -1e-12 {
                    (CEILING_M - CAMERA_HEIGHT_M) / -s
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        CameraRays {
            width,
            height,
            column_offset,
            row_slope,
            floor_depth,
            ceiling_depth,
        }
    }
}

/// One column of a camera's image: its ray and the faces the ray crosses.
struct Column {
    /// Cosine of the ray's angle to the optical axis.
    cos: f64,
    /// `1 / cos`.
    inverse_cos: f64,
    /// The ray's direction in the world.
    dx: f64,
    /// See `dx`.
    dy: f64,
    /// Its hits and faces in [`World::draw`]'s flat lists.
    faces: std::ops::Range<usize>,
    /// The last brick drawn in the column.
    brick: BrickTone,
}

/// What [`World::draw`] writes: any of colour, depth and labels.
struct Targets<'a> {
    rgb: Option<&'a mut [u8]>,
    depth_m: Option<&'a mut [f32]>,
    labels: Option<&'a mut [u8]>,
}

/// A hit of a column as slopes: which rays reach it, and its light.
#[derive(Clone, Copy, Debug)]
struct Face {
    /// Rays steeper down than this reach the floor before the hit.
    floor_slope: f64,
    /// Rays steeper up than this reach the ceiling before the hit.
    ceiling_slope: f64,
    /// Rays at least this slope (and at most `floor_slope`) end on the face; shallower
    /// ones pass over its top.
    top_slope: f64,
    /// Distance, metres.
    distance: f64,
    /// The light at its distance.
    light: f32,
}

impl Face {
    fn new(hit: &Hit, eye_height: f64) -> Face {
        let d = hit.distance;
        Face {
            floor_slope: eye_height / d,
            ceiling_slope: -(CEILING_M - eye_height) / d,
            top_slope: (eye_height - hit.top) / d,
            distance: d,
            light: 0.55 + 0.45 / (1.0 + 0.035 * d as f32),
        }
    }
}

/// What a camera ray ends on.
#[derive(Clone, Copy, Debug)]
enum Seen {
    /// Face `k` of the column, at this height, metres.
    Face(usize, f64),
    /// The floor.
    Floor,
    /// The ceiling.
    Ceiling,
}

/// [`resolve`] by comparing slopes: which face (or the floor or ceiling) a ray of `slope`
/// (height lost per metre of horizontal distance, down positive) from the camera ends on.
fn resolve_faces(faces: &[Face], slope: f64) -> Seen {
    for (k, face) in faces.iter().enumerate() {
        if slope > 1e-12 && slope > face.floor_slope {
            return Seen::Floor;
        }
        if slope < -1e-12 && slope < face.ceiling_slope {
            return Seen::Ceiling;
        }
        if slope >= face.top_slope && slope <= face.floor_slope {
            return Seen::Face(k, CAMERA_HEIGHT_M - slope * face.distance);
        }
    }
    // Past the wall (cannot happen: the wall reaches the ceiling).
    if slope > 1e-12 {
        Seen::Floor
    } else if slope < -1e-12 {
        Seen::Ceiling
    } else {
        Seen::Face(faces.len().saturating_sub(1), CAMERA_HEIGHT_M)
    }
}

/// The tone of the last brick drawn in a column, kept while the column stays on it.
#[derive(Clone, Copy, Debug, Default)]
struct BrickTone {
    /// (row, column) of the brick.
    key: Option<(i64, i64)>,
    /// Its tone, 0..1.
    tone: f32,
}

/// A xorshift64 stream: a column's pixel noise, one step per pixel.
struct Xorshift(u64);

impl Xorshift {
    /// The stream from `seed` (any value: zero is replaced).
    fn new(seed: u64) -> Xorshift {
        Xorshift(seed | 1)
    }

    /// Uniform in -1..1.
    fn symmetric(&mut self) -> f32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Which hit (or the floor or ceiling) a ray leaving `hits`' column at `slope` (height lost
/// per metre of horizontal distance, down positive) from `eye_height` ends on.
fn resolve(hits: &[Hit], slope: f64, eye_height: f64) -> Surface {
    let floor = (slope > 1e-12).then(|| eye_height / slope);
    let ceiling = (slope < -1e-12).then(|| (CEILING_M - eye_height) / -slope);
    for (k, hit) in hits.iter().enumerate() {
        if let Some(d) = floor
            && d < hit.distance
        {
            return Surface::Floor(d);
        }
        if let Some(d) = ceiling
            && d < hit.distance
        {
            return Surface::Ceiling(d);
        }
        let height = eye_height - slope * hit.distance;
        if (0.0..=hit.top).contains(&height) {
            return Surface::Face(k);
        }
    }
    // Past the wall (cannot happen: the wall reaches the ceiling).
    match (floor, ceiling) {
        (Some(d), _) => Surface::Floor(d),
        (_, Some(d)) => Surface::Ceiling(d),
        _ => Surface::Face(hits.len().saturating_sub(1)),
    }
}

/// The slab test of a ray against a block's footprint: the face it enters by.
fn ray_block(x: f64, y: f64, dx: f64, dy: f64, block: &Block) -> Option<Hit> {
    let mut t_min = f64::NEG_INFINITY;
    let mut t_max = f64::INFINITY;
    let mut x_face = true;
    for (axis, (o, d)) in [(x, dx), (y, dy)].into_iter().enumerate() {
        if d.abs() < 1e-12 {
            if o < block.min[axis] || o > block.max[axis] {
                return None;
            }
            continue;
        }
        let (a, b) = ((block.min[axis] - o) / d, (block.max[axis] - o) / d);
        let (near, far) = if a < b { (a, b) } else { (b, a) };
        if near > t_min {
            t_min = near;
            x_face = axis == 0;
        }
        t_max = t_max.min(far);
    }
    if t_min > t_max || t_min <= 0.0 {
        return None;
    }
    let along = if x_face {
        y + dy * t_min
    } else {
        x + dx * t_min
    };
    Some(Hit {
        distance: t_min,
        top: block.height,
        along,
        x_face,
        color: block.color,
        label: block.label,
    })
}

/// splitmix64's finalizer: a good 64-bit mix.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A tiny deterministic generator (splitmix64).
#[derive(Clone, Debug)]
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in 0..1.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in -1..1.
    pub(crate) fn symmetric(&mut self) -> f64 {
        self.unit() * 2.0 - 1.0
    }
}

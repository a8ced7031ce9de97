//! The demo blueprint and its modules, including the built-in test-pattern source that
//! lets the demo run with no data and no camera.

use streamwire::msgs::{DepthImage, Image, ImageEncoding, LayoutError};
use streamwire::prelude::*;

/// A synthetic RGB-D camera: the built-in source of the demo.
#[derive(Module)]
pub struct TestPatternCamera {
    /// Colour frames; the wire may compress them (JPEG by default).
    pub color_image: Out<Compressed<Image>>,
    /// Depth frames in millimetres; compressed losslessly (zstd) when compressed.
    pub depth: Out<Compressed<DepthImage>>,
    /// What to draw.
    #[config]
    pub pattern: TestPattern,
    /// Frames per second.
    #[config]
    pub fps: f64,
}

/// Finds objects in colour frames: wants pixels, the newest frame only (`Image` is sensor
/// data: best effort, keep the last 1).
#[derive(Module)]
pub struct ObjectDetector {
    /// Colour frames.
    #[port(name = "color_image")]
    pub frames: In<Image>,
}

/// Shows colour frames to an operator.
#[derive(Module)]
pub struct Viewer {
    /// Colour frames.
    #[port(name = "color_image")]
    pub frames: In<Image>,
}

/// Relays the JPEG bytes to browsers as they are (no decode, no re-encode).
#[derive(Module)]
pub struct WebRelay {
    /// The encoded colour stream, under its ROS name.
    #[port(name = "color_image/compressed")]
    pub jpeg: In<Compressed<Image>>,
}

/// Builds a map from depth, which must stay exact.
#[derive(Module)]
pub struct Mapper {
    /// Depth frames, never lossy.
    #[port(lossless)]
    pub depth: In<DepthImage>,
    /// Odometry, when a robot base publishes it.
    #[port(optional)]
    pub odometry: In<Odometry>,
}

// --- What each module does when the blueprint runs ------------------------------------

impl Node for TestPatternCamera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let seq = cx.counter("frames").get();
        let stamp = cx.now();
        self.color_image
            .publish(self.pattern.color_frame(seq)?.with_stamp(stamp))?;
        self.depth
            .publish(self.pattern.depth_frame(seq)?.with_stamp(stamp))?;
        cx.counter("frames").increment();
        Ok(())
    }
}

impl Node for ObjectDetector {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        // Real image work, if simple: find the test pattern's white square.
        while let Some(frame) = self.frames.recv()? {
            let image = &frame.message;
            let bright = image
                .data()
                .chunks_exact(3)
                .filter(|px| px.iter().all(|&v| v > 200))
                .count();
            if bright > 0 {
                cx.counter("detections").increment();
            }
        }
        Ok(())
    }
}

impl Node for Viewer {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while self.frames.recv()?.is_some() {
            cx.counter("shown").increment();
        }
        Ok(())
    }
}

impl Node for WebRelay {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        // The bytes the camera's process encoded: forwarded as they are, no decode.
        while let Some(jpeg) = self.jpeg.recv()? {
            cx.counter("jpeg_bytes")
                .add(jpeg.message.data().len() as u64);
        }
        Ok(())
    }
}

impl Node for Mapper {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(depth) = self.depth.recv()? {
            let near = (0..depth.message.height())
                .filter_map(|y| depth.message.depth_mm(depth.message.width() / 2, y))
                .filter(|&mm| mm < 2000)
                .count();
            cx.counter("near_rows").add(near as u64);
        }
        let _pose = self.odometry.latest()?;
        Ok(())
    }
}

/// Where the demo's instances run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Everything in one process: zero-copy, no codec.
    OneProcess,
    /// Camera and detector on the robot (two processes), viewer and web relay on a
    /// laptop, mapper on a base station.
    Robot,
}

/// The demo's knobs.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Placement.
    pub layout: Layout,
    /// Global compression.
    pub compression: Compression,
    /// JPEG quality of the colour stream (1..=100).
    pub jpeg_quality: Option<u8>,
    /// Downscale colour frames wider than this on compressed links.
    pub max_width: Option<u32>,
    /// What to do about inputs that get lossy pixels.
    pub lossy_pixels: Report,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            layout: Layout::Robot,
            compression: Compression::Auto,
            jpeg_quality: None,
            max_width: None,
            lossy_pixels: Report::Warn,
        }
    }
}

/// The demo blueprint.
pub fn demo_blueprint(options: &DemoOptions) -> Blueprint {
    let mut bp = Blueprint::new();
    let camera = bp.add(
        "camera",
        TestPatternCamera {
            color_image: Out::new(),
            depth: Out::new(),
            pattern: TestPattern::HD,
            fps: 20.0,
        },
    );
    let detector = bp.add("detector", ObjectDetector { frames: In::new() });
    let viewer = bp.add("viewer", Viewer { frames: In::new() });
    let web = bp.add("web", WebRelay { jpeg: In::new() });
    let mapper = bp.add(
        "mapper",
        Mapper {
            depth: In::new(),
            odometry: In::new(),
        },
    );
    if options.layout == Layout::Robot {
        bp.place(&camera, Placement::process("camera").on_host("robot"))
            .place(&detector, Placement::process("perception").on_host("robot"))
            .place(&viewer, Placement::process("ui").on_host("laptop"))
            .place(&web, Placement::process("ui").on_host("laptop"))
            .place(
                &mapper,
                Placement::process("mapping").on_host("base_station"),
            );
    }
    let mut color = StreamSettings::new();
    if let Some(quality) = options.jpeg_quality {
        color = color.param("jpeg_quality", quality);
    }
    if let Some(width) = options.max_width {
        color = color.param("max_width", width);
    }
    if options.jpeg_quality.is_some() || options.max_width.is_some() {
        bp.stream("color_image", color);
    }
    bp.compression(options.compression)
        .lossy_pixels(options.lossy_pixels)
        .autoconnect();
    bp
}

/// A deterministic moving test pattern: colour bars, a gradient and a square that moves
/// one step per frame, plus a depth image of a tilted floor with a box on it. Enough
/// structure for a JPEG encoder to work realistically, no data files needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TestPattern {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl TestPattern {
    /// 1280x720, the resolution of the figures in the README.
    pub const HD: TestPattern = TestPattern {
        width: 1280,
        height: 720,
    };

    /// Colour frame number `seq` (rgb8).
    ///
    /// ```
    /// # use streamwire_demo::TestPattern;
    /// let frame = TestPattern { width: 64, height: 48 }.color_frame(3)?;
    /// assert_eq!((frame.width(), frame.height()), (64, 48));
    /// # Ok::<(), streamwire::msgs::LayoutError>(())
    /// ```
    pub fn color_frame(&self, seq: u64) -> Result<Image, LayoutError> {
        let (w, h) = (self.width as usize, self.height as usize);
        let side = (w.min(h) / 4).max(1);
        let travel = w.saturating_sub(side).max(1);
        let square_x = (seq as usize * 8) % travel;
        let square_y = h.saturating_sub(side) / 2;
        let mut data = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                let pixel = if (square_x..square_x + side).contains(&x)
                    && (square_y..square_y + side).contains(&y)
                {
                    [240, 240, 240]
                } else if y < h / 3 {
                    // Eight colour bars.
                    let bar = (x * 8 / w.max(1)) as u8;
                    [
                        if bar & 1 != 0 { 200 } else { 30 },
                        if bar & 2 != 0 { 200 } else { 30 },
                        if bar & 4 != 0 { 200 } else { 30 },
                    ]
                } else {
                    // A diagonal gradient that scrolls with time.
                    let v = ((x + y + seq as usize * 4) % 256) as u8;
                    [v, v / 2, 255 - v]
                };
                data.extend_from_slice(&pixel);
            }
        }
        Image::from_packed(self.width, self.height, ImageEncoding::Rgb8, data)
    }

    /// Depth frame number `seq` (16UC1, millimetres): a floor receding from 0.5 m to 4 m
    /// with a box 1.5 m away that moves with the colour square; 0 (no return) on the top
    /// rows, as a real sensor sees the sky.
    pub fn depth_frame(&self, seq: u64) -> Result<DepthImage, LayoutError> {
        let (w, h) = (self.width as usize, self.height as usize);
        let side = (w.min(h) / 4).max(1);
        let travel = w.saturating_sub(side).max(1);
        let box_x = (seq as usize * 8) % travel;
        let mut depth = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let mm = if y < h / 10 {
                    0
                } else if (box_x..box_x + side).contains(&x) && y > h / 2 {
                    1500
                } else {
                    // Far at the top, near at the bottom.
                    (4000 - (3500 * y / h.max(1))) as u16
                };
                depth.push(mm);
            }
        }
        DepthImage::from_mm(self.width, self.height, &depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_asked_size_and_move() {
        let pattern = TestPattern {
            width: 97,
            height: 55,
        };
        let a = pattern.color_frame(0).unwrap();
        let b = pattern.color_frame(1).unwrap();
        assert_eq!(
            (a.width(), a.height(), a.encoding()),
            (97, 55, ImageEncoding::Rgb8)
        );
        assert_ne!(a.data(), b.data(), "consecutive frames differ");
        assert_eq!(
            a.data(),
            pattern.color_frame(0).unwrap().data(),
            "deterministic"
        );
        let depth = pattern.depth_frame(0).unwrap();
        assert_eq!(depth.depth_mm(0, 0), None, "no return at the top");
        assert!(
            depth
                .depth_mm(0, 54)
                .is_some_and(|mm| (500..=4000).contains(&mm))
        );
    }

    #[test]
    fn tiny_patterns_do_not_panic() {
        let pattern = TestPattern {
            width: 1,
            height: 1,
        };
        assert!(pattern.color_frame(u64::MAX / 16).is_ok());
        assert!(pattern.depth_frame(7).is_ok());
    }

    #[test]
    fn both_layouts_build() {
        for layout in [Layout::OneProcess, Layout::Robot] {
            let options = DemoOptions {
                layout,
                ..DemoOptions::default()
            };
            let plan = demo_blueprint(&options).build().unwrap();
            plan.verify().unwrap();
        }
    }
}

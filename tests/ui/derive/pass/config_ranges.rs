// The forms of declared ranges and the cross-field check, and what they refuse.
use streamwire::prelude::*;

/// A camera: its frame within a memory budget.
#[derive(Module)]
#[module(validate = Camera::check_frame)]
pub struct Camera {
    pub color_image: Out<Image>,
    #[config(range = 1..=16384)]
    pub width: u32,
    #[config(range = 1..=16384, default = 720)]
    pub height: u32,
    #[config(finite, range = 0.01..=1000.0)]
    pub fps: f64,
    #[config(finite, min = 0.0)]
    pub exposure_ms: f64,
    #[config(max = 100)]
    pub gain: i32,
    #[config(finite)]
    pub offset: f32,
    #[config(range = 0..10)]
    pub lane: u8,
    #[config(range = -5.0..)]
    pub bias: f64,
    #[config(min = 1)]
    pub limit: Option<u64>,
    #[config(finite, range = 0.5..=2.0)]
    pub rate: Option<f64>,
    #[config]
    pub seed: u64,
}

impl Camera {
    fn check_frame(&self) -> Result<(), String> {
        let bytes = u64::from(self.width) * u64::from(self.height) * 3;
        if bytes > 64 << 20 {
            return Err(format!("a frame of {bytes} bytes is over 64 MiB"));
        }
        Ok(())
    }
}

fn camera() -> Camera {
    Camera {
        color_image: Out::new(),
        width: 1280,
        height: 720,
        fps: 20.0,
        exposure_ms: 5.0,
        gain: -3,
        offset: 0.5,
        lane: 9,
        bias: -5.0,
        limit: None,
        rate: Some(1.0),
        seed: 7,
    }
}

fn main() {
    let accepts: Vec<(&str, &str)> = Camera::CONFIG_RANGES
        .iter()
        .map(|r| (r.field, r.accepts))
        .collect();
    assert_eq!(
        accepts,
        [
            ("width", "1..=16384"),
            ("height", "1..=16384"),
            ("fps", "finite, 0.01..=1000.0"),
            ("exposure_ms", "finite, >= 0.0"),
            ("gain", "<= 100"),
            ("offset", "finite"),
            ("lane", "0..10"),
            ("bias", ">= -5.0"),
            ("limit", ">= 1"),
            ("rate", "finite, 0.5..=2.0"),
        ]
    );
    assert_eq!(camera().check_config(), []);

    let mut bad = camera();
    bad.width = 0;
    bad.fps = f64::NAN;
    bad.lane = 10;
    bad.limit = Some(0);
    bad.offset = f32::INFINITY;
    let problems: Vec<String> = bad.check_config().iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            "`width` = 0 is out of range: it accepts 1..=16384",
            "`fps` = NaN is out of range: it accepts finite, 0.01..=1000.0",
            "`offset` = inf is out of range: it accepts finite",
            "`lane` = 10 is out of range: it accepts 0..10",
            "`limit` = 0 is out of range: it accepts >= 1",
        ]
    );

    // Every field in range, but the frame over the budget: the module's own check says so.
    let mut big = camera();
    big.width = 16384;
    big.height = 16384;
    let problems: Vec<String> = big.check_config().iter().map(ToString::to_string).collect();
    assert_eq!(problems, ["a frame of 805306368 bytes is over 64 MiB"]);

    // The registry shows the ranges too (what `config` prints).
    let registration = streamwire::registration("Camera").unwrap();
    assert_eq!(registration.accepts("fps"), Some("finite, 0.01..=1000.0"));
    assert_eq!(registration.accepts("seed"), None);
}

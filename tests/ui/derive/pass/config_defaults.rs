// The forms of `#[config(..)]` and `#[state(..)]` defaults, and what a file gets from them.
use streamwire::prelude::*;

/// Without `impl Default`: each field a file may leave out declares its default.
#[derive(Module)]
pub struct Monitor {
    pub level: In<Image>,
    /// Required in a file: no default anywhere.
    #[config]
    pub low: f64,
    #[config(default = 3)]
    pub panic_after: u32,
    #[config(default)]
    pub label: String,
    #[config(default = Some(2))]
    pub window: Option<u32>,
    #[state(default = 1)]
    pub readings: u64,
    #[state()]
    pub lows: u64,
}

/// With `impl Default`: a file leaves out any field, and starts from `default()`.
#[derive(Module)]
pub struct Battery {
    pub level: Out<Image>,
    #[config]
    pub drain: f64,
    #[state]
    pub percentage: f64,
}

impl Default for Battery {
    fn default() -> Self {
        Battery {
            level: Out::new(),
            drain: 1.0,
            percentage: 100.0,
        }
    }
}

fn main() {
    let monitor = streamwire::registered_modules()
        .into_iter()
        .find(|r| r.tag == "Monitor")
        .unwrap();
    assert_eq!(monitor.required_fields(), ["low"]);
    let battery = streamwire::registered_modules()
        .into_iter()
        .find(|r| r.tag == "Battery")
        .unwrap();
    assert!(battery.required_fields().is_empty());
}

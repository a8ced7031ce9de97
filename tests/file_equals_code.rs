//! A blueprint file builds the module values a code blueprint builds from the same
//! settings: `#[state]` from the module's `Default` (or a declared initialiser), `#[config]`
//! fields left out of the file from the module's `Default` or their declared default. The
//! same modules then publish the same values.

use std::path::Path;

use serde::{Deserialize, Serialize};
use streamwire::prelude::*;
use streamwire::{BlueprintFile, FileFormat};

/// A battery level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "tests/Level")]
pub struct Level {
    /// Charge left, 0-100.
    pub percentage: f64,
}

/// A battery that drains by `drain` percent a step, from a full charge.
#[derive(Module)]
pub struct Battery {
    /// The level after each step.
    pub level: Out<Level>,
    /// Percent lost per step.
    #[config]
    pub drain: f64,
    /// Its name.
    #[config]
    pub name: String,
    /// The charge: 100 from `Default`, where its type's default would be 0.
    #[state]
    pub percentage: f64,
}

impl Default for Battery {
    fn default() -> Self {
        Battery {
            level: Out::new(),
            drain: 1.0,
            name: "main".to_owned(),
            percentage: 100.0,
        }
    }
}

impl Node for Battery {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.percentage -= self.drain;
        self.level.publish(Level {
            percentage: self.percentage,
        })?;
        Ok(())
    }
}

/// Counts low readings; no `Default`, so its defaults are declared per field.
#[derive(Module)]
pub struct Monitor {
    /// The battery's level.
    pub level: In<Level>,
    /// Below this is low (required in a file).
    #[config]
    pub low: f64,
    /// Give up after this many low readings.
    #[config(default = 3)]
    pub panic_after: u32,
    /// A label (the type's `Default`: empty).
    #[config(default)]
    pub label: String,
    /// The lowest level seen.
    #[state(default = f64::INFINITY)]
    pub lowest: f64,
    /// Low readings so far (its type's `Default`: the module has none).
    #[state]
    pub lows: u64,
}

impl Node for Monitor {
    fn trigger(&self) -> Trigger {
        Trigger::AnyInput
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        while let Some(level) = self.level.recv()? {
            self.lowest = self.lowest.min(level.message.percentage);
            if level.message.percentage < self.low {
                self.lows += 1;
            }
        }
        Ok(())
    }
}

const YAML: &str = "\
instances:
  battery: { type: Battery, drain: 2.0 }
  monitor: { type: Monitor, low: 95.0 }
";

fn code_battery() -> Battery {
    Battery {
        drain: 2.0,
        ..Battery::default()
    }
}

fn code_monitor() -> Monitor {
    Monitor {
        level: In::new(),
        low: 95.0,
        panic_after: 3,
        label: String::new(),
        lowest: f64::INFINITY,
        lows: 0,
    }
}

fn code_blueprint() -> Blueprint {
    let mut blueprint = Blueprint::new();
    blueprint.add("battery", code_battery());
    blueprint.add("monitor", code_monitor());
    blueprint.autoconnect();
    blueprint
}

/// The file's instance `name`, taken out as an `M`.
fn from_file<M: Module>(file: &mut BlueprintFile, name: &str, placeholder: M) -> M {
    let (_, module) = file
        .instances
        .0
        .iter_mut()
        .find(|(n, _)| n == name)
        .expect("instance in the file");
    let module = module
        .as_any_mut()
        .downcast_mut::<M>()
        .expect("the module type");
    std::mem::replace(module, placeholder)
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn file() -> BlueprintFile {
    BlueprintFile::parse(YAML, FileFormat::Yaml, Path::new("robot.yaml")).unwrap()
}

#[test]
fn a_file_builds_the_module_values_code_builds() {
    let mut file = file();
    let battery = from_file(&mut file, "battery", code_battery());
    let code = code_battery();
    assert_eq!(
        (battery.drain, &battery.name, battery.percentage),
        (code.drain, &code.name, code.percentage)
    );
    assert_eq!(battery.percentage, 100.0);

    let monitor = from_file(&mut file, "monitor", code_monitor());
    let code = code_monitor();
    assert_eq!(
        (monitor.low, monitor.panic_after, &monitor.label),
        (code.low, code.panic_after, &code.label)
    );
    assert_eq!((monitor.lowest, monitor.lows), (code.lowest, code.lows));
}

#[test]
fn a_file_plans_what_code_plans() {
    let from_file = file().into_blueprint().build().unwrap();
    let from_code = code_blueprint().build().unwrap();
    assert_eq!(from_file.to_string(), from_code.to_string());
}

/// The levels `battery` publishes in `steps` steps, and what `monitor` makes of them.
#[expect(clippy::unwrap_used, reason = "test helper")]
fn run(battery: Battery, monitor: Monitor, steps: usize) -> (Vec<Level>, f64, u64) {
    let mut source = Harness::new(battery);
    for _ in 0..steps {
        source.step().unwrap();
    }
    let levels: Vec<Level> = source
        .take(source.ports().level)
        .into_iter()
        .map(|d| d.message)
        .collect();
    let mut sink = Harness::new(monitor);
    for level in &levels {
        sink.feed(sink.ports().level, level.clone()).unwrap();
    }
    sink.run_until_idle().unwrap();
    (levels, sink.module().lowest, sink.module().lows)
}

#[test]
fn a_file_and_code_publish_the_same_values() {
    let mut file = file();
    let from_file = run(
        from_file(&mut file, "battery", code_battery()),
        from_file(&mut file, "monitor", code_monitor()),
        5,
    );
    let from_code = run(code_battery(), code_monitor(), 5);
    assert_eq!(from_file, from_code);
    let percentages: Vec<f64> = from_file.0.iter().map(|l| l.percentage).collect();
    assert_eq!(percentages, [98.0, 96.0, 94.0, 92.0, 90.0]);
    assert_eq!((from_file.1, from_file.2), (90.0, 3));
}

// The intended forms of `#[derive(Module)]`.
use streamwire::prelude::*;
use streamwire::{Direction, Durability, History, MessageKind, QosOverrides, Reliability};

/// A filter: an input and an output may share a stream name.
#[derive(Module)]
#[module(name = "Throttle")]
pub struct ThrottleFilter {
    /// Images in.
    #[port(name = "image", best_effort, depth = 1)]
    pub input: In<Image>,
    /// Fewer images out.
    #[port(name = "image")]
    pub output: Out<Image>,
    /// Odometry, if anyone sends it.
    #[port(optional, keep_all, transient_local)]
    pub odometry: In<Odometry>,
    /// Exact depth only.
    #[port(lossless, reliable, volatile)]
    pub depth: In<DepthImage>,
    /// Output rate.
    #[config]
    pub max_hz: f64,
    #[config]
    pub label: String,
}

// A private module in a nested module, with a fully qualified port type.
mod inner {
    #[derive(streamwire::Module)]
    pub(crate) struct Probe {
        pub(crate) frames: streamwire::In<streamwire::msgs::Image>,
    }
}

// `#[module(crate = ..)]` for crates below the facade.
#[derive(Module)]
#[module(crate = streamwire)]
pub struct Beacon {
    pub odometry: Out<Odometry>,
}

// An empty module is allowed (e.g. a heartbeat that only has config).
#[derive(Module)]
pub struct Heartbeat {
    #[config]
    pub period_ms: u64,
}

fn main() {
    let ports = ThrottleFilter::PORTS;
    assert_eq!(ThrottleFilter::TYPE_NAME, "Throttle");
    assert_eq!(ports[0].stream(), "image");
    assert_eq!(ports[1].stream(), "image");
    assert_eq!(ports[0].direction(), Direction::Input);
    assert_eq!(ports[1].direction(), Direction::Output);
    // What the attributes set, and nothing else: the rest comes from the message's kind.
    assert_eq!(ports[0].attrs().qos.reliability, Some(Reliability::BestEffort));
    assert_eq!(ports[0].attrs().qos.history, Some(History::KeepLast(1)));
    assert_eq!(ports[1].attrs().qos, QosOverrides::NONE);
    // `Image` is sensor data: best effort, keep the last 1, unless the port says otherwise.
    assert_eq!(ports[1].qos(), MessageKind::Sensor.default_qos());
    assert!(ports[2].attrs().optional);
    assert_eq!(ports[2].attrs().qos.history, Some(History::KeepAll));
    // `Odometry` is state: reliable by default; the port made it transient-local.
    assert_eq!(ports[2].qos().reliability, Reliability::Reliable);
    assert_eq!(ports[2].qos().durability, Durability::TransientLocal);
    assert!(ports[3].attrs().lossless);
    assert_eq!(ports[3].qos().reliability, Reliability::Reliable);
    assert_eq!(ports[3].qos().history, History::KeepLast(1));
    assert_eq!(ports[0].type_name(), "In<Image>");
    assert_eq!(ThrottleFilter::CONFIG_FIELDS, ["max_hz", "label"]);
    assert_eq!(inner::Probe::PORTS[0].type_name(), "streamwire::In<streamwire::msgs::Image>");
    assert_eq!(Beacon::PORTS.len(), 1);
    assert!(Heartbeat::PORTS.is_empty());
    let _ = Heartbeat { period_ms: 100 }.period_ms;
    let _ = ThrottleFilter { input: In::new(), output: Out::new(), odometry: In::new(), depth: In::new(), max_hz: 5.0, label: String::new() };
}

// `#[message(kind = ..)]` decides the default QoS of the ports that carry a message.
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;
use streamwire::{History, MessageKind, Reliability};

/// A laser scan: sensor data.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan", kind = sensor)]
pub struct Scan {
    pub ranges: Vec<f32>,
}

/// A goal: state, said explicitly.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Goal", kind = state)]
pub struct Goal {
    pub x: f64,
}

/// A mode: state, by default.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Mode")]
pub struct Mode(pub u8);

#[derive(Module)]
pub struct Planner {
    pub scan: In<Scan>,
    pub goal: In<Goal>,
    pub mode: In<Mode>,
}

fn main() {
    assert_eq!(Scan::KIND, MessageKind::Sensor);
    assert_eq!(Goal::KIND, MessageKind::State);
    assert_eq!(Mode::KIND, MessageKind::State);
    assert_eq!(Image::KIND, MessageKind::Sensor);
    assert_eq!(Odometry::KIND, MessageKind::State);
    let ports = Planner::PORTS;
    assert_eq!(ports[0].qos().reliability, Reliability::BestEffort);
    assert_eq!(ports[0].qos().history, History::KeepLast(1));
    assert_eq!(ports[1].qos().reliability, Reliability::Reliable);
    assert_eq!(ports[2].qos().history, History::KeepLast(10));
}

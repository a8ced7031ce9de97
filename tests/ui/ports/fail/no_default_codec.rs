// `Compressed<M>` needs a default codec for `M`; this user message has none.
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan")]
pub struct Scan {
    pub ranges: Vec<f32>,
}

#[derive(Module)]
pub struct Lidar {
    pub scan: Out<Compressed<Scan>>,
}

fn main() {}

// A message kind is `sensor` or `state`.
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Scan", kind = sensr)]
pub struct Scan {
    pub ranges: Vec<f32>,
}

fn main() {}

// A message needs one stable, well-formed name: no generics, no spaces.
use serde::{Deserialize, Serialize};
use streamwire::prelude::*;

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
pub struct Wrapper<T> {
    pub value: T,
}

#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/motor temperature", nmae = "x")]
pub struct MotorTemperature {
    pub celsius: f32,
}

fn main() {}

// A port carries a message type; `u32` is not one.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Counter {
    pub count: Out<u32>,
}

fn main() {}

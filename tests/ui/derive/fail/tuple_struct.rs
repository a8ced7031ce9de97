// Ports are named after their fields: a tuple struct has none.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera(pub Out<Image>);

fn main() {}

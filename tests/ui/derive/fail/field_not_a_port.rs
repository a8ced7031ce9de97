// Every field is a port unless marked `#[config]`.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
    pub fps: u32,
}

fn main() {}

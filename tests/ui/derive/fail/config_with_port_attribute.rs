// A configuration field is not a port.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
    #[config]
    #[port(name = "fps")]
    pub fps: u32,
}

fn main() {}

// A module is a struct of ports.
use streamwire::prelude::*;

#[derive(Module)]
pub enum Camera {
    Color { color_image: Out<Image> },
    Depth { depth: Out<DepthImage> },
}

fn main() {}

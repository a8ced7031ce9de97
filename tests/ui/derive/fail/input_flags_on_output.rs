// `optional` and `lossless` are properties of inputs.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    #[port(optional)]
    pub color_image: Out<Image>,
    #[port(lossless)]
    pub depth: Out<DepthImage>,
}

fn main() {}

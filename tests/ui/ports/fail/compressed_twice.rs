// `Compressed` wraps a message, not another `Compressed`.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Compressed<Compressed<Image>>>,
}

fn main() {}

// Two inputs of one module cannot share a stream name: a field name and a `name` collide.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Fusion {
    pub color_image: In<Image>,
    #[port(name = "color_image")]
    pub second: In<Image>,
}

fn main() {}

// A connection ends at an input.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    let front = blueprint.add("front", Camera { color_image: Out::new() });
    let rear = blueprint.add("rear", Camera { color_image: Out::new() });
    blueprint.connect(front.color_image, rear.color_image);
}

// Only modules can be added to a blueprint.
use streamwire::prelude::*;

pub struct Camera {
    pub color_image: Out<Image>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    blueprint.add("camera", Camera { color_image: Out::new() });
}

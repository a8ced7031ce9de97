// An output of one message type cannot feed an input of another.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
}

#[derive(Module)]
pub struct Mapper {
    pub points: In<PointCloud>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    let camera = blueprint.add("camera", Camera { color_image: Out::new() });
    let mapper = blueprint.add("mapper", Mapper { points: In::new() });
    blueprint.connect(camera.color_image, mapper.points);
}

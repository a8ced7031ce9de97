// Compression may differ between two ends, the message may not: depth bytes are not image bytes.
use streamwire::prelude::*;

#[derive(Module)]
pub struct DepthCamera {
    pub depth: Out<Compressed<DepthImage>>,
}

#[derive(Module)]
pub struct WebRelay {
    pub jpeg: In<Compressed<Image>>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    let camera = blueprint.add("camera", DepthCamera { depth: Out::new() });
    let relay = blueprint.add("relay", WebRelay { jpeg: In::new() });
    blueprint.connect(camera.depth, relay.jpeg);
}

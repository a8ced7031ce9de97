// A connection starts at an output.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Viewer {
    pub frames: In<Image>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    let left = blueprint.add("left", Viewer { frames: In::new() });
    let right = blueprint.add("right", Viewer { frames: In::new() });
    blueprint.connect(left.frames, right.frames);
}

// A module's `#[config]` fields are what a blueprint file holds: their types need
// `Serialize` and `Deserialize`: one error per serde trait, each saying what to derive.
use streamwire::prelude::*;

#[derive(Clone, Debug)]
pub struct Lens {
    pub focal: f32,
}

#[derive(Module)]
pub struct Projector {
    pub frames: Out<Image>,
    #[config]
    pub lens: Lens,
}

fn main() {}

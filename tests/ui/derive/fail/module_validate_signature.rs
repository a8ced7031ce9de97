// `#[module(validate = f)]` with a function of another signature: reported on the path,
// against `fn(&Self) -> Result<(), String>`.
use streamwire::prelude::*;

#[derive(Module)]
#[module(validate = check)]
pub struct Camera {
    pub color_image: Out<Image>,
    #[config(range = 1..=16384)]
    pub width: u32,
}

fn check(camera: &Camera) -> bool {
    camera.width > 0
}

fn main() {}

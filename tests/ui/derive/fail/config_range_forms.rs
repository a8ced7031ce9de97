// Range keys written in a form that is not one: a bound that is not a number literal, a
// `range` that is not a range, `..` alone, `finite = true`, a range on a `#[state]`.
use streamwire::prelude::*;

const MAX_WIDTH: u32 = 16384;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
    #[config(range = 1..=MAX_WIDTH)]
    pub width: u32,
    #[config(range = 720)]
    pub height: u32,
    #[config(range = ..)]
    pub seed: u64,
    #[config(finite = true)]
    pub fps: f64,
    #[state(range = 0..=10)]
    pub frames: u64,
}

fn main() {}

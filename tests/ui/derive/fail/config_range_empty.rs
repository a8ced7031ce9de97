// Ranges that accept nothing: `min` above `max`, an end below its start, an exclusive end
// equal to its start; each reported on the end.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
    #[config(min = 640, max = 320)]
    pub width: u32,
    #[config(range = 16384..=1)]
    pub height: u32,
    #[config(finite, range = 5.0..5.0)]
    pub fps: f64,
}

fn main() {}

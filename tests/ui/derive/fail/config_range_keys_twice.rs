// Range keys given twice, and `range` with `min`/`max`: all reported in one compile.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Mapper {
    pub map: Out<Image>,
    #[config(range = 1..=10, range = 2..=20)]
    pub ray_every: u32,
    #[config(min = 0.0, min = 0.1)]
    pub resolution_m: f64,
    #[config(finite, finite)]
    pub size_m: f64,
    #[config(range = 0.0..=10.0, max = 5.0)]
    pub camera_height_m: f64,
}

fn main() {}

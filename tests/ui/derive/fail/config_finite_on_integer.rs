// `finite` on an integer setting: an integer is always finite; reported on `finite`.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Lidar {
    pub cloud: Out<PointCloud>,
    #[config(finite, range = 1..=1024)]
    pub beams: u32,
}

fn main() {}

// Two outputs of one module cannot share a stream name.
use streamwire::prelude::*;

#[derive(Module)]
pub struct StereoCamera {
    #[port(name = "image")]
    pub left: Out<Image>,
    #[port(name = "image")]
    pub right: Out<Image>,
}

fn main() {}

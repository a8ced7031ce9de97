// JPEG carries 8-bit colour: asking it to carry 16-bit depth does not compile.
use streamwire::msgs::{DepthImage, Jpeg};
use streamwire::prelude::*;

#[derive(Module)]
pub struct DepthCamera {
    pub depth: Out<Compressed<DepthImage, Jpeg>>,
}

fn main() {}

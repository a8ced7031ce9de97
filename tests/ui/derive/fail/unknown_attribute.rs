// A misspelt attribute is an error with a suggestion, not silently ignored.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Viewer {
    #[port(nmae = "color_image")]
    pub frames: In<Image>,
    #[port(optinal)]
    pub overlay: In<Image>,
}

fn main() {}

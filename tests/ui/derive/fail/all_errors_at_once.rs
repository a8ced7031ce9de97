// Every mistake of a module is reported in one compile, each on its own field.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Everything {
    #[port(name = "bad name")]
    pub first: Out<Image>,
    #[port(depth = 0)]
    pub second: In<Image>,
    pub third: Out<String>,
    pub fourth: f64,
    #[port(lossless)]
    pub fifth: Out<Image>,
}

fn main() {}

// A range on a setting that is not a number: reported on the range key, with what a range
// applies to.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Labeler {
    pub frames: In<Image>,
    #[config(range = 1..=16)]
    pub label: String,
    #[config(min = 0)]
    pub tags: Vec<u32>,
}

fn main() {}

// A bound of another type than its setting: a fraction for an integer, a negative bound
// for an unsigned one; reported on the bound.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Sink {
    pub frames: In<Image>,
    #[config(min = 0.5)]
    pub keep: usize,
    #[config(range = -1..=100)]
    pub check_every: u64,
}

fn main() {}

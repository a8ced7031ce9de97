// Mistakes in `#[config(..)]` and `#[state(..)]`, all reported in one compile: a misspelt
// key (with a suggestion), a value written `#[config = ..]`, `default` given twice.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Monitor {
    pub level: In<Image>,
    #[config(defualt = 3)]
    pub panic_after: u32,
    #[config = 0.2]
    pub low: f64,
    #[config(default = 1, default = 2)]
    pub window: u32,
    #[state(inital = 0)]
    pub readings: u64,
}

fn main() {}

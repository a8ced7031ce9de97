// A declared default is an expression of the field's type: the compiler says so on it.
// `#[config(default)]` asks for the type's `Default`: one without it is reported there.
use streamwire::prelude::*;

pub struct Threshold(f64);

#[derive(Module)]
pub struct Monitor {
    pub level: In<Image>,
    #[config(default = "0.2")]
    pub low: f64,
    #[state(default)]
    pub threshold: Threshold,
}

fn main() {}

// Port metadata is static: a module cannot be generic.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Relay<M: Message> {
    pub input: In<M>,
    pub output: Out<M>,
}

fn main() {}

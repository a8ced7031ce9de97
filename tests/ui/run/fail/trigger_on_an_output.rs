// A trigger names inputs: an output never "has a message".
use streamwire::prelude::*;

#[derive(Module)]
pub struct Relay {
    pub input: In<Odometry>,
    pub output: Out<Odometry>,
}

impl Node for Relay {
    fn trigger(&self) -> Trigger {
        Trigger::input(&self.output)
    }
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }
}

fn main() {}

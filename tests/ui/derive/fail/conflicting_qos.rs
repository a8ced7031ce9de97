// QoS given twice, contradicting itself; a zero-length queue.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Viewer {
    #[port(reliable, best_effort)]
    pub frames: In<Image>,
    #[port(depth = 0)]
    pub overlay: In<Image>,
    #[port(depth = 4, keep_all)]
    pub odometry: In<Odometry>,
}

fn main() {}

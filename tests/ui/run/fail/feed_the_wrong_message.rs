// The harness feeds a port what the port receives: pixels to `In<Image>`.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Viewer {
    pub frames: In<Image>,
}

impl Node for Viewer {
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }
}

fn main() {
    let mut harness = Harness::new(Viewer { frames: In::new() });
    let ports = harness.ports();
    let depth = DepthImage::from_mm(1, 1, &[1000]).unwrap();
    let _ = harness.feed(ports.frames, depth);
}

// Only an `Out<Compressed<M>>` may publish ready-made encoded bytes: a plain `Out<Image>`
// promised pixels.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Image>,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(30.0)
    }
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.color_image.publish_encoded(ready_made())?;
        Ok(())
    }
}

fn ready_made() -> CompressedImage {
    unimplemented!()
}

fn main() {}

// The shapes a module's behaviour takes, through the facade's prelude.
use std::time::Duration;

use streamwire::prelude::*;

/// A source at a rate.
#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Compressed<Image>>,
}

impl Node for Camera {
    fn trigger(&self) -> Trigger {
        Trigger::rate(30.0)
    }
    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let image = Image::from_packed(1, 1, ImageEncoding::Mono8, vec![0u8])?;
        self.color_image.publish(image)?;
        Ok(())
    }
}

/// Colour and depth paired by stamp; odometry read as the latest value.
#[derive(Module)]
pub struct Fuse {
    #[port(name = "color_image")]
    pub color: In<Image>,
    pub depth: In<DepthImage>,
    pub odometry: In<Odometry>,
    pub jpeg: In<Compressed<Image>>,
}

impl Node for Fuse {
    fn trigger(&self) -> Trigger {
        Trigger::all([(&self.color).into(), (&self.depth).into()])
    }
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let slop = Slop::Within(Duration::from_millis(5));
        while let Some((color, depth)) = pair_by_stamp(&mut self.color, &mut self.depth, slop)? {
            let _: (&Image, &DepthImage) = (&color.message, &depth.message);
        }
        let _: Option<Delivered<Odometry>> = self.odometry.latest()?;
        let _: Option<Delivered<CompressedImage>> = self.jpeg.recv()?;
        cx.counter("steps").increment();
        Ok(())
    }
}

fn main() {}

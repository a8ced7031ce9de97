// Explicit connections of every allowed kind compile and build.
use streamwire::prelude::*;

#[derive(Module)]
pub struct Camera {
    pub color_image: Out<Compressed<Image>>,
    pub raw_image: Out<Image>,
}

#[derive(Module)]
pub struct Consumers {
    pub pixels: In<Image>,
    pub bytes: In<Compressed<Image>>,
    pub more_pixels: In<Image>,
    pub more_bytes: In<Compressed<Image, Zstd>>,
}

fn main() {
    let mut blueprint = Blueprint::new();
    let camera = blueprint.add(
        "camera",
        Camera { color_image: Out::new(), raw_image: Out::new() },
    );
    let sink = blueprint.add(
        "sink",
        Consumers { pixels: In::new(), bytes: In::new(), more_pixels: In::new(), more_bytes: In::new() },
    );
    blueprint
        .connect(camera.color_image, sink.pixels) // compressible -> pixels
        .connect(camera.color_image, sink.bytes) // compressible -> bytes
        .connect(camera.raw_image, sink.more_pixels) // raw -> pixels
        .connect(camera.raw_image, sink.more_bytes); // raw -> bytes (an encoder is inserted)
    let plan = blueprint.build().unwrap_or_else(|e| panic!("{e}"));
    plan.verify().unwrap_or_else(|v| panic!("{v:?}"));
    assert_eq!(plan.codec_nodes().count(), 2);
}

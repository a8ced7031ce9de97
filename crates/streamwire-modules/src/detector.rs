//! The detector: finds the simulated world's moving object in the pixels.

use std::sync::Arc;

use crate::prelude::*;
use streamwire_msgs::{DetectionBox, Detections};

/// Finds the red moving object of the [simulated world](crate::world) in colour frames
/// and publishes its box (or no box) for every frame it gets, stamped with the frame's
/// stamp. It looks only at pixels: a pixel is the object's when its red is at least 100
/// and 20 more than twice its green and its blue (nothing else in the world is that red, and JPEG at
/// q75 keeps it so); the box spans the rows and columns holding at least three such pixels
/// (so lone noisy pixels do not stretch it), if `min_pixels` are found.
///
/// Ports: `frames` (`In<Image>`, stream `color_image`), `detections` (`Out<Detections>`).
/// Config: `min_pixels` (default 30), `label` (default `moving_object`).
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct Detector {
    /// Colour frames.
    #[port(name = "color_image")]
    pub frames: In<Image>,
    /// One message per frame.
    pub detections: Out<Detections>,
    /// Fewest object pixels for a detection (default 30).
    #[config(range = 0..=1_000_000_000)]
    pub min_pixels: usize,
    /// The label of the boxes (default `moving_object`).
    #[config]
    pub label: String,
}

impl Default for Detector {
    fn default() -> Self {
        Detector {
            frames: In::new(),
            detections: Out::new(),
            min_pixels: 30,
            label: "moving_object".to_owned(),
        }
    }
}

/// The box of the red pixels of `image` (rgb8 or bgr8; other encodings find nothing),
/// and the share of the box they fill as its score.
pub fn find_red(image: &Image, min_pixels: usize, label: &str) -> Option<DetectionBox> {
    let (red, green, blue) = match image.encoding() {
        ImageEncoding::Rgb8 | ImageEncoding::Rgba8 => (0, 1, 2),
        ImageEncoding::Bgr8 | ImageEncoding::Bgra8 => (2, 1, 0),
        _ => return None,
    };
    let bpp = image.encoding().bytes_per_pixel() as usize;
    let (w, h) = (image.width() as usize, image.height() as usize);
    let mut columns = vec![0u32; w];
    let mut rows = vec![0u32; h];
    let mut total = 0usize;
    for (y, row) in image.rows().enumerate() {
        for (x, px) in row.chunks_exact(bpp).enumerate() {
            let (r, g, b) = (
                u32::from(px[red]),
                u32::from(px[green]),
                u32::from(px[blue]),
            );
            if r >= 100 && r >= 2 * g + 20 && r >= 2 * b + 20 {
                columns[x] += 1;
                rows[y] += 1;
                total += 1;
            }
        }
    }
    if total < min_pixels.max(1) {
        return None;
    }
    let span = |counts: &[u32]| {
        let first = counts.iter().position(|&c| c >= 3)?;
        let last = counts.iter().rposition(|&c| c >= 3)?;
        Some((first, last))
    };
    let (x0, x1) = span(&columns)?;
    let (y0, y1) = span(&rows)?;
    let (bw, bh) = ((x1 - x0 + 1) as f32, (y1 - y0 + 1) as f32);
    let score = (total as f32 / (bw * bh)).min(1.0);
    DetectionBox::new(x0 as f32, y0 as f32, bw, bh, label, score).ok()
}

impl Node for Detector {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            let image = &frame.message;
            let boxes: Vec<DetectionBox> = find_red(image, self.min_pixels, &self.label)
                .into_iter()
                .collect();
            cx.counter("frames").increment();
            cx.counter("detections").add(boxes.len() as u64);
            self.detections.publish(Detections {
                stamp: image.stamp(),
                frame_id: Arc::from(image.frame_id()),
                boxes,
            })?;
        }
        Ok(())
    }
}

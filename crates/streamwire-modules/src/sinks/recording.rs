//! The recording sink.

use std::path::PathBuf;

use crate::prelude::*;

use super::{Record, Recorder, open, stream_of};

/// Records every frame's arrival as a JSON line ([`Record`]) in `path`, and does
/// nothing else. Without a `path` it only counts (`frames`).
///
/// Ports: `frames` (`In<Image>`, stream `color_image`). Config: `path`, `stream` (the
/// stream name written in each line; default the port's stream name).
#[derive(Module, Default)]
#[module(crate = streamwire_core)]
pub struct RecordingSink {
    /// Colour frames.
    #[port(name = "color_image")]
    pub frames: In<Image>,
    /// Where to write the JSON lines (default: nowhere, count only).
    #[config]
    pub path: Option<PathBuf>,
    /// The stream name written in each line (default: the port's).
    #[config]
    pub stream: Option<String>,
    /// The open recording.
    #[state]
    pub recorder: Option<Recorder>,
}

impl Node for RecordingSink {
    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.recorder = open(&self.path)?;
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let stream = stream_of::<Self>("frames", &self.stream);
        while let Some(frame) = self.frames.recv()? {
            let arrival = cx.now();
            cx.counter("frames").increment();
            if let Some(recorder) = self.recorder.as_mut() {
                recorder.record(&Record::new(
                    cx.instance_name(),
                    &stream,
                    &frame.header,
                    arrival,
                    frame.message.stamp(),
                    frame.message.data().len(),
                ))?;
            }
        }
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.flush()?;
        }
        Ok(())
    }

    fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.flush()?;
        }
        Ok(())
    }
}

//! The byte consumer: a stand-in for a recorder of the encoded stream.

use std::collections::VecDeque;
use std::path::PathBuf;

use crate::prelude::*;
use streamwire_msgs::Jpeg;

use super::{Record, Recorder, open, stream_of};

/// Keeps the JPEG bytes it receives (the newest `keep` frames, as a recorder's write
/// buffer would) and checks that they decode: every `check_every`-th frame is decoded
/// (`decoded`), and one that fails is counted (`decode_failed`) and logged once. Nothing
/// on its input is ever decoded by the runtime: it asked for bytes.
///
/// Ports: `jpeg` (`In<Compressed<Image>>`, stream `color_image/compressed`). Counters:
/// `frames`, `bytes`, `decoded`, `decode_failed`. Config: `keep` (default 30),
/// `check_every` (default 1), `path`, `stream`.
#[derive(Module)]
#[module(crate = streamwire_core)]
pub struct ByteConsumer {
    /// The encoded colour stream.
    #[port(name = "color_image/compressed")]
    pub jpeg: In<Compressed<Image>>,
    /// Frames kept (default 30).
    #[config(range = 0..=100000)]
    pub keep: usize,
    /// Decode every this-many frames to check them (default 1; 0 never).
    #[config]
    pub check_every: u64,
    /// Where to write the JSON lines (default: nowhere).
    #[config]
    pub path: Option<PathBuf>,
    /// The stream name written in each line (default: the port's).
    #[config]
    pub stream: Option<String>,
    /// The newest frames' bytes.
    #[state]
    pub kept: VecDeque<CompressedImage>,
    /// The open recording.
    #[state]
    pub recorder: Option<Recorder>,
    /// Whether a decode failure was logged already.
    #[state]
    pub logged_failure: bool,
}

impl Default for ByteConsumer {
    fn default() -> Self {
        ByteConsumer {
            jpeg: In::new(),
            keep: 30,
            check_every: 1,
            path: None,
            stream: None,
            kept: VecDeque::new(),
            recorder: None,
            logged_failure: false,
        }
    }
}

impl Node for ByteConsumer {
    fn start(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        self.recorder = open(&self.path)?;
        Ok(())
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        let stream = stream_of::<Self>("jpeg", &self.stream);
        let codec = Jpeg::default();
        while let Some(frame) = self.jpeg.recv()? {
            let arrival = cx.now();
            let n = cx.counter("frames");
            n.increment();
            cx.counter("bytes").add(frame.message.data().len() as u64);
            if self.check_every > 0 && (n.get() - 1).is_multiple_of(self.check_every) {
                match Codec::<Image>::decode(&codec, &frame.message) {
                    Ok(_) => cx.counter("decoded").increment(),
                    Err(e) => {
                        cx.counter("decode_failed").increment();
                        if !self.logged_failure {
                            self.logged_failure = true;
                            tracing::warn!(
                                "{}: frame {} does not decode: {e}",
                                cx.instance_name(),
                                frame.header.seq
                            );
                        }
                    }
                }
            }
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
            self.kept.push_back(frame.message);
            while self.kept.len() > self.keep {
                self.kept.pop_front();
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

//! The relay's added latency, camera to browser, for real 720p JPEG frames: a source
//! publishes the cockatoo frames as ready-made bytes (`publish_encoded`, stamped when
//! published), the relay forwards them to headless chromium as CBOR, and the page takes
//! the arrival time of each frame minus its stamp (same machine, same clock). A
//! benchmark, not a timed test: run it with
//! `STREAMWIRE_DATA=<data folder> cargo test -p streamwire-web --test latency -- --ignored --nocapture`.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::chromium::{Chromium, chromium_present, eval};
use streamwire::msgs::{CompressedImage, Image};
use streamwire::prelude::*;
use streamwire_web::{RelayConfig, WebRelay};

/// Publishes JPEG files as they are, at `fps`, `count` frames, then finishes.
#[derive(Module)]
pub struct JpegReplay {
    /// The frames, as ready-made bytes.
    pub color_image: Out<Compressed<Image>>,
    /// The JPEG files.
    #[config]
    pub frames: Vec<Bytes>,
    /// Frames per second.
    #[config]
    pub fps: f64,
    /// Frames to publish.
    #[config]
    pub count: usize,
    /// Set by the test once the page is subscribed.
    #[config]
    pub go: Arc<AtomicBool>,
    /// Frames published.
    #[state]
    pub seq: usize,
}

impl Node for JpegReplay {
    fn trigger(&self) -> Trigger {
        Trigger::rate(self.fps)
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if !self.go.load(Ordering::SeqCst) {
            return Ok(());
        }
        if self.seq >= self.count || self.frames.is_empty() {
            cx.finish();
            return Ok(());
        }
        let data = self.frames[self.seq % self.frames.len()].clone();
        let frame = CompressedImage::new("rgb8; jpeg compressed bgr8", data, 1280, 720)?
            .with_stamp(Timestamp::now())
            .with_frame_id("camera");
        self.color_image.publish_encoded(frame)?;
        self.seq += 1;
        Ok(())
    }
}

const PAGE: &str = r#"
window.lat = []; window.sizes = 0;
const ws = new WebSocket("ws://ADDR/?client=latency");
ws.binaryType = "arraybuffer";
ws.onopen = () => ws.send(JSON.stringify({ op: "subscribe", topic: "/color_image/compressed", compression: "cbor", queue_length: 4 }));
ws.onmessage = (e) => {
  const now = performance.timeOrigin + performance.now();
  const m = decodeCbor(e.data);
  if (m.op !== "publish") return;
  const s = m.msg.header.stamp;
  lat.push(now - (s.sec * 1000 + s.nanosec / 1e6));
  // What a viewer does next: the bytes become an image blob, no copy of the pixels.
  const blob = new Blob([m.msg.data], { type: "image/jpeg" });
  sizes += blob.size;
};
"#;

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn camera_to_browser_latency_of_720p_jpeg() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let data = streamwire_testdata::dir();
    if !data.join("cockatoo_720p/frames").is_dir() {
        streamwire_testdata::skip(format!(
            "no real data at {} (set STREAMWIRE_DATA)",
            data.display()
        ));
        return Ok(());
    }
    const COUNT: usize = 300;
    let frames: Vec<Bytes> = (0..280)
        .map(|i| {
            Bytes::from(streamwire_testdata::read(
                &streamwire_testdata::cockatoo_frame(i),
            ))
        })
        .collect();
    let mean_size = frames.iter().map(Bytes::len).sum::<usize>() / frames.len();
    // The page is a file: its origin is `null`, allowed here (the token still applies).
    let config = RelayConfig::default().with_port(0).allow_origin("null");
    let address = config.address.clone();
    let go = Arc::new(AtomicBool::new(false));
    let mut blueprint = Blueprint::new();
    blueprint.add(
        "camera",
        JpegReplay {
            color_image: Out::new(),
            frames,
            fps: 30.0,
            count: COUNT,
            go: go.clone(),
            seq: 0,
        },
    );
    blueprint.add("web", WebRelay::new(config));
    let run = blueprint.run(RunOptions::default())?;
    let addr = address
        .wait(Duration::from_secs(20))
        .ok_or_else(|| anyhow::anyhow!("the relay did not listen"))?;
    let token = address.token().unwrap_or_default();

    let viewer = include_str!("../src/viewer.html");
    let decoder = viewer
        .split("// <cbor-decoder>")
        .nth(1)
        .and_then(|rest| rest.split("// </cbor-decoder>").next())
        .ok_or_else(|| anyhow::anyhow!("the viewer's decoder"))?;
    let page = format!(
        "<!doctype html><html><body><script>//{decoder}\n{}</script></body></html>",
        PAGE.replace("ADDR/?", &format!("{addr}/?token={token}&"))
    );
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("latency.html");
    std::fs::write(&path, page)?;
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("file://{}", path.display()))?;
    tab.wait_until_navigated()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let subscribers = || {
        let (_, body) = common::http_get(addr, &format!("/stats?token={token}"));
        serde_json::from_str::<serde_json::Value>(&body).unwrap_or_default()["topics"][0]
            ["subscribers"]
            .clone()
    };
    while subscribers() != 1 {
        anyhow::ensure!(Instant::now() < deadline, "the page did not subscribe");
        std::thread::sleep(Duration::from_millis(100));
    }
    go.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = 0;
    let mut quiet_since = Instant::now();
    let lat: Vec<f64> = loop {
        let lat = eval(&tab, "JSON.stringify(window.lat)")?;
        let lat: Vec<f64> = lat
            .as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
            .unwrap_or_default();
        if lat.len() != last {
            last = lat.len();
            quiet_since = Instant::now();
        }
        if lat.len() >= COUNT || (last > 0 && quiet_since.elapsed() > Duration::from_secs(3)) {
            break lat;
        }
        anyhow::ensure!(Instant::now() < deadline, "frames did not arrive");
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut sorted = lat.clone();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    println!(
        "720p JPEG ({:.1} kB mean), 30 fps, CBOR: {} of {COUNT} frames in the page; stamp-to-page latency median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        mean_size as f64 / 1e3,
        lat.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
    );
    assert!(lat.len() * 100 >= COUNT * 95, "{} of {COUNT}", lat.len());
    drop(chromium);
    drop(run);
    Ok(())
}

//! The viewer page in a real browser: Debian's headless chromium, against the relay on
//! loopback. Skips (saying why) only where `/usr/bin/chromium` is absent.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::chromium::{Chromium, chromium_present, eval};
use common::{SyntheticCamera, start};
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use serde_json::Value;
use streamwire_web::RelayConfig;

const PAGE_STATE: &str = r#"JSON.stringify({
    connected: swViewer.connected,
    images: swViewer.imagesShown,
    clouds: swViewer.cloudsShown,
    odometry: swViewer.odomShown,
    errors: swViewer.errors,
    imageWidth: (document.querySelector('.panel img') || {}).naturalWidth || 0,
    rates: Object.fromEntries([...document.querySelectorAll('#streams tbody tr')]
        .map(r => [r.dataset.topic, parseFloat(r.querySelector('.rate').textContent) || 0])),
})"#;

#[test]
fn the_viewer_shows_live_camera_odometry_and_cloud() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(320, 240, 15.0, None),
    );
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("http://{}/", run.addr))?;
    tab.wait_until_navigated()?;

    let deadline = Instant::now() + Duration::from_secs(60);
    let state = loop {
        let state = eval(&tab, PAGE_STATE)?;
        let rate = |topic: &str| state["rates"][topic].as_f64().unwrap_or(0.0);
        let live = state["images"].as_u64().unwrap_or(0) >= 10
            && state["clouds"].as_u64().unwrap_or(0) >= 2
            && state["odometry"].as_u64().unwrap_or(0) >= 5
            && rate("/color_image") > 0.0
            && rate("/odom") > 0.0
            && rate("/cloud") > 0.0;
        if live {
            break state;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the page never went live: {state}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(state["connected"], true);
    assert_eq!(
        state["imageWidth"], 320,
        "the JPEG frames are shown: {state}"
    );
    assert_eq!(state["errors"], serde_json::json!([]), "{state}");

    // The frames keep coming (live, not one frame).
    let before = state["images"].as_u64().unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while eval(&tab, PAGE_STATE)?["images"].as_u64().unwrap_or(0) < before + 5 {
        anyhow::ensure!(Instant::now() < deadline, "frames stopped");
        std::thread::sleep(Duration::from_millis(100));
    }

    let png = tab.capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)?;
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("viewer.png");
    std::fs::write(&shot, &png)?;
    println!("screenshot: {}", shot.display());
    assert!(png.starts_with(b"\x89PNG"));
    drop(chromium);
    drop(run);
    Ok(())
}

/// A page using the real roslib (vendored by `tests/fixtures/vendor-roslib.sh`).
fn roslib_page(relay: std::net::SocketAddr) -> String {
    let roslib = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roslib/roslib.min.js");
    format!(
        r#"<!doctype html><html><body>
<script src="file://{roslib}"></script>
<script>
window.result = {{ image: 0, odom: 0, jpeg: false, dataType: null, odomRadius: null, topics: null, errors: [] }};
const ros = new ROSLIB.Ros({{ url: "ws://{relay}" }});
ros.on("error", (e) => result.errors.push(String(e && e.type || e)));
ros.on("connection", () => {{
  const image = new ROSLIB.Topic({{ ros, name: "/color_image", messageType: "sensor_msgs/CompressedImage", compression: "cbor" }});
  image.subscribe((m) => {{
    result.image++;
    result.dataType = Object.prototype.toString.call(m.data);
    result.jpeg = m.data[0] === 0xFF && m.data[1] === 0xD8 && m.data[m.data.length - 1] === 0xD9;
  }});
  const odom = new ROSLIB.Topic({{ ros, name: "/odom", messageType: "nav_msgs/Odometry" }});
  odom.subscribe((m) => {{
    result.odom++;
    const p = m.pose.pose.position;
    result.odomRadius = Math.hypot(p.x, p.y);
  }});
  ros.getTopics((t) => {{ result.topics = t.topics; }}, (e) => result.errors.push(String(e)));
}});
</script></body></html>"#,
        roslib = roslib.display(),
    )
}

#[test]
fn roslib_subscribes_with_cbor_and_json() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(320, 240, 15.0, None),
    );
    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("roslib-page.html");
    std::fs::write(&page, roslib_page(run.addr))?;
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("file://{}", page.display()))?;
    tab.wait_until_navigated()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let result = loop {
        let result = eval(&tab, "JSON.stringify(window.result || null)")?;
        if result["image"].as_u64().unwrap_or(0) >= 5
            && result["odom"].as_u64().unwrap_or(0) >= 5
            && result["topics"].is_array()
        {
            break result;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "roslib received nothing: {result}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    // CBOR: the JPEG arrives as one byte array; JSON: odometry on its circle.
    assert_eq!(result["jpeg"], true, "{result}");
    assert_eq!(result["dataType"], "[object Uint8Array]", "{result}");
    let radius = result["odomRadius"].as_f64().unwrap_or(0.0);
    assert!((radius - 2.0).abs() < 1e-6, "{result}");
    let topics: Vec<&str> = result["topics"]
        .as_array()
        .map(|t| t.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        topics.contains(&"/color_image") && topics.contains(&"/odom"),
        "{result}"
    );
    assert_eq!(result["errors"], serde_json::json!([]), "{result}");
    drop(chromium);
    drop(run);
    Ok(())
}

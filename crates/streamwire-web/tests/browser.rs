//! The viewer page in a real browser: Debian's headless chromium, against the relay on
//! loopback. Skips (saying why) only where `/usr/bin/chromium` is absent.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{SyntheticCamera, start};
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};
use serde_json::Value;
use streamwire_web::RelayConfig;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium and its profile directory: on every exit path (a failed assertion included)
/// the browser is killed and the directory removed.
struct Chromium {
    browser: Option<Browser>,
    profile: PathBuf,
}

impl Chromium {
    fn launch() -> anyhow::Result<Chromium> {
        let profile = std::env::temp_dir().join(format!(
            "streamwire-web-chromium-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&profile)?;
        let mut guard = Chromium {
            browser: None,
            profile,
        };
        // As root chromium needs the sandbox off; the background services are off so
        // that nothing tries to reach the (closed) network.
        let args: Vec<&OsStr> = [
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ]
        .iter()
        .map(OsStr::new)
        .collect();
        let options = LaunchOptions::default_builder()
            .path(Some(PathBuf::from(CHROMIUM)))
            .headless(true)
            .sandbox(false)
            .user_data_dir(Some(guard.profile.clone()))
            .window_size(Some((1400, 1000)))
            .idle_browser_timeout(Duration::from_secs(120))
            .args(args)
            .build()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        guard.browser = Some(Browser::new(options)?);
        Ok(guard)
    }

    fn tab(&self) -> anyhow::Result<std::sync::Arc<Tab>> {
        let browser = self
            .browser
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("no browser"))?;
        browser.new_tab()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        if let Some(browser) = self.browser.take() {
            let pid = browser.get_process_id();
            drop(browser); // headless_chrome kills the process it started
            if let Some(pid) = pid {
                // In case it outlived its handle: end it by its own id.
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn chromium_present() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    println!("skipped: {CHROMIUM} is absent (apt-get install chromium)");
    false
}

fn eval(tab: &Tab, js: &str) -> anyhow::Result<Value> {
    let result = tab.evaluate(js, false)?;
    let text = result
        .value
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

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

//! The viewer page in a real browser: Debian's headless chromium, against the relay on
//! loopback. Skips (saying why) only where `/usr/bin/chromium` is absent.

mod common;

use parking_lot::Mutex;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::chromium::{Chromium, chromium_present, eval};
use common::{SyntheticCamera, start};
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use serde_json::Value;
use streamwire_web::RelayConfig;

/// The page's own state: what it counted and drew, and the table's text as shown.
const PAGE_STATE: &str = r#"JSON.stringify({
    connected: swViewer.connected,
    images: swViewer.imagesShown,
    clouds: swViewer.cloudsShown,
    odometry: swViewer.odomShown,
    depth: swViewer.depthShown,
    errors: swViewer.errors,
    drawn: Object.fromEntries(Object.entries(swViewer.topics).map(([k, t]) => [k, t.drawn])),
    imageWidth: (document.querySelector('.panel img') || {}).naturalWidth || 0,
    table: Object.fromEntries([...document.querySelectorAll('#streams tbody tr')]
        .map(r => [r.dataset.topic, {
            type: r.querySelector('.type').textContent,
            rate: r.querySelector('.rate').textContent,
            latency: r.querySelector('.lat').textContent,
        }])),
})"#;

/// Two pixels of the depth panel (its canvas holds the frame at full resolution): at
/// (10, 10) the frame reads 1010 mm, at (60, 10) 6010 mm (`common::depth_mm`).
const DEPTH_PIXELS: &str = r#"JSON.stringify((() => {
    const canvas = document.querySelector('.panel[data-topic="/depth"] canvas');
    if (!canvas) return null;
    const g = canvas.getContext('2d');
    return { width: canvas.width, near: [...g.getImageData(10, 10, 1, 1).data],
             far: [...g.getImageData(60, 10, 1, 1).data] };
})())"#;

/// A number the table shows (`–` until the first second is over is not one).
fn shown_number(state: &Value, topic: &str, column: &str) -> Option<f64> {
    state["table"][topic][column]
        .as_str()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|n| n.is_finite())
}

fn count(state: &Value, key: &str) -> u64 {
    state[key].as_u64().unwrap_or(0)
}

#[test]
fn the_viewer_shows_live_camera_odometry_cloud_and_depth() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(320, 240, 15.0, None),
    );
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    // The URL the relay prints, with its token: the page passes the token on to its
    // websocket and its /stats.
    assert!(run.url.contains("/?token="), "{}", run.url);
    tab.navigate_to(&run.url)?;
    tab.wait_until_navigated()?;

    // Live: distinct camera frames on screen, every panel drawn, and the table showing
    // a rate (a number above zero, not `–` or NaN) for each stream the page draws.
    const FRAMES: u64 = 10;
    let deadline = Instant::now() + Duration::from_secs(60);
    let state = loop {
        let state = eval(&tab, PAGE_STATE)?;
        let drawn = |topic: &str| state["drawn"][topic].as_u64().unwrap_or(0);
        let rated = ["/color_image/compressed", "/odom", "/cloud", "/depth"]
            .iter()
            .all(|topic| shown_number(&state, topic, "rate").is_some_and(|r| r > 0.0));
        // The `img` reports no width while its next frame loads: a frame on screen is
        // one whose width is the camera's.
        let live = drawn("/color_image/compressed") >= FRAMES
            && state["imageWidth"] == 320
            && drawn("/cloud") >= 2
            && drawn("/odom") >= 5
            && drawn("/depth") >= 2
            && rated;
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
    assert!(count(&state, "images") >= FRAMES, "{state}");
    assert!(
        shown_number(&state, "/color_image/compressed", "latency").is_some_and(|ms| ms >= 0.0),
        "a latency is shown: {state}"
    );
    assert_eq!(state["errors"], serde_json::json!([]), "{state}");
    // The table names ROS 2 types, as rosapi gives them.
    let shown_type = |topic: &str| state["table"][topic]["type"].as_str().map(str::to_owned);
    for (topic, ros_type) in [
        ("/color_image/compressed", "sensor_msgs/msg/CompressedImage"),
        ("/odom", "nav_msgs/msg/Odometry"),
        ("/depth", "sensor_msgs/msg/Image"),
    ] {
        assert_eq!(shown_type(topic).as_deref(), Some(ros_type), "{state}");
    }

    // Depth in false colour: near is red, far is blue (the viewer's scale ends at 5 m).
    let depth = eval(&tab, DEPTH_PIXELS)?;
    assert_eq!(depth["width"], 64, "{depth}");
    let channel = |which: &str, i: usize| depth[which][i].as_u64().unwrap_or(0);
    assert!(
        channel("near", 0) > channel("near", 2) && channel("near", 0) != channel("near", 1),
        "near is red, not grey: {depth}"
    );
    assert!(
        channel("far", 2) > channel("far", 0),
        "far is blue: {depth}"
    );

    // The frames keep coming (live, not one frame).
    let before = state["drawn"]["/color_image/compressed"]
        .as_u64()
        .unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = eval(&tab, PAGE_STATE)?;
        if now["drawn"]["/color_image/compressed"]
            .as_u64()
            .unwrap_or(0)
            >= before + 5
        {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "frames stopped: {now}");
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

/// A page using the real roslib (vendored by `tests/fixtures/vendor-roslib.sh`), which
/// connects with the token in the URL as a roslib user does.
fn roslib_page(relay: std::net::SocketAddr, token: &str) -> String {
    format!(
        r#"<!doctype html><html><body>
<script src="/roslib.min.js"></script>
<script>
window.result = {{ image: 0, odom: 0, jpeg: false, dataType: null, odomRadius: null, topics: null, errors: [] }};
const ros = new ROSLIB.Ros({{ url: "ws://{relay}/?token={token}" }});
ros.on("error", (e) => result.errors.push(String(e && e.type || e)));
ros.on("connection", () => {{
  const image = new ROSLIB.Topic({{ ros, name: "/color_image/compressed", messageType: "sensor_msgs/CompressedImage", compression: "cbor" }});
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
</script></body></html>"#
    )
}

/// A web server of the test's own on another port (another origin than the relay's):
/// serves the roslib page at `/` and roslib at `/roslib.min.js` until dropped.
struct PageServer {
    origin: String,
    page: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PageServer {
    fn start() -> anyhow::Result<PageServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let origin = format!("http://{}", listener.local_addr()?);
        let page = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let roslib = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roslib/roslib.min.js"),
        )?;
        let thread = {
            let (page, stop) = (page.clone(), stop.clone());
            std::thread::Builder::new()
                .name("test page server".to_owned())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                let html = page.lock().clone();
                                let _ = serve_page(stream, &html, &roslib);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                })?
        };
        Ok(PageServer {
            origin,
            page,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers one request: `/roslib.min.js` or the page.
fn serve_page(mut stream: TcpStream, html: &str, roslib: &[u8]) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        request.extend_from_slice(&chunk[..n]);
    }
    let (body, kind) = if request.starts_with(b"GET /roslib.min.js") {
        (roslib, "text/javascript")
    } else {
        (html.as_bytes(), "text/html")
    };
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)
}

#[test]
fn roslib_subscribes_with_cbor_and_json() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    // The page comes from a server of the test's own: an origin the relay is told to allow.
    let server = PageServer::start()?;
    let run = start(
        RelayConfig::default().allow_origin(server.origin.clone()),
        SyntheticCamera::new(320, 240, 15.0, None),
    );
    let token = run.token.clone().unwrap_or_default();
    *server.page.lock() = roslib_page(run.addr, &token);
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("{}/", server.origin))?;
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
    drop(server);
    Ok(())
}

/// The same page from an origin the relay was not told about: the browser's websocket is
/// refused (403), though the page knows the token.
#[test]
fn a_page_of_another_origin_is_refused() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let server = PageServer::start()?;
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(64, 48, 10.0, None),
    );
    let token = run.token.clone().unwrap_or_default();
    *server.page.lock() = roslib_page(run.addr, &token);
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("{}/", server.origin))?;
    tab.wait_until_navigated()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::stats(&run)["totals"]["refused_origin"] != 1 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the page's websocket was not refused"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let result = eval(&tab, "JSON.stringify(window.result || null)")?;
    assert_eq!(result["image"], 0, "{result}");
    assert_eq!(common::stats(&run)["totals"]["clients"], 0);
    drop(chromium);
    drop(run);
    drop(server);
    Ok(())
}

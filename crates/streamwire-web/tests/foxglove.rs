//! The Foxglove WebSocket protocol at `/foxglove`, checked with Foxglove's own libraries
//! in Node (tests/foxglove: `@foxglove/ws-protocol`'s client over
//! `new WebSocket(url, ["foxglove.sdk.v1"])`, messages decoded by `@foxglove/rosmsg` and
//! `@foxglove/rosmsg2-serialization` over the schemas the relay advertised). Each Node test
//! skips, saying why, when Node or `npm ci` in tests/foxglove is missing, and fails
//! instead under `STREAMWIRE_REQUIRE=all`.

mod common;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use streamwire::msgs::{
    LogLevel, LogRecord, OccupancyGrid, Quaternion, TransformStamped, Transforms, Vector3,
};
use streamwire::prelude::*;
use streamwire_ros2::RosMessage;
use streamwire_web::RelayConfig;

use common::{SyntheticCamera, TestRun, depth_mm, http_get, relay_counter, start_with};

/// A battery reading: a message of the user's own, without a ROS 2 type.
#[derive(Clone, Debug, Serialize, Deserialize, Message)]
#[message(name = "acme/Battery")]
pub struct Battery {
    /// Volts.
    pub volts: f64,
}

/// `/tf` (map -> base_link), `map` (a 4x3 grid), `battery` (the user's own type) and
/// `log` (a warning each step, on `/rosout` too).
#[derive(Module)]
pub struct World {
    /// `/tf`.
    #[port(name = "tf")]
    pub transforms: Out<Transforms>,
    /// `/map`.
    pub map: Out<OccupancyGrid>,
    /// `/battery`.
    pub battery: Out<Battery>,
    /// `/log`, and `/rosout` from it.
    pub log: Out<LogRecord>,
}

/// The map's cells.
const CELLS: [i8; 12] = [0, 0, 100, -1, 0, 50, 100, -1, 0, 0, 0, 100];

impl Node for World {
    fn trigger(&self) -> Trigger {
        Trigger::rate(10.0)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        let now = Timestamp::now();
        self.transforms
            .publish(Transforms::new(vec![TransformStamped {
                stamp: now,
                parent_frame_id: "map".into(),
                child_frame_id: "base_link".into(),
                translation: Vector3::new(1.5, -2.0, 0.0),
                rotation: Quaternion::IDENTITY,
            }])?)?;
        self.map.publish(
            OccupancyGrid::new("map", 0.5, (-1.0, -1.0), 4, 3, CELLS.to_vec())?.with_stamp(now),
        )?;
        self.battery.publish(Battery { volts: 12.5 })?;
        self.log
            .publish(LogRecord::new(LogLevel::Warn, "world", "battery low").with_stamp(now))?;
        Ok(())
    }
}

/// The test blueprint (camera, depth, lidar, odometry, commands) with [`World`], its relay
/// serving Foxglove.
fn start(config: RelayConfig, camera: SyntheticCamera) -> TestRun {
    start_with(config.with_foxglove(), camera, |blueprint| {
        blueprint.add(
            "world",
            World {
                transforms: Out::new(),
                map: Out::new(),
                battery: Out::new(),
                log: Out::new(),
            },
        );
    })
}

fn foxglove_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/foxglove")
}

/// Foxglove's libraries: `STREAMWIRE_FOXGLOVE_NODE_MODULES`, by default
/// tests/foxglove/node_modules (`npm ci` there), and Node.
fn node_modules() -> Option<PathBuf> {
    let modules = std::env::var_os("STREAMWIRE_FOXGLOVE_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| foxglove_dir().join("node_modules"));
    if !modules.join("@foxglove/ws-protocol").exists() {
        streamwire_testdata::skip(format!(
            "{}/@foxglove/ws-protocol is absent (npm ci in crates/streamwire-web/tests/foxglove, or set STREAMWIRE_FOXGLOVE_NODE_MODULES)",
            modules.display()
        ));
        return None;
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        streamwire_testdata::skip("node is not on PATH");
        return None;
    }
    Some(modules)
}

/// Runs tests/foxglove/foxglove_client.js on `request`, killing it past a minute.
fn foxglove_client(modules: &PathBuf, request: Value) -> Value {
    let mut child = Command::new("node")
        .arg(foxglove_dir().join("foxglove_client.js"))
        .env("NODE_PATH", modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(request.to_string().as_bytes())
        .expect("request written");
    drop(stdin);
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("node runs").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Foxglove client ran past a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = reader.join().expect("output read");
    let answer: Value = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("node answers JSON ({e}): {}", String::from_utf8_lossy(&out)));
    assert!(answer.get("error").is_none(), "{}", answer["error"]);
    answer
}

/// Waits up to 20 s for `test`.
fn eventually(what: &str, mut test: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !test() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every stream is a channel; one message of each decodes, with Foxglove's own CDR reader
/// over the advertised schema, into the ROS 2 shape; `cmd_vel` published in CDR and JSON
/// reaches the run; other topics are refused and counted; the run's configuration reads
/// as parameters, which cannot be written.
#[test]
fn foxglove_reads_every_stream_publishes_cmd_vel_and_reads_parameters() {
    let Some(modules) = node_modules() else {
        return;
    };
    let config = RelayConfig::default()
        .with_parameters(&json!({"camera": {"fps": 15}, "web": {"token": "s3cret", "port": 0}}))
        .expect("serializable");
    let run = start(config, SyntheticCamera::new(64, 48, 15.0, None));
    let url = run
        .with_token(&format!("ws://{}/foxglove", run.addr))
        .replace("?token=", "?client=fox&token=");
    let twist_schema = streamwire::msgs::Twist::ros_schema()
        .expect("standard")
        .full_text();
    let publish = [
        json!({"linear": {"x": 0.25, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": -0.5}}),
        json!({"linear": {"x": 1.0}}),
        json!({"angular": {"z": 2.0}}),
    ];
    let answer = foxglove_client(
        &modules,
        json!({"mode": "session", "url": url, "twist_schema": twist_schema, "publish": publish}),
    );

    assert_eq!(answer["protocol"], "foxglove.sdk.v1");
    assert_eq!(
        answer["serverInfo"]["capabilities"],
        json!(["clientPublish", "parameters"])
    );
    assert_eq!(answer["errors"], json!([]));
    let mut channels: Vec<String> = answer["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .map(|c| {
            format!(
                "{} {} {} ({})",
                c["topic"].as_str().unwrap_or(""),
                c["encoding"].as_str().unwrap_or(""),
                c["schemaName"].as_str().unwrap_or(""),
                c["schemaEncoding"].as_str().unwrap_or("")
            )
        })
        .collect();
    channels.sort();
    insta::assert_snapshot!(channels.join("\n"));

    check_messages(&answer["messages"]);

    // Parameters: the configuration by name, the token left out; a write refused and
    // answered with the values as they are.
    let values = &answer["parameterValues"];
    assert_eq!(values[0]["id"], "all");
    assert_eq!(
        values[0]["parameters"],
        json!([{"name": "camera.fps", "value": 15}, {"name": "web.port", "value": 0}])
    );
    assert_eq!(values[1]["id"], "set");
    assert_eq!(
        values[1]["parameters"],
        json!([{"name": "camera.fps", "value": 15}])
    );
    let statuses: Vec<String> = answer["statuses"]
        .as_array()
        .expect("statuses")
        .iter()
        .map(|s| {
            format!(
                "level {} id {}: {}",
                s["level"],
                s["id"],
                s["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    insta::assert_snapshot!("refusals", statuses.join("\n"));

    // Three commands reached the run, in order; the two refusals are counted.
    let expected = [(0.25, -0.5), (1.0, 0.0), (0.0, 2.0)];
    eventually("the commands reach the run", || {
        run.commands.lock().len() >= expected.len()
    });
    let got: Vec<(f64, f64)> = run
        .commands
        .lock()
        .iter()
        .map(|t| (t.linear.x, t.angular.z))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(relay_counter(&run, "commands"), 3);
    assert_eq!(relay_counter(&run, "refused_publishes"), 2);
    assert_eq!(relay_counter(&run, "foxglove_clients"), 1);
}

/// One message of each channel, decoded by Foxglove's libraries, in its ROS 2 shape.
fn check_messages(m: &Value) {
    // Compressed images as their JPEG bytes (image_transport's `<stream>/compressed`)...
    assert!(
        m["/color_image/compressed"]["format"]
            .as_str()
            .unwrap_or("")
            .contains("jpeg"),
        "{}",
        m["/color_image/compressed"]
    );
    let jpeg = &m["/color_image/compressed"]["data"]["head"];
    assert_eq!(
        (&jpeg[0], &jpeg[1]),
        (&json!(255), &json!(216)),
        "a JPEG's SOI"
    );
    // ... and their pixels, decoded once in the relay, on `<stream>`.
    let image = &m["/color_image"];
    assert_eq!(
        (
            &image["encoding"],
            &image["width"],
            &image["height"],
            &image["step"]
        ),
        (&json!("rgb8"), &json!(64), &json!(48), &json!(192)),
        "{image}"
    );
    assert_eq!(image["data"]["length"], 64 * 48 * 3);
    // Depth decoded once from its zstd bytes into a 16UC1 image.
    let depth = &m["/depth"];
    assert_eq!(
        (
            &depth["encoding"],
            &depth["width"],
            &depth["height"],
            &depth["step"]
        ),
        (&json!("16UC1"), &json!(64), &json!(48), &json!(128))
    );
    assert_eq!(depth["data"]["length"], 64 * 48 * 2);
    let first: Vec<Value> = depth_mm(64, 48)[..4]
        .iter()
        .flat_map(|mm| mm.to_le_bytes())
        .map(|b| json!(b))
        .collect();
    assert_eq!(depth["data"]["head"], json!(first));
    // Odometry, the cloud, /tf and the map as the 3D panel reads them.
    let odom = &m["/odom"];
    assert_eq!(odom["header"]["frame_id"], "odom");
    assert_eq!(odom["child_frame_id"], "base_link");
    assert_eq!(odom["twist"]["twist"]["linear"]["x"], 0.1);
    assert!(odom["pose"]["pose"]["orientation"]["w"].is_number());
    let cloud = &m["/cloud"];
    assert_eq!(
        (&cloud["width"], &cloud["point_step"]),
        (&json!(1928), &json!(12))
    );
    let fields: Vec<&Value> = cloud["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| &f["name"])
        .collect();
    assert_eq!(fields, [&json!("x"), &json!("y"), &json!("z")]);
    assert_eq!(cloud["data"]["length"], 1928 * 12);
    let tf = &m["/tf"]["transforms"][0];
    assert_eq!(tf["header"]["frame_id"], "map");
    assert_eq!(tf["child_frame_id"], "base_link");
    assert_eq!(tf["transform"]["translation"]["x"], 1.5);
    let map = &m["/map"];
    assert_eq!(
        (&map["info"]["width"], &map["info"]["height"]),
        (&json!(4), &json!(3))
    );
    assert_eq!(map["info"]["resolution"], 0.5);
    assert_eq!(map["data"], json!(CELLS));
    // The user's own type as JSON.
    assert_eq!(m["/battery"]["volts"], 12.5);
    // Log records as rcl_interfaces/msg/Log, warnings and above on `/rosout`.
    for topic in ["/log", "/rosout"] {
        let log = &m[topic];
        assert_eq!(
            (&log["level"], &log["name"], &log["msg"]),
            (&json!(30), &json!("world"), &json!("battery low")),
            "{topic}: {log}"
        );
    }
    // The relay's own output: the first command published, in CDR.
    assert_eq!(m["/cmd_vel"]["linear"]["x"], 0.25);
    assert_eq!(m["/cmd_vel"]["angular"]["z"], -0.5);
}

/// A Foxglove client without the token, or from a page of a foreign origin, or offering
/// no Foxglove subprotocol, is refused before any websocket; an allowed origin gets in.
#[test]
fn foxglove_clients_without_the_token_or_from_a_foreign_origin_are_refused() {
    let Some(modules) = node_modules() else {
        return;
    };
    let run = start(
        RelayConfig::default().allow_origin("https://app.foxglove.dev"),
        SyntheticCamera::new(32, 24, 5.0, None),
    );
    let plain = format!("ws://{}/foxglove", run.addr);
    let with_token = run.with_token(&plain);
    let cases = [
        ("no token", json!({"url": plain})),
        (
            "wrong token",
            json!({"url": format!("{plain}?token=wrong")}),
        ),
        (
            "foreign origin",
            json!({"url": with_token, "origin": "http://evil.example"}),
        ),
        (
            "no Foxglove subprotocol",
            json!({"url": with_token, "subprotocol": "chat"}),
        ),
        (
            "allowed origin",
            json!({"url": with_token, "origin": "https://app.foxglove.dev"}),
        ),
        (
            "foxglove.websocket.v1 only (Lichtblick)",
            json!({"url": with_token, "subprotocol": "foxglove.websocket.v1"}),
        ),
    ];
    let answers: Vec<String> = cases
        .into_iter()
        .map(|(what, mut request)| {
            request["mode"] = json!("refused");
            let answer = foxglove_client(&modules, request);
            match answer["protocol"].as_str() {
                Some(protocol) => format!("{what}: {} {protocol}", answer["status"]),
                None => format!("{what}: {}", answer["status"]),
            }
        })
        .collect();
    insta::assert_snapshot!(answers.join("\n"));
    assert_eq!(relay_counter(&run, "refused_token"), 2);
    assert_eq!(relay_counter(&run, "refused_origin"), 1);
    assert_eq!(relay_counter(&run, "refused_subprotocol"), 1);
}

/// The relay chooses the client's first offered subprotocol that it serves, whichever the
/// order, for `@foxglove/ws-protocol` 0.8.0 and 0.7.2 alike: a 0.7.2 client offering
/// `foxglove.websocket.v1` first gets it (it accepts nothing else, and throws "Expected
/// subprotocol" when it gets `foxglove.sdk.v1`, its own second choice here).
#[test]
fn foxglove_clients_get_their_first_offered_subprotocol() {
    let Some(modules) = node_modules() else {
        return;
    };
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(32, 24, 5.0, None),
    );
    let url = run.with_token(&format!("ws://{}/foxglove", run.addr));
    let offers = json!([
        ["foxglove.websocket.v1", "foxglove.sdk.v1"],
        ["foxglove.sdk.v1", "foxglove.websocket.v1"],
    ]);
    let answer = foxglove_client(
        &modules,
        json!({"mode": "subprotocols", "url": url, "offers": offers}),
    );
    let results = answer["results"].as_array().expect("a list");
    assert_eq!(results.len(), 4, "{answer}");
    for result in results {
        assert_eq!(result["protocol"], result["offered"][0], "{result}");
        assert_eq!(result["serverInfo"], true, "{result}");
        let dislikes_sdk = result["version"] == "0.7.2" && result["protocol"] == "foxglove.sdk.v1";
        if dislikes_sdk {
            let error = result["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("Expected subprotocol foxglove.websocket.v1"),
                "{result}"
            );
        } else {
            assert_eq!(result["error"], Value::Null, "{result}");
        }
    }
}

/// A Foxglove client that stops reading loses frames on its own queues, counted on its
/// row of the run's report, and nobody else is hurt.
#[test]
fn a_foxglove_client_that_stops_reading_has_its_drops_counted() {
    let Some(modules) = node_modules() else {
        return;
    };
    // Large noisy frames fill the socket's buffers within the stall.
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(640, 480, 30.0, None),
    );
    let url = run
        .with_token(&format!("ws://{}/foxglove", run.addr))
        .replace("?token=", "?client=stalled&token=");
    let answer = foxglove_client(
        &modules,
        json!({"mode": "stall", "url": url, "stall_ms": 10000}),
    );
    assert!(answer["received"].as_u64().unwrap_or(0) > 0, "{answer}");
    eventually("the stalled client's drops in the report", || {
        relay_counter(&run, "dropped:stalled") > 0
    });
    assert!(relay_counter(&run, "dropped") >= relay_counter(&run, "dropped:stalled"));
}

/// Without `foxglove`, `/foxglove` is not served (the default, and the demo's unless
/// `-o foxglove.enabled=true`).
#[test]
fn foxglove_is_off_unless_asked() {
    let run = common::start(
        RelayConfig::default(),
        SyntheticCamera::new(32, 24, 5.0, None),
    );
    let (status, _) = http_get(run.addr, &run.with_token("/foxglove"));
    assert_eq!(status, 404);
    // With it, a plain GET is told where it is.
    let run = start(
        RelayConfig::default(),
        SyntheticCamera::new(32, 24, 5.0, None),
    );
    let (status, body) = http_get(run.addr, &run.with_token("/foxglove"));
    assert_eq!(status, 426, "{body}");
    assert!(body.contains("Foxglove"), "{body}");
}

/// A page that speaks the protocol by hand with the browser's own `WebSocket`, to the
/// relay URL in its query (`?relay=`): subscribes to `/odom` as subscription 7, sends a
/// malformed request, and counts what it gets.
const BROWSER_PAGE: &str = r#"<!doctype html><html><body><script>
window.result = { open: false, protocol: null, ops: [], statuses: [], odom: 0, odomAfterStatus: 0, closed: null };
const ws = new WebSocket(new URLSearchParams(location.search).get("relay"), ["foxglove.sdk.v1"]);
ws.binaryType = "arraybuffer";
ws.onopen = () => { result.open = true; result.protocol = ws.protocol; };
ws.onclose = (e) => { result.closed = e.code; };
ws.onmessage = (m) => {
  if (typeof m.data === "string") {
    const op = JSON.parse(m.data);
    result.ops.push(op.op);
    if (op.op === "status") result.statuses.push(op.message);
    if (op.op === "advertise") {
      const odom = op.channels.find((c) => c.topic === "/odom");
      ws.send(JSON.stringify({ op: "subscribe", subscriptions: [{ id: 7, channelId: odom.id }] }));
      ws.send("{not json");
    }
  } else {
    const view = new DataView(m.data);
    if (view.getUint8(0) === 1 && view.getUint32(1, true) === 7) {
      result.odom++;
      if (result.statuses.length > 0) result.odomAfterStatus++;
    }
  }
};
</script></body></html>"#;

/// A web server of the test's own (another origin than the relay's) serving
/// [`BROWSER_PAGE`] for every request, until dropped.
struct PageServer {
    origin: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PageServer {
    fn start() -> std::io::Result<PageServer> {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let origin = format!("http://{}", listener.local_addr()?);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("test page server".to_owned())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                let _ = serve_page(stream);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                })?
        };
        Ok(PageServer {
            origin,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve_page(mut stream: std::net::TcpStream) -> std::io::Result<()> {
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
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BROWSER_PAGE}",
        BROWSER_PAGE.len()
    )
}

/// In headless chromium: a page of an allowed origin gets the channels and `/odom`'s
/// messages, and its malformed request a `status` error while the messages go on; the
/// same page from another origin, with the token, gets nothing (403 before any websocket).
#[test]
fn in_a_browser_a_page_of_another_origin_gets_nothing() -> anyhow::Result<()> {
    if !common::chromium::chromium_present() {
        return Ok(());
    }
    let allowed = PageServer::start()?;
    let foreign = PageServer::start()?;
    let run = start(
        RelayConfig::default().allow_origin(allowed.origin.clone()),
        SyntheticCamera::new(32, 24, 5.0, None),
    );
    let relay = run.with_token(&format!("ws://{}/foxglove", run.addr));
    let page = |origin: &str| {
        format!(
            "{origin}/?relay={}",
            relay
                .replace('&', "%26")
                .replace('?', "%3F")
                .replace('=', "%3D")
        )
    };
    let chromium = common::chromium::Chromium::launch()?;
    let state = "JSON.stringify(window.result || null)";

    let tab = chromium.tab()?;
    tab.navigate_to(&page(&allowed.origin))?;
    tab.wait_until_navigated()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let result = common::chromium::eval(&tab, state)?;
        if result["odomAfterStatus"].as_u64().unwrap_or(0) >= 3 {
            break result;
        }
        anyhow::ensure!(Instant::now() < deadline, "no odometry: {result}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(result["protocol"], "foxglove.sdk.v1", "{result}");
    assert_eq!(
        result["ops"].as_array().map(|ops| ops[..3].to_vec()),
        Some(vec![
            json!("serverInfo"),
            json!("advertise"),
            json!("status")
        ]),
        "{result}"
    );
    let status = result["statuses"][0].as_str().unwrap_or("");
    assert!(status.starts_with("not JSON"), "{result}");

    let tab = chromium.tab()?;
    tab.navigate_to(&page(&foreign.origin))?;
    tab.wait_until_navigated()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let result = loop {
        let result = common::chromium::eval(&tab, state)?;
        if !result["closed"].is_null() {
            break result;
        }
        anyhow::ensure!(Instant::now() < deadline, "never closed: {result}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(result["open"], false, "{result}");
    assert_eq!(result["ops"], json!([]), "{result}");
    assert_eq!(result["closed"], 1006, "{result}");
    assert_eq!(relay_counter(&run, "refused_origin"), 1);
    assert_eq!(relay_counter(&run, "foxglove_clients"), 1);
    drop(chromium);
    Ok(())
}

//! The relay with the real rosbridge clients, unmodified, against the demo blueprint as
//! `streamwire run demo` builds it: roslib 2.1.0 in Node (with Foxglove's ROS 2
//! libraries decoding `cbor-raw`), roslibpy 2.1.0 in Python, roslib 2.1.0 in Debian's
//! headless Chromium through an import map, and the viewer page (map, boxes, driving).
//!
//! `.ci/run` installs the clients into `tests/clients/` (npm ci, a venv from
//! requirements.txt, both git-ignored); where they are absent the tests skip, saying why
//! (and fail under `STREAMWIRE_REQUIRE=all`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::chromium::{Chromium, chromium_present, eval};
use serde_json::Value;
use streamwire::prelude::*;
use streamwire_modules::demo::{DemoConfig, demo_blueprint};
use streamwire_ros2::schema::{BaseType, MsgDef, Repeat, RosSchema};
use streamwire_web::{RelayConfig, RelayToken, WebRelay};

/// The topics of the demo every client reads.
const TOPICS: &[&str] = &[
    "/color_image/compressed",
    "/color_image",
    "/depth",
    "/cloud",
    "/odometry",
    "/tf",
    "/map",
    "/detections",
];

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// The demo as the stock binary builds it (a small camera), with the relay on the
/// operator's laptop on a free port, `allowed_origins` added.
struct Demo {
    run: RunHandle,
    addr: SocketAddr,
    token: String,
    url: String,
}

impl Demo {
    fn start(allowed_origins: Vec<String>) -> Demo {
        let mut config = DemoConfig::default();
        config.camera.width = 320;
        config.camera.height = 240;
        config.camera.fps = 10.0;
        let mut blueprint = demo_blueprint(&config).expect("the demo blueprint");
        let relay = RelayConfig {
            token: RelayToken::Random,
            allowed_origins,
            ..RelayConfig::default().with_port(0)
        };
        let address = relay.address.clone();
        let web = blueprint.add("web", WebRelay::new(relay));
        blueprint.place(&web, Placement::process("ui").on_host("laptop"));
        blueprint.autoconnect();
        let run = blueprint.run(RunOptions::default()).expect("the demo runs");
        let addr = address
            .wait(Duration::from_secs(30))
            .expect("the relay listens");
        Demo {
            run,
            addr,
            token: address.token().expect("a token"),
            url: address.url().expect("a URL"),
        }
    }

    fn ws_url(&self) -> String {
        format!("ws://{}/?token={}", self.addr, self.token)
    }

    /// The relay's counter `name` in the run's report.
    fn counter(&self, name: &str) -> u64 {
        self.run
            .stats()
            .instances
            .iter()
            .find(|i| i.name == "web" || i.name.ends_with("/web"))
            .and_then(|i| i.counters.iter().find(|(n, _)| n == name))
            .map_or(0, |(_, v)| *v)
    }
}

/// Runs `program` with `args` in the clients' folder, at most `limit`; its standard
/// output, or why it failed.
fn run_tool(program: &Path, args: &[String], limit: Duration) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(clients_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} ran longer than {limit:?}; stderr: {}",
                program.display(),
                err.join().unwrap_or_default()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{} failed ({status}): {err}", program.display()));
    }
    Ok(out)
}

fn node_clients_present() -> Option<PathBuf> {
    let node = PathBuf::from("/usr/bin/node");
    let modules = clients_dir().join("node_modules/roslib/package.json");
    if node.exists() && modules.exists() {
        return Some(node);
    }
    streamwire_testdata::skip(format!(
        "roslib is not installed in {} (cd there; npm ci) or node is absent",
        clients_dir().display()
    ));
    None
}

/// Checks that `value` (a message as a client got it, large arrays summed up as
/// `{"$len", "$kind"}`) has the fields of `def`, recursively; `uint8[]` is bytes
/// (`bytes_kind`: a base64 string in JSON, a byte string in CBOR).
fn check_fields(
    schema: &RosSchema,
    def: &MsgDef,
    value: &Value,
    path: &str,
    bytes_ok: &dyn Fn(&Value) -> bool,
) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{path} is an object: {value}"));
    let mut names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
    let mut keys: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "data_length")
        .collect();
    names.sort_unstable();
    keys.sort_unstable();
    assert_eq!(keys, names, "{path} of {}", def.name);
    for field in &def.fields {
        let at = format!("{path}.{}", field.name);
        let v = &object[&field.name];
        match (&field.ty.base, field.ty.repeat) {
            (BaseType::Nested(name), Repeat::Single) => {
                check_fields(
                    schema,
                    schema.def(name).expect("resolved"),
                    v,
                    &at,
                    bytes_ok,
                );
            }
            (BaseType::Nested(name), _) => {
                let items: Vec<&Value> = match v {
                    Value::Array(items) => items.iter().collect(),
                    summed => vec![&summed["first"]],
                };
                for item in items {
                    check_fields(
                        schema,
                        schema.def(name).expect("resolved"),
                        item,
                        &at,
                        bytes_ok,
                    );
                }
            }
            (BaseType::Primitive("uint8"), Repeat::Sequence) => {
                assert!(bytes_ok(v), "{at} is bytes: {v}");
            }
            (_, Repeat::Single) => assert!(!v.is_array() && !v.is_object(), "{at}: {v}"),
            (_, _) => assert!(
                v.is_array() || v.get("$len").is_some(),
                "{at} is a list: {v}"
            ),
        }
    }
}

fn schema_of(ros_type: &str) -> RosSchema {
    RosSchema::standard(ros_type).unwrap_or_else(|e| panic!("{ros_type}: {e}"))
}

/// What roslib's rosapi helpers and plain service calls got (see roslib_node.mjs).
fn check_services(services: &Value, topic_count: usize, type_of: &dyn Fn(&str) -> String) {
    for topic in TOPICS {
        assert!(
            type_of(topic).contains("/msg/"),
            "{topic}: ROS 2 type names"
        );
    }
    assert_eq!(
        type_of("/color_image/compressed"),
        "sensor_msgs/msg/CompressedImage"
    );
    assert_eq!(type_of("/color_image"), "sensor_msgs/msg/Image");
    assert_eq!(type_of("/depth"), "sensor_msgs/msg/Image");
    assert_eq!(type_of("/map"), "nav_msgs/msg/OccupancyGrid");
    assert_eq!(type_of("/detections"), "vision_msgs/msg/Detection2DArray");
    assert_eq!(type_of("/tf"), "tf2_msgs/msg/TFMessage");
    assert_eq!(type_of("/rosout"), "rcl_interfaces/msg/Log");
    assert_eq!(
        services["getTopicsAndRawTypes"]["typedefs"].as_u64(),
        Some(topic_count as u64)
    );
    assert_eq!(services["getTopicType"], "nav_msgs/msg/Odometry");
    assert_eq!(
        services["getTopicsForType"],
        serde_json::json!(["/odometry"])
    );
    // The run's instances are its nodes, the relay's own among them.
    let nodes = services["getNodes"].as_array().expect("nodes");
    for node in ["/odometry", "/mapper", "/web"] {
        assert!(nodes.iter().any(|n| n == node), "{node} in {nodes:?}");
    }
    let details = &services["getNodeDetails"];
    assert_eq!(
        details["publishing"],
        serde_json::json!(["/odometry"]),
        "{details}"
    );
    let served = services["getServices"].as_array().expect("services");
    for name in [
        "topics",
        "topics_and_raw_types",
        "topic_type",
        "topics_for_type",
        "nodes",
        "node_details",
        "publishers",
        "subscribers",
        "services",
        "services_for_type",
        "service_type",
        "service_request_details",
        "action_servers",
        "message_details",
        "get_time",
        "get_param_names",
        "get_param",
    ] {
        assert!(
            served.iter().any(|s| s == &format!("/rosapi/{name}")),
            "{name} in {served:?}"
        );
    }
    assert_eq!(services["getServiceType"], "rosapi_msgs/srv/Topics");
    assert_eq!(
        services["getMessageDetails"][0]["fieldnames"],
        serde_json::json!(["linear", "angular"])
    );
    assert!(
        services["decodeTypeDefs"]["linear"].is_object(),
        "{services}"
    );
    assert!(
        services["getParams"]
            .as_array()
            .is_some_and(|p| p.iter().any(|n| n == "/web:cmd_vel_topic")),
        "{services}"
    );
    assert!(
        services["getParams"]
            .as_array()
            .is_some_and(|p| p.iter().any(|n| n == "/odometry:hz")),
        "{services}"
    );
    // No secret, and no file path (the busy sinks' recording `path`).
    let params = services["getParams"].to_string();
    assert!(!params.contains("token\""), "no token among the parameters");
    assert!(
        !params.contains(":path\""),
        "no path among the parameters: {params}"
    );
    assert_eq!(services["paramGet"], "cmd_vel");
    assert_eq!(services["paramSet"]["ok"], false, "{services}");
    assert!(
        services["get_time"]["response"]["time"]["sec"]
            .as_u64()
            .is_some_and(|s| s > 1_600_000_000),
        "{services}"
    );
    assert_eq!(
        services["publishers"]["response"]["publishers"],
        serde_json::json!(["/odometry"])
    );
    // The relay publishes `cmd_vel` into the run; no demo module reads it.
    assert_eq!(
        services["subscribers"]["response"]["subscribers"],
        serde_json::json!([])
    );
    assert_eq!(services["unknown"]["ok"], false);
}

/// Two subscriptions to one topic with different throttles and ids (roslib_node.mjs).
fn check_throttles(throttle: &Value) {
    // Two subscriptions, different throttles and ids: the lower throttle while both are
    // there (several messages within a second), the other alone after one unsubscribe
    // (still coming, at most one a second by the message stamps).
    let ids = throttle["ids"].as_array().expect("ids");
    assert_ne!(ids[0], ids[1]);
    let secs = |list: &Value| -> Vec<f64> {
        list.as_array()
            .expect("stamps")
            .iter()
            .filter_map(|s| s.as_str()?.split_once('.'))
            .map(|(s, n)| s.parse::<f64>().unwrap_or(0.0) + n.parse::<f64>().unwrap_or(0.0) / 1e9)
            .collect()
    };
    let both = secs(&throttle["both"]);
    assert!(both.len() >= 10);
    assert!(both[both.len() - 1] - both[0] < 5.0, "both: {both:?}");
    let alone = secs(&throttle["slowOnly"]);
    // The first may have been queued before the unsubscribe took effect.
    for pair in alone[1..].windows(2) {
        assert!(pair[1] - pair[0] >= 0.9, "slow alone: {alone:?}");
    }
}

#[test]
fn roslib_in_node_every_service_compression_and_topic() {
    let Some(node) = node_clients_present() else {
        return;
    };
    let demo = Demo::start(Vec::new());
    let report = run_tool(
        &node,
        &[
            "roslib_node.mjs".to_owned(),
            demo.ws_url(),
            TOPICS.join(","),
        ],
        Duration::from_secs(240),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_str(&report).expect("a JSON report");
    let services = &report["services"];

    // rosapi, through roslib's helpers.
    let topics = services["getTopics"]["topics"].as_array().expect("topics");
    let types = services["getTopics"]["types"].as_array().expect("types");
    let type_of = |topic: &str| {
        topics
            .iter()
            .position(|t| t == topic)
            .and_then(|i| types[i].as_str())
            .unwrap_or_else(|| panic!("{topic} listed: {topics:?}"))
            .to_owned()
    };
    check_services(services, topics.len(), &type_of);
    // rosapi's actions and service types (the run has no actions; its services are rosapi's).
    assert_eq!(services["getActionServers"], serde_json::json!([]));
    assert_eq!(
        services["getServicesForType"],
        serde_json::json!(["/rosapi/get_param"])
    );
    let request = &services["getServiceRequestDetails"]["typedefs"][0];
    assert_eq!(request["type"], "rosapi_msgs/GetParam_Request", "{request}");
    assert_eq!(
        request["fieldnames"],
        serde_json::json!(["name", "default"])
    );
    assert_eq!(
        request["fieldtypes"],
        serde_json::json!(["string", "string"])
    );

    // Every topic, JSON and CBOR, field by field against its ROS 2 definition.
    for topic in TOPICS {
        let schema = schema_of(&type_of(topic));
        for (compression, bytes_ok) in [
            (
                "none",
                &(|v: &Value| v.is_string() || v["$kind"] == "string") as &dyn Fn(&Value) -> bool,
            ),
            ("cbor", &|v: &Value| v["$kind"] == "bytes"),
        ] {
            let message = &report["topics"][*topic][compression];
            check_fields(&schema, schema.root(), message, topic, bytes_ok);
        }
    }
    // Depth: `uint8[]` of `step * height` bytes, in both forms.
    for compression in ["none", "cbor"] {
        let depth = &report["topics"]["/depth"][compression];
        assert_eq!(depth["encoding"], "16UC1");
        assert_eq!(
            depth["data_length"].as_u64(),
            Some(depth["step"].as_u64().expect("step") * depth["height"].as_u64().expect("height")),
            "{compression}: {depth}"
        );
    }
    // Stamps are exact (`sec`, `nanosec` as integers, no BigInt).
    let stamp = &report["topics"]["/map"]["cbor"]["header"]["stamp"];
    assert!(
        stamp["sec"].is_u64() && stamp["nanosec"].is_u64(),
        "{stamp}"
    );

    // `png`, decoded by roslib: the same message shapes.
    for (topic, message) in report["png"].as_object().expect("png") {
        let schema = schema_of(&type_of(topic));
        check_fields(&schema, schema.root(), message, topic, &|v: &Value| {
            v.is_string() || v["$kind"] == "string"
        });
    }

    // `cbor-raw` read by @foxglove/rosmsg2-serialization over @foxglove/rosmsg's parse of
    // `typedefs_full_text` equals the JSON form of the same message.
    for topic in TOPICS {
        let raw = &report["cbor_raw"][*topic];
        let compared = raw["compared"].as_u64().unwrap_or(0);
        assert!(compared > 0, "{topic}: no message in both forms: {raw}");
        assert_eq!(raw["equal"].as_u64(), Some(compared), "{topic}: {raw}");
        assert!(raw["secs"].as_u64().is_some_and(|s| s > 1_600_000_000));
    }

    check_throttles(&report["throttle"]);
    drop(demo);
}

#[test]
fn roslibpy_services_subscriptions_png_and_driving() {
    let python = clients_dir().join(".venv/bin/python");
    if !python.exists() {
        streamwire_testdata::skip(format!(
            "roslibpy is not installed (python3 -m venv {0}/.venv && {0}/.venv/bin/pip install -r {0}/requirements.txt)",
            clients_dir().display()
        ));
        return;
    }
    let demo = Demo::start(Vec::new());
    let commands_before = demo.counter("commands");
    let report = run_tool(
        &python,
        &[
            "roslibpy_client.py".to_owned(),
            demo.addr.ip().to_string(),
            demo.addr.port().to_string(),
            demo.token.clone(),
        ],
        Duration::from_secs(120),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report: Value = serde_json::from_str(report.trim()).expect("a JSON report");
    assert!(
        report["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "/map")),
        "{report}"
    );
    assert_eq!(report["topic_type"], "nav_msgs/msg/Odometry");
    assert_eq!(
        report["topics_for_type"],
        serde_json::json!(["/color_image", "/depth"])
    );
    let nodes = report["nodes"].as_array().expect("nodes");
    assert!(nodes.iter().any(|n| n == "/web"), "{report}");
    assert!(nodes.iter().any(|n| n == "/odometry"), "{report}");
    assert!(report["node_details"]["publishing"].is_array());
    assert_eq!(report["service_type"], "rosapi_msgs/srv/GetParam");
    assert_eq!(
        report["message_details"]["typedefs"][0]["type"],
        "nav_msgs/Odometry"
    );
    assert_eq!(report["param"], "cmd_vel");
    assert!(report["time"]["time"]["nanosec"].is_u64(), "{report}");
    assert!(
        report["set_param"]
            .as_str()
            .is_some_and(|s| s.starts_with("refused") && s.contains("read-only")),
        "{report}"
    );
    let odometry = schema_of("nav_msgs/msg/Odometry");
    check_fields(
        &odometry,
        odometry.root(),
        &report["odom"],
        "/odometry",
        &|v| v.is_string(),
    );
    assert!(report["png_frames"].as_u64().is_some_and(|n| n > 0));
    assert_eq!(report["wrong_type_messages"], 0);
    // The Twist it published is the run's: one command more.
    let deadline = Instant::now() + Duration::from_secs(10);
    while demo.counter("commands") < commands_before + 1 {
        assert!(
            Instant::now() < deadline,
            "the command did not reach the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(demo);
}

/// Serves a page and the clients' `node_modules` to Chromium: the page's origin is this
/// server's, so the relay must allow it. A CommonJS module asked for under `/cjs/` is
/// served wrapped as an ES module (eventemitter3's ES entry imports its CommonJS file,
/// which a browser cannot load without a bundler).
struct PageServer {
    origin: String,
    stop: Arc<AtomicBool>,
    page: Arc<parking_lot::Mutex<String>>,
}

impl PageServer {
    fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        listener.set_nonblocking(true).expect("non-blocking");
        let origin = format!("http://{}", listener.local_addr().expect("bound"));
        let stop = Arc::new(AtomicBool::new(false));
        let page = Arc::new(parking_lot::Mutex::new(String::new()));
        {
            let stop = stop.clone();
            let page = page.clone();
            std::thread::Builder::new()
                .name("page server".into())
                .spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        match listener.accept() {
                            Ok((stream, _)) => {
                                let html = page.lock().clone();
                                let _ = serve(stream, &html);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                })
                .expect("a thread");
        }
        PageServer { origin, stop, page }
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(stream: TcpStream, page: &str) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
    }
    let path = request.split(' ').nth(1).unwrap_or("/").to_owned();
    let modules = clients_dir().join("node_modules");
    let (status, kind, body): (&str, &str, Vec<u8>) = if path == "/" {
        ("200 OK", "text/html", page.as_bytes().to_vec())
    } else if let Some(file) = path.strip_prefix("/cjs/").filter(|f| !f.contains("..")) {
        let source = std::fs::read_to_string(modules.join(file))?;
        let wrapped = format!(
            "const module = {{ exports: {{}} }};\n(function (module, exports) {{\n{source}\n}})(module, module.exports);\nexport default module.exports;\nexport const EventEmitter = module.exports.EventEmitter || module.exports;\n"
        );
        ("200 OK", "text/javascript", wrapped.into_bytes())
    } else if let Some(file) = path
        .strip_prefix("/node_modules/")
        .filter(|f| !f.contains(".."))
    {
        match std::fs::read(modules.join(file)) {
            Ok(bytes) => ("200 OK", "text/javascript", bytes),
            Err(_) => ("404 Not Found", "text/plain", b"not found".to_vec()),
        }
    } else {
        ("404 Not Found", "text/plain", b"not found".to_vec())
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)
}

/// roslib 2.1.0 as a page loads it without a bundler: an import map to the packages'
/// ES modules.
fn roslib_page(ws_url: &str) -> String {
    format!(
        r#"<!doctype html><html><head><meta charset="utf-8">
<script type="importmap">{{"imports": {{
  "roslib": "/node_modules/roslib/dist/RosLib.js",
  "eventemitter3": "/cjs/eventemitter3/index.js",
  "uuid": "/node_modules/uuid/dist/index.js",
  "bson": "/node_modules/bson/lib/bson.mjs",
  "cbor2": "/node_modules/cbor2/lib/index.js",
  "fast-png": "/node_modules/fast-png/lib/index.js",
  "iobuffer": "/node_modules/iobuffer/lib/iobuffer.js",
  "fflate": "/node_modules/fflate/esm/browser.js",
  "@cto.af/wtf8": "/node_modules/@cto.af/wtf8/lib/index.js"
}}}}</script>
<script>
window.report = {{ errors: [] }};
window.addEventListener("error", (e) => window.report.errors.push(String(e.message)));
</script></head><body>
<script type="module">
import {{ Ros, Topic }} from "roslib";
const report = window.report;
try {{
  const ros = new Ros({{}});
  await ros.connect({ws_url:?});
  report.topics = await new Promise((r, e) => ros.getTopics(r, e));
  const first = (name, compression) => new Promise((resolve) => {{
    const topic = new Topic({{ ros, name, messageType: "", compression }});
    topic.subscribe((m) => {{ topic.unsubscribe(); resolve(m); }});
  }});
  const depth = await first("/depth", "cbor");
  report.depth = {{ step: depth.step, height: depth.height, length: depth.data.length,
    kind: depth.data.constructor.name }};
  const map = await first("/map", "none");
  report.map = {{ width: map.info.width, height: map.info.height, cells: map.data.length,
    sec: map.header.stamp.sec }};
  const tf = await first("/tf", "png");
  report.tf = tf.transforms[0].child_frame_id;
  const cmd = new Topic({{ ros, name: "/cmd_vel", messageType: "geometry_msgs/msg/Twist" }});
  cmd.publish({{ linear: {{ x: 0.1, y: 0, z: 0 }}, angular: {{ x: 0, y: 0, z: 0 }} }});
  report.published = true;
}} catch (e) {{ report.errors.push(String(e && e.stack || e)); }}
report.done = true;
</script></body></html>"#
    )
}

fn wait_for(tab: &headless_chrome::Tab, js: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let value = eval(tab, js).expect("evaluates");
        if ok(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "page state: {value}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn roslib_in_chromium_through_an_import_map() -> anyhow::Result<()> {
    if !chromium_present() || node_clients_present().is_none() {
        return Ok(());
    }
    let server = PageServer::start();
    let demo = Demo::start(vec![server.origin.clone()]);
    *server.page.lock() = roslib_page(&demo.ws_url());
    let commands_before = demo.counter("commands");
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&format!("{}/", server.origin))?;
    tab.wait_until_navigated()?;
    let report = wait_for(&tab, "JSON.stringify(window.report || {})", |v| {
        v["done"] == true || v["errors"].as_array().is_some_and(|e| !e.is_empty())
    });
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert!(
        report["topics"]["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "/detections")),
        "{report}"
    );
    let depth = &report["depth"];
    assert_eq!(depth["kind"], "Uint8Array", "{depth}");
    assert_eq!(
        depth["length"].as_u64(),
        Some(depth["step"].as_u64().unwrap_or(0) * depth["height"].as_u64().unwrap_or(0))
    );
    let map = &report["map"];
    assert_eq!(
        map["cells"].as_u64(),
        Some(map["width"].as_u64().unwrap_or(0) * map["height"].as_u64().unwrap_or(0))
    );
    assert_eq!(report["tf"], "base_link");
    let deadline = Instant::now() + Duration::from_secs(10);
    while demo.counter("commands") < commands_before + 1 {
        assert!(
            Instant::now() < deadline,
            "the page's Twist did not reach the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(chromium);
    drop(demo);
    Ok(())
}

/// The viewer's state: maps, boxes and commands.
const VIEWER_STATE: &str = r#"JSON.stringify({
    connected: swViewer.connected,
    maps: swViewer.mapsShown,
    cells: swViewer.mapCells,
    boxes: swViewer.boxesShown,
    images: swViewer.imagesShown,
    sent: swViewer.commandsSent,
    errors: swViewer.errors,
    mapPixels: (() => {
        const c = document.querySelector('canvas.map');
        if (!c || c.width < 2) return 0;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] && (d[i] !== 0x80 || d[i + 1] !== 0x80)) n++;
        return n;
    })(),
    boxPixels: (() => {
        const c = document.querySelector('canvas.boxes');
        if (!c || c.width < 2) return 0;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
        return n;
    })(),
})"#;

#[test]
fn the_viewer_draws_the_map_and_boxes_and_drives() -> anyhow::Result<()> {
    if !chromium_present() {
        return Ok(());
    }
    let demo = Demo::start(Vec::new());
    let chromium = Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.navigate_to(&demo.url)?;
    tab.wait_until_navigated()?;
    // The map has cells other than unknown on its canvas; a camera frame with
    // detections has its boxes drawn over it.
    let state = wait_for(&tab, VIEWER_STATE, |v| {
        v["mapPixels"].as_u64().unwrap_or(0) > 0
            && v["boxes"].as_u64().unwrap_or(0) > 0
            && v["boxPixels"].as_u64().unwrap_or(0) > 0
    });
    assert!(state["cells"]["free"].as_u64().unwrap_or(0) > 0, "{state}");

    // One press of the drive key: one command more in the run.
    let before = demo.counter("commands");
    // A click on the drive panel's title (not a button) gives the page the focus keys go to.
    tab.find_element("#drive-panel h2")?.click()?;
    tab.press_key("ArrowUp")?;
    let pressed = eval(&tab, VIEWER_STATE)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while demo.counter("commands") < before + 1 {
        assert!(
            Instant::now() < deadline,
            "the key's Twist did not reach the run: {pressed}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Exactly one, once the page said it sent it.
    let state = wait_for(&tab, VIEWER_STATE, |v| v["sent"].as_u64().is_some());
    assert_eq!(state["sent"], 1, "{state}");
    assert_eq!(demo.counter("commands"), before + 1);
    drop(chromium);
    drop(demo);
    Ok(())
}

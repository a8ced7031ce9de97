//! The rosbridge protocol from a websocket client: every op, every bad input, and a slow
//! client that must not hurt a fast one.

mod common;

use std::time::Duration;

use common::ws::{Ws, connect, send};
use common::{SyntheticCamera, TestRun, relay_counter, start, start_with, stats};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use streamwire::prelude::*;
use streamwire_web::RelayConfig;
use tokio_tungstenite::tungstenite::Message;

/// What arrived: a text frame as JSON, a binary frame as CBOR, or a close.
#[derive(Debug)]
enum Frame {
    Json(Value),
    Cbor(ciborium::Value),
    Closed(Option<(u16, String)>),
}

const WAIT: Duration = Duration::from_secs(20);

async fn next(ws: &mut Ws) -> Frame {
    loop {
        let frame = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame within the wait");
        match frame {
            Some(Ok(Message::Text(t))) => {
                return Frame::Json(serde_json::from_str(&t).expect("JSON"));
            }
            Some(Ok(Message::Binary(b))) => {
                return Frame::Cbor(ciborium::from_reader(&b[..]).expect("CBOR"));
            }
            Some(Ok(Message::Close(c))) => {
                return Frame::Closed(c.map(|c| (u16::from(c.code), c.reason.to_string())));
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return Frame::Closed(None),
        }
    }
}

/// The next JSON frame that is not a publish (a status or a service response).
async fn next_reply(ws: &mut Ws) -> Value {
    loop {
        if let Frame::Json(v) = next(ws).await
            && v["op"] != "publish"
        {
            return v;
        }
    }
}

async fn next_publish(ws: &mut Ws, topic: &str) -> Frame {
    loop {
        let frame = next(ws).await;
        match &frame {
            Frame::Json(v) if v["op"] == "publish" && v["topic"] == topic => return frame,
            Frame::Cbor(v) if cbor_get(v, "topic").and_then(|t| t.as_text()) == Some(topic) => {
                return frame;
            }
            Frame::Closed(_) => panic!("closed while waiting for {topic}"),
            _ => {}
        }
    }
}

fn cbor_get<'a>(value: &'a ciborium::Value, key: &str) -> Option<&'a ciborium::Value> {
    value
        .as_map()?
        .iter()
        .find(|(k, _)| k.as_text() == Some(key))
        .map(|(_, v)| v)
}

fn camera() -> SyntheticCamera {
    SyntheticCamera::new(320, 240, 20.0, None)
}

async fn status_error(ws: &mut Ws) -> String {
    let reply = next_reply(ws).await;
    assert_eq!(reply["op"], "status", "{reply}");
    assert_eq!(reply["level"], "error", "{reply}");
    reply["msg"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_come_from_the_plan() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    send(
        &mut ws,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "t1"}),
    )
    .await;
    let reply = next_reply(&mut ws).await;
    assert_eq!(reply["op"], "service_response");
    assert_eq!(reply["id"], "t1");
    assert_eq!(reply["result"], true);
    let topics: Vec<&str> = reply["values"]["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let types: Vec<&str> = reply["values"]["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let pairs: Vec<(&str, &str)> = topics.iter().copied().zip(types.iter().copied()).collect();
    // ROS 2 names; the camera's bytes on `<stream>/compressed` (image_transport), its
    // pixels (decoded by the relay when asked) on `<stream>`.
    for pair in [
        ("/color_image/compressed", "sensor_msgs/msg/CompressedImage"),
        ("/color_image", "sensor_msgs/msg/Image"),
        ("/depth", "sensor_msgs/msg/Image"),
        ("/odom", "nav_msgs/msg/Odometry"),
        ("/cloud", "sensor_msgs/msg/PointCloud2"),
        ("/cmd_vel", "geometry_msgs/msg/Twist"),
        ("/tf", "tf2_msgs/msg/TFMessage"),
        ("/rosout", "rcl_interfaces/msg/Log"),
    ] {
        assert!(pairs.contains(&pair), "{pair:?} in {pairs:?}");
    }

    send(
        &mut ws,
        json!({"op": "call_service", "service": "/rosapi/topics_and_raw_types"}),
    )
    .await;
    let reply = next_reply(&mut ws).await;
    assert_eq!(
        reply["values"]["topics"].as_array().map(Vec::len),
        Some(topics.len())
    );
    assert_eq!(
        reply["values"]["typedefs_full_text"]
            .as_array()
            .map(Vec::len),
        Some(topics.len())
    );
    // Depth (zstd between processes) is given to clients as the 16UC1 image they receive.
    let depth = topics
        .iter()
        .position(|t| *t == "/depth")
        .expect("a depth topic");
    assert_eq!(reply["values"]["types"][depth], "sensor_msgs/msg/Image");
    let typedef = reply["values"]["typedefs_full_text"][depth]
        .as_str()
        .unwrap_or_default();
    assert!(
        typedef.starts_with("std_msgs/Header header\n")
            && typedef.contains("string encoding\n")
            && typedef.contains("\nMSG: builtin_interfaces/Time\n"),
        "{typedef}"
    );

    send(
        &mut ws,
        json!({"op": "call_service", "service": "/rosapi/delete_param", "id": "n"}),
    )
    .await;
    let reply = next_reply(&mut ws).await;
    assert_eq!(reply["op"], "service_response");
    assert_eq!(reply["result"], false);
    assert!(
        reply["values"]
            .as_str()
            .unwrap_or_default()
            .contains("not served")
    );
    assert!(status_error(&mut ws).await.contains("/rosapi/delete_param"));
    drop(run);
}

/// A module whose settings name files, as a replay's do: rosapi must not show them.
#[derive(Module)]
struct Replayer {
    #[config]
    folder: String,
    #[config]
    source: String,
    #[config]
    rate: f64,
}

impl Node for Replayer {
    fn trigger(&self) -> Trigger {
        Trigger::rate(1.0)
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        Ok(())
    }
}

/// The `values` of rosapi service `name` called with `args`, and whether it answered.
async fn call(ws: &mut Ws, name: &str, args: Value) -> (Value, bool) {
    send(
        ws,
        json!({"op": "call_service", "service": format!("/rosapi/{name}"), "args": args}),
    )
    .await;
    let reply = next_reply(ws).await;
    assert_eq!(reply["op"], "service_response", "{reply}");
    (reply["values"].clone(), reply["result"] == true)
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_and_parameters_are_the_runs() {
    let run = start_with(RelayConfig::default(), camera(), |blueprint| {
        blueprint.add(
            "replay",
            Replayer {
                folder: "recordings".into(),
                source: "/srv/runs/monday".into(),
                rate: 2.0,
            },
        );
    });
    let mut ws = connect(&run, "").await;

    let (values, _) = call(&mut ws, "nodes", json!({})).await;
    assert_eq!(
        strings(&values["nodes"]),
        [
            "/camera",
            "/base",
            "/lidar",
            "/depth_camera",
            "/commands",
            "/web",
            "/replay"
        ]
    );
    let (values, _) = call(&mut ws, "node_details", json!({"node": "/base"})).await;
    assert_eq!(strings(&values["publishing"]), ["/odom"]);
    assert!(strings(&values["subscribing"]).is_empty(), "{values}");
    let (values, _) = call(&mut ws, "node_details", json!({"node": "/commands"})).await;
    assert_eq!(strings(&values["subscribing"]), ["/cmd_vel"]);
    let (values, _) = call(&mut ws, "publishers", json!({"topic": "/odom"})).await;
    assert_eq!(strings(&values["publishers"]), ["/base"]);
    let (values, _) = call(&mut ws, "subscribers", json!({"topic": "/odom"})).await;
    assert_eq!(strings(&values["subscribers"]), ["/web"]);
    let (values, _) = call(&mut ws, "publishers", json!({"topic": "/cmd_vel"})).await;
    assert_eq!(strings(&values["publishers"]), ["/web"]);
    let (values, _) = call(&mut ws, "subscribers", json!({"topic": "/cmd_vel"})).await;
    assert_eq!(strings(&values["subscribers"]), ["/commands"]);

    let (values, _) = call(&mut ws, "get_param_names", json!({})).await;
    let names = strings(&values["names"]);
    for shown in [
        "/camera:fps",
        "/camera:width",
        "/replay:rate",
        "/web:listen",
    ] {
        assert!(names.contains(&shown), "{shown} in {names:?}");
    }
    for hidden in ["/replay:folder", "/replay:source", "/web:token"] {
        assert!(!names.contains(&hidden), "{hidden} in {names:?}");
    }
    let (values, answered) = call(&mut ws, "get_param", json!({"name": "/camera:fps"})).await;
    assert!(answered);
    assert_eq!(values["value"], "20.0");
    let (_, answered) = call(&mut ws, "get_param", json!({"name": "/replay:source"})).await;
    assert!(!answered);
    assert!(status_error(&mut ws).await.contains("/replay:source"));
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribe_json_and_cbor_in_ros_shapes() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "type": "nav_msgs/Odometry"}),
    )
    .await;
    let Frame::Json(odom) = next_publish(&mut ws, "/odom").await else {
        panic!("odometry in JSON is text")
    };
    let msg = &odom["msg"];
    assert_eq!(msg["header"]["frame_id"], "odom");
    assert_eq!(msg["child_frame_id"], "base_link");
    let x = msg["pose"]["pose"]["position"]["x"].as_f64().expect("x");
    let y = msg["pose"]["pose"]["position"]["y"].as_f64().expect("y");
    assert!(
        ((x * x + y * y).sqrt() - 2.0).abs() < 1e-6,
        "on the circle: {x} {y}"
    );
    assert_eq!(msg["pose"]["covariance"].as_array().map(Vec::len), Some(36));
    assert_eq!(msg["twist"]["twist"]["linear"]["x"], 0.1);
    send(&mut ws, json!({"op": "unsubscribe", "topic": "/odom"})).await;

    // The image as CBOR: the JPEG bytes in one byte string, as the camera's encoder made them.
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/color_image/compressed", "compression": "cbor"}),
    )
    .await;
    let Frame::Cbor(image) = next_publish(&mut ws, "/color_image/compressed").await else {
        panic!("CBOR is binary")
    };
    let msg = cbor_get(&image, "msg").expect("msg");
    let format = cbor_get(msg, "format")
        .and_then(|f| f.as_text())
        .expect("format");
    assert!(format.contains("jpeg"), "{format}");
    let data = cbor_get(msg, "data")
        .and_then(|d| d.as_bytes())
        .expect("bytes");
    assert_eq!(&data[..3], &[0xFF, 0xD8, 0xFF], "a JPEG");
    assert_eq!(&data[data.len() - 2..], &[0xFF, 0xD9], "a whole JPEG");
    send(
        &mut ws,
        json!({"op": "unsubscribe", "topic": "/color_image/compressed"}),
    )
    .await;

    // The cloud in CBOR: packed point bytes; odometry covariance as a float64 typed array.
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "cloud", "compression": "cbor"}),
    )
    .await;
    let Frame::Cbor(cloud) = next_publish(&mut ws, "cloud").await else {
        panic!("CBOR is binary")
    };
    let msg = cbor_get(&cloud, "msg").expect("msg");
    assert_eq!(
        cbor_get(msg, "width").and_then(|w| w.as_integer()),
        Some(1928.into())
    );
    let data = cbor_get(msg, "data")
        .and_then(|d| d.as_bytes())
        .expect("bytes");
    assert_eq!(data.len(), 1928 * 12);
    send(&mut ws, json!({"op": "unsubscribe", "topic": "cloud"})).await;

    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "compression": "cbor"}),
    )
    .await;
    let Frame::Cbor(odom) = next_publish(&mut ws, "/odom").await else {
        panic!("CBOR is binary")
    };
    let pose = cbor_get(cbor_get(&odom, "msg").expect("msg"), "pose").expect("pose");
    let Some(ciborium::Value::Tag(tag, inner)) = cbor_get(pose, "covariance") else {
        panic!("covariance is a typed array")
    };
    assert_eq!(*tag, streamwire_web::wire::TAG_F64_LE);
    assert_eq!(inner.as_bytes().map(Vec::len), Some(36 * 8));
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_is_a_ros_image_of_step_times_height_bytes() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/depth", "compression": "cbor", "type": "sensor_msgs/msg/Image"}),
    )
    .await;
    let Frame::Cbor(depth) = next_publish(&mut ws, "/depth").await else {
        panic!("CBOR is binary")
    };
    let msg = cbor_get(&depth, "msg").expect("msg");
    assert_eq!(
        cbor_get(msg, "encoding").and_then(|e| e.as_text()),
        Some("16UC1")
    );
    let number = |key| {
        cbor_get(msg, key)
            .and_then(|v| v.as_integer())
            .and_then(|i| usize::try_from(i).ok())
            .expect("a number")
    };
    // `uint8[] data`: a byte string of `step * height` bytes, as every rosbridge
    // depth decoder reads it.
    let bytes = cbor_get(msg, "data")
        .and_then(|d| d.as_bytes())
        .expect("depth data is bytes");
    assert_eq!(bytes.len(), number("step") * number("height"));
    let mm: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(mm, common::depth_mm(64, 48));
    send(&mut ws, json!({"op": "unsubscribe", "topic": "/depth"})).await;

    // In JSON, base64 of the same bytes.
    send(&mut ws, json!({"op": "subscribe", "topic": "/depth"})).await;
    let Frame::Json(depth) = next_publish(&mut ws, "/depth").await else {
        panic!("JSON is text")
    };
    let msg = &depth["msg"];
    let data = msg["data"].as_str().expect("base64 text");
    let step = msg["step"].as_u64().expect("step");
    let height = msg["height"].as_u64().expect("height");
    assert_eq!(base64_len(data), step * height);
    drop(run);
}

/// The decoded length of base64 `text`.
fn base64_len(text: &str) -> u64 {
    let padding = text.bytes().rev().take_while(|b| *b == b'=').count();
    (text.len() / 4 * 3 - padding) as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_camera_is_its_bytes_on_compressed_and_its_pixels_when_asked() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    // ROS 1 spelling accepted.
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/color_image", "type": "sensor_msgs/Image"}),
    )
    .await;
    let Frame::Json(image) = next_publish(&mut ws, "/color_image").await else {
        panic!("JSON is text")
    };
    let msg = &image["msg"];
    assert_eq!(msg["encoding"], "rgb8");
    assert_eq!(
        (msg["width"].as_u64(), msg["height"].as_u64()),
        (Some(320), Some(240))
    );
    assert_eq!(msg["step"], 320 * 3);
    assert_eq!(
        base64_len(msg["data"].as_str().expect("base64")),
        320 * 3 * 240
    );
    send(
        &mut ws,
        json!({"op": "unsubscribe", "topic": "/color_image"}),
    )
    .await;
    assert!(relay_counter(&run, "images_decoded") > 0);

    // A wrong type is refused, saying which the topic carries.
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/color_image/compressed", "type": "sensor_msgs/msg/Image", "id": "w"}),
    )
    .await;
    let refused = status_error(&mut ws).await;
    assert!(
        refused.contains("sensor_msgs/msg/CompressedImage"),
        "{refused}"
    );
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribe_stops_and_throttle_thins() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "throttle_rate": 400}),
    )
    .await;
    let mut stamps = Vec::new();
    for _ in 0..3 {
        let Frame::Json(odom) = next_publish(&mut ws, "/odom").await else {
            panic!("text")
        };
        stamps.push(
            odom["msg"]["header"]["stamp"]["sec"]
                .as_f64()
                .unwrap_or(0.0)
                + odom["msg"]["header"]["stamp"]["nanosec"]
                    .as_f64()
                    .unwrap_or(0.0)
                    * 1e-9,
        );
    }
    // Published at 20 Hz, throttled to one per 400 ms: consecutive deliveries are far
    // apart in sensor time (stamps, not the test's clock).
    for pair in stamps.windows(2) {
        assert!(pair[1] - pair[0] >= 0.3, "{stamps:?}");
    }
    send(&mut ws, json!({"op": "unsubscribe", "topic": "/odom"})).await;
    send(
        &mut ws,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "mark"}),
    )
    .await;
    // After the mark, no more odometry: the reply proves the unsubscribe was handled.
    loop {
        let reply = next_reply(&mut ws).await;
        if reply["id"] == "mark" {
            break;
        }
    }
    let s = stats(&run);
    let odom = s["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .find(|t| t["topic"] == "/odom")
        .cloned()
        .expect("odom");
    assert_eq!(odom["subscribers"], 0, "{odom}");
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_publish_cmd_vel_only() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run, "").await;
    send(
        &mut ws,
        json!({"op": "advertise", "topic": "/cmd_vel", "type": "geometry_msgs/Twist"}),
    )
    .await;
    send(
        &mut ws,
        json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": 0.5}, "angular": {"z": -0.25}}}),
    )
    .await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got = run.commands.lock().clone();
        if let Some(twist) = got.first() {
            assert_eq!(twist.linear.x, 0.5);
            assert_eq!(twist.angular.z, -0.25);
            assert_eq!(twist.linear.y, 0.0);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the command arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Any other topic, or the wrong type, is refused with a status.
    send(
        &mut ws,
        json!({"op": "advertise", "topic": "/odom", "type": "nav_msgs/Odometry", "id": "a"}),
    )
    .await;
    let reply = next_reply(&mut ws).await;
    assert_eq!(reply["op"], "status");
    assert_eq!(reply["id"], "a");
    assert!(
        reply["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("cmd_vel")
    );
    send(
        &mut ws,
        json!({"op": "advertise", "topic": "/cmd_vel", "type": "std_msgs/String"}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("std_msgs/String"));
    send(
        &mut ws,
        json!({"op": "publish", "topic": "/odom", "msg": {}}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("/odom"));
    send(
        &mut ws,
        json!({"op": "publish", "topic": "/cmd_vel", "msg": {"linear": {"x": "fast"}}}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("linear.x"));
    send(
        &mut ws,
        json!({"op": "publish", "topic": "/cmd_vel", "msg": "hello"}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("geometry_msgs/Twist"));
    send(
        &mut ws,
        json!({"op": "publish", "topic": "/cmd_vel", "msg": {"data": 1}}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("data"));
    assert_eq!(run.commands.lock().len(), 1);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_answered_and_hurts_nobody() {
    let run = start(RelayConfig::default(), camera());
    // A bystander keeps receiving odometry through all of it.
    let mut bystander = connect(&run, "?client=bystander").await;
    send(&mut bystander, json!({"op": "subscribe", "topic": "/odom"})).await;
    next_publish(&mut bystander, "/odom").await;

    let mut ws = connect(&run, "").await;
    ws.send(Message::Text("{not json".into()))
        .await
        .expect("sends");
    assert!(status_error(&mut ws).await.contains("malformed JSON"));
    ws.send(Message::Binary(vec![0xff, 0x00, 0x13].into()))
        .await
        .expect("sends");
    assert!(status_error(&mut ws).await.contains("malformed CBOR"));
    ws.send(Message::Text("[1,2]".into())).await.expect("sends");
    assert!(status_error(&mut ws).await.contains("object"));
    send(&mut ws, json!({"topic": "/odom"})).await;
    assert!(status_error(&mut ws).await.contains("missing `op`"));
    send(&mut ws, json!({"op": "fly", "id": "f"})).await;
    assert!(status_error(&mut ws).await.contains("unknown op `fly`"));
    send(&mut ws, json!({"op": "subscribe", "topic": "/nowhere"})).await;
    assert!(
        status_error(&mut ws)
            .await
            .contains("unknown topic `/nowhere`")
    );
    // A type other than the topic's, and a compression rosbridge does not have.
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "type": "sensor_msgs/msg/Image"}),
    )
    .await;
    assert!(
        status_error(&mut ws)
            .await
            .contains("carries nav_msgs/msg/Odometry")
    );
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "compression": "zip"}),
    )
    .await;
    assert!(status_error(&mut ws).await.contains("unsupported"));
    send(&mut ws, json!({"op": "subscribe"})).await;
    assert!(status_error(&mut ws).await.contains("topic"));
    // What a reply echoes is clipped: a long topic does not make a long reply.
    let long = "/x".repeat(100_000);
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": long, "id": long}),
    )
    .await;
    let reply = next_reply(&mut ws).await;
    assert!(
        reply.to_string().len() < 1024,
        "{} bytes",
        reply.to_string().len()
    );
    // A CBOR request is understood too.
    let mut cbor = Vec::new();
    ciborium::into_writer(
        &json!({"op": "call_service", "service": "/rosapi/topics", "id": "c"}),
        &mut cbor,
    )
    .expect("CBOR");
    ws.send(Message::Binary(cbor.into())).await.expect("sends");
    assert_eq!(next_reply(&mut ws).await["id"], "c");

    // Thousands of subscribe/unsubscribe: answered, bounded, and the connection works.
    for i in 0..2000 {
        let topic = if i % 2 == 0 { "/odom" } else { "odom" };
        send(
            &mut ws,
            json!({"op": "subscribe", "topic": topic, "queue_length": 100000}),
        )
        .await;
        send(&mut ws, json!({"op": "unsubscribe", "topic": topic})).await;
    }
    send(
        &mut ws,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "after"}),
    )
    .await;
    loop {
        if next_reply(&mut ws).await["id"] == "after" {
            break;
        }
    }
    let s = stats(&run);
    let odom_subscribers = s["topics"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["topic"] == "/odom"))
        .map(|t| t["subscribers"].clone());
    assert_eq!(odom_subscribers, Some(json!(1)), "only the bystander: {s}");
    assert!(s["totals"]["bad_input"].as_u64().unwrap_or(0) >= 10, "{s}");

    // An oversized message closes the connection, with the sizes said.
    let big = "x".repeat(2 << 20);
    let _ = ws.send(Message::Text(big.into())).await;
    let mut reason = None;
    for _ in 0..100 {
        if let Frame::Closed(c) = next(&mut ws).await {
            reason = c;
            break;
        }
    }
    let (code, reason) = reason.expect("a close frame with a reason");
    assert_eq!(code, 1009);
    assert!(reason.contains("1048576"), "{reason}");

    // The bystander never noticed.
    for _ in 0..3 {
        next_publish(&mut bystander, "/odom").await;
    }
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_drops_its_own_frames_only() {
    // 150 noisy VGA frames (JPEG of ~100 kB each): more than the socket buffers of a
    // client that never reads.
    const N: u64 = 150;
    let config = RelayConfig {
        stall_timeout: Duration::from_secs(60),
        ..RelayConfig::default()
    };
    let run = start(config, SyntheticCamera::new(640, 480, 30.0, Some(N)));
    let mut slow = connect(&run, "?client=slow").await;
    send(
        &mut slow,
        json!({"op": "subscribe", "topic": "/color_image/compressed", "compression": "cbor"}),
    )
    .await;
    let mut fast = connect(&run, "?client=fast").await;
    send(
        &mut fast,
        json!({"op": "subscribe", "topic": "/color_image/compressed", "compression": "cbor", "queue_length": 16}),
    )
    .await;
    // The fast client also takes the small odometry stream: the big one must not starve it.
    let odom_published = |run: &TestRun| {
        run.run
            .stats()
            .outputs
            .iter()
            .find(|o| o.stream == "odom")
            .map_or(0, |o| o.published)
    };
    send(&mut fast, json!({"op": "subscribe", "topic": "/odom"})).await;
    let odom_before = odom_published(&run);
    // Subscriptions are registered before frames flow: a reply after them proves it.
    send(
        &mut fast,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "ready"}),
    )
    .await;
    let mut received = 0u64;
    let mut odom_received = 0u64;
    let mut slow_drops = Vec::new();
    let mut last_seq = None;
    let mut last_image = std::time::Instant::now();
    while received < N && last_image.elapsed() < Duration::from_secs(5) {
        let frame = tokio::time::timeout(Duration::from_secs(5), fast.next()).await;
        let Ok(Some(Ok(frame))) = frame else {
            break;
        };
        match frame {
            Message::Binary(_) => {
                received += 1;
                last_image = std::time::Instant::now();
            }
            Message::Text(t) if t.contains("\"topic\":\"/odom\"") => odom_received += 1,
            _ => {}
        }
        if received % 40 == 20 {
            let s = stats(&run);
            let dropped = s["clients"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["name"] == "slow"))
                .and_then(|c| c["dropped"].as_u64());
            if last_seq != Some(received) {
                slow_drops.extend(dropped);
                last_seq = Some(received);
            }
        }
    }
    let odom_sent = odom_published(&run) - odom_before;
    let report = run.run.stats();
    let published = report
        .outputs
        .iter()
        .find(|o| o.stream == "color_image")
        .map(|o| o.published)
        .expect("the camera's output");
    assert_eq!(published, N);
    assert!(
        received * 100 >= published * 95,
        "the fast client got {received} of {published}"
    );
    assert!(slow_drops.len() >= 2, "{slow_drops:?}");
    assert!(
        slow_drops.last() > slow_drops.first(),
        "the slow client's drops grow: {slow_drops:?}"
    );
    // Odometry published while the client was subscribed, less the one or two in flight.
    assert!(
        odom_received * 100 >= odom_sent.saturating_sub(2) * 90,
        "odometry beside the images: {odom_received} of {odom_sent}"
    );
    // Each client's drops are in the run's report too, under its name (the relay's step
    // adds them as they happen).
    let slow_seen = slow_drops.last().copied().unwrap_or(0);
    let deadline = std::time::Instant::now() + WAIT;
    let reported = loop {
        let reported = relay_counter(&run, "dropped:slow");
        if reported >= slow_seen || std::time::Instant::now() > deadline {
            break reported;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        reported >= slow_seen && reported > 0,
        "the report's dropped:slow is {reported}, /stats said {slow_seen}"
    );
    println!(
        "fast client: {received} of {published} images, {odom_received} of {odom_sent} odometry; slow client's drops: {slow_drops:?}, in the report: {reported}"
    );
    drop(slow);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected() {
    let config = RelayConfig {
        stall_timeout: Duration::from_millis(500),
        ..RelayConfig::default()
    };
    let run = start(config, SyntheticCamera::new(640, 480, 30.0, None));
    let mut stalled = connect(&run, "?client=stalled").await;
    send(
        &mut stalled,
        json!({"op": "subscribe", "topic": "/color_image", "compression": "cbor"}),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let s = stats(&run);
        if s["totals"]["stalled_disconnects"].as_u64().unwrap_or(0) >= 1 {
            assert!(
                !s["clients"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["name"] == "stalled")),
                "{s}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "disconnected: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(stalled);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_beyond_the_limit_are_told_and_closed() {
    let config = RelayConfig {
        max_clients: 2,
        ..RelayConfig::default()
    };
    let run = start(config, camera());
    let mut first = connect(&run, "?client=first").await;
    send(
        &mut first,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "in"}),
    )
    .await;
    assert_eq!(next_reply(&mut first).await["id"], "in");
    let mut second = connect(&run, "?client=second").await;
    send(&mut second, json!({"op": "subscribe", "topic": "/odom"})).await;
    next_publish(&mut second, "/odom").await;

    let mut third = connect(&run, "?client=third").await;
    let told = status_error(&mut third).await;
    assert!(told.contains("at most 2 clients"), "{told}");
    let Frame::Closed(Some((code, reason))) = next(&mut third).await else {
        panic!("the third client is closed with a reason")
    };
    assert_eq!(code, 1013, "try again later");
    assert!(reason.contains("at most 2 clients"), "{reason}");
    let s = stats(&run);
    assert_eq!(s["totals"]["refused_clients"], 1, "{s}");
    assert_eq!(s["clients"].as_array().map(Vec::len), Some(2), "{s}");

    // The two served never noticed, and a place freed is a place taken.
    next_publish(&mut second, "/odom").await;
    send(
        &mut first,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "still"}),
    )
    .await;
    assert_eq!(next_reply(&mut first).await["id"], "still");
    first.close(None).await.expect("closes");
    drop(first);
    let deadline = std::time::Instant::now() + WAIT;
    while stats(&run)["clients"].as_array().map(Vec::len) != Some(1) {
        assert!(std::time::Instant::now() < deadline, "the first one left");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut fourth = connect(&run, "?client=fourth").await;
    send(
        &mut fourth,
        json!({"op": "call_service", "service": "/rosapi/topics", "id": "in"}),
    )
    .await;
    assert_eq!(next_reply(&mut fourth).await["id"], "in");
    drop(run);
}

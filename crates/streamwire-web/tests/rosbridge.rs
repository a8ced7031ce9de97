//! rosbridge behaviour as ROSBRIDGE_PROTOCOL.md says: several subscriptions per topic by
//! id, `fragment_size` (checked with a websocket written by hand), and the compressions
//! `png` and `cbor-raw`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::raw::{frame, parse_frames, upgrade};
use common::ws::{Ws, send};
use common::{SyntheticCamera, TestRun, start, stats};
use futures_util::StreamExt;
use serde_json::{Value, json};
use streamwire::msgs::Odometry;
use streamwire_web::RelayConfig;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(20);

fn camera() -> SyntheticCamera {
    SyntheticCamera::new(64, 48, 10.0, None)
}

async fn connect(run: &TestRun) -> Ws {
    common::ws::connect(run, "").await
}

/// The next text frame as JSON, skipping binary ones.
async fn next_json(ws: &mut Ws) -> Value {
    loop {
        let frame = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame within the wait")
            .expect("open")
            .expect("a frame");
        if let Message::Text(text) = frame {
            return serde_json::from_str(&text).expect("JSON");
        }
    }
}

/// The stamp of an odometry publish, in seconds.
fn stamp(publish: &Value) -> f64 {
    let s = &publish["msg"]["header"]["stamp"];
    s["sec"].as_f64().expect("sec") + s["nanosec"].as_f64().expect("nanosec") / 1e9
}

/// The next `n` odometry publishes' stamps.
async fn odom_stamps(ws: &mut Ws, n: usize) -> Vec<f64> {
    let mut stamps = Vec::new();
    while stamps.len() < n {
        let v = next_json(ws).await;
        if v["op"] == "publish" && v["topic"] == "/odom" {
            stamps.push(stamp(&v));
        }
    }
    stamps
}

fn client_topics(run: &TestRun) -> Vec<Value> {
    stats(run)["clients"][0]["topics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscriptions_on_one_topic_by_id() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run).await;
    // Odometry comes at 20 Hz. `fast` unthrottled, `slow` at most one a second: the
    // topic is sent at the lower throttle, once per message (not once per id).
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "id": "slow", "throttle_rate": 1000}),
    )
    .await;
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "id": "fast", "throttle_rate": 0}),
    )
    .await;
    let stamps = odom_stamps(&mut ws, 8).await;
    let closest = stamps
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::MAX, f64::min);
    assert!(closest > 0.0, "each message once: {stamps:?}");
    assert!(
        closest < 0.5,
        "unthrottled while `fast` is there: {stamps:?}"
    );

    // `fast` leaves: `slow`'s throttle holds, and `/odom` still comes.
    send(
        &mut ws,
        json!({"op": "unsubscribe", "topic": "/odom", "id": "fast"}),
    )
    .await;
    // Publishes already queued may still arrive: wait for the first two a second apart.
    let deadline = Instant::now() + WAIT;
    let mut last: Option<f64> = None;
    let mut gaps = Vec::new();
    while gaps.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "`/odom` stopped with `slow` still subscribed"
        );
        let t = odom_stamps(&mut ws, 1).await[0];
        if let Some(before) = last
            && t - before >= 0.9
        {
            gaps.push(t - before);
        }
        last = Some(t);
    }
    assert_eq!(client_topics(&run).len(), 1);

    // An id that is not there is said, and changes nothing.
    send(
        &mut ws,
        json!({"op": "unsubscribe", "topic": "/odom", "id": "nobody"}),
    )
    .await;
    let warning = loop {
        let v = next_json(&mut ws).await;
        if v["op"] == "status" {
            break v;
        }
    };
    assert_eq!(warning["level"], "warning", "{warning}");
    assert!(
        warning["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("nobody")
    );
    assert_eq!(client_topics(&run).len(), 1);

    // The last one leaves: the client has no subscription left.
    send(
        &mut ws,
        json!({"op": "unsubscribe", "topic": "/odom", "id": "slow"}),
    )
    .await;
    let deadline = Instant::now() + WAIT;
    while !client_topics(&run).is_empty() {
        assert!(Instant::now() < deadline, "still subscribed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(run);
}

/// Reads frames from a hand-written websocket until `enough` says so.
fn read_until(
    stream: &mut TcpStream,
    enough: impl Fn(&[(u8, Vec<u8>)]) -> bool,
) -> Vec<(u8, Vec<u8>)> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let frames = parse_frames(&bytes);
        if enough(&frames) {
            return frames;
        }
        let n = stream.read(&mut chunk).expect("frames within the wait");
        assert!(n > 0, "closed early");
        bytes.extend_from_slice(&chunk[..n]);
    }
}

fn texts(frames: &[(u8, Vec<u8>)]) -> Vec<Value> {
    frames
        .iter()
        .filter(|(opcode, _)| *opcode == 0x1)
        .map(|(_, payload)| serde_json::from_slice(payload).expect("JSON text"))
        .collect()
}

/// The first complete fragmented message among `frames` (`op` `fragment` or `png`):
/// its fragments, in order.
fn first_fragmented(frames: &[(u8, Vec<u8>)], op: &str) -> Option<Vec<Value>> {
    let texts = texts(frames);
    let first = texts.iter().find(|v| v["op"] == op && v["num"] == 0)?;
    let total = first["total"].as_u64()? as usize;
    let parts: Vec<Value> = texts
        .iter()
        .filter(|v| v["op"] == op && v["id"] == first["id"])
        .cloned()
        .collect();
    (parts.len() == total).then_some(parts)
}

#[test]
fn fragments_join_into_the_message() {
    let run = start(RelayConfig::default(), camera());
    let (status, mut stream) = upgrade(run.addr, &run.with_token("/"), "").expect("upgrades");
    assert_eq!(status, 101);
    let subscribe = json!({"op": "subscribe", "topic": "/odom", "fragment_size": 200});
    stream
        .write_all(&frame(0x1, subscribe.to_string().as_bytes(), true))
        .expect("sends");
    let frames = read_until(&mut stream, |f| first_fragmented(f, "fragment").is_some());
    let parts = first_fragmented(&frames, "fragment").expect("complete");
    // ROSBRIDGE_PROTOCOL.md 3.1.1: a string id, the index, the total; the data joined
    // is the JSON string of the original message.
    assert!(parts.len() > 3, "{parts:?}");
    let mut joined = String::new();
    for (num, part) in parts.iter().enumerate() {
        assert!(part["id"].is_string(), "{part}");
        assert_eq!(part["num"], num);
        assert_eq!(part["total"], parts.len());
        let data = part["data"].as_str().expect("a string");
        assert!(data.len() <= 200);
        joined.push_str(data);
    }
    let message: Value = serde_json::from_str(&joined).expect("the original JSON");
    assert_eq!(message["op"], "publish");
    assert_eq!(message["topic"], "/odom");
    assert_eq!(message["msg"]["child_frame_id"], "base_link");
    drop(stream);
    drop(run);
}

/// rosbridge's `pngcompression.decode`: the PNG's RGB bytes, `\n` padding removed.
fn png_text(data: &str) -> String {
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64");
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("sized")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    pixels.truncate(info.buffer_size());
    String::from_utf8(pixels).expect("UTF-8").replace('\n', "")
}

#[test]
fn png_is_the_json_in_an_image_whole_or_in_fragments() {
    let run = start(RelayConfig::default(), camera());
    let (_, mut stream) = upgrade(run.addr, &run.with_token("/"), "").expect("upgrades");
    let subscribe = json!({"op": "subscribe", "topic": "/odom", "compression": "png"});
    stream
        .write_all(&frame(0x1, subscribe.to_string().as_bytes(), true))
        .expect("sends");
    let frames = read_until(&mut stream, |f| texts(f).iter().any(|v| v["op"] == "png"));
    let png = texts(&frames)
        .into_iter()
        .find(|v| v["op"] == "png")
        .expect("png");
    let message: Value =
        serde_json::from_str(&png_text(png["data"].as_str().expect("data"))).expect("JSON");
    assert_eq!(
        (message["op"].as_str(), message["topic"].as_str()),
        (Some("publish"), Some("/odom"))
    );

    // With a fragment size, the PNG's base64 goes in `png` fragments (3.1.2).
    let subscribe =
        json!({"op": "subscribe", "topic": "/tf", "compression": "png", "fragment_size": 64});
    stream
        .write_all(&frame(0x1, subscribe.to_string().as_bytes(), true))
        .expect("sends");
    let frames = read_until(&mut stream, |f| first_fragmented(f, "png").is_some());
    let parts = first_fragmented(&frames, "png").expect("complete");
    let data: String = parts.iter().filter_map(|p| p["data"].as_str()).collect();
    let message: Value = serde_json::from_str(&png_text(&data)).expect("JSON");
    assert_eq!(message["topic"], "/tf");
    assert_eq!(
        message["msg"]["transforms"][0]["child_frame_id"],
        "base_link"
    );
    drop(stream);
    drop(run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cbor_raw_is_the_ros_2_cdr_with_the_relays_time() {
    let run = start(RelayConfig::default(), camera());
    let mut ws = connect(&run).await;
    send(
        &mut ws,
        json!({"op": "subscribe", "topic": "/odom", "compression": "cbor-raw"}),
    )
    .await;
    let bytes = loop {
        let frame = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a frame")
            .expect("open")
            .expect("a frame");
        if let Message::Binary(bytes) = frame {
            break bytes;
        }
    };
    let value: ciborium::Value = ciborium::from_reader(&bytes[..]).expect("CBOR");
    let get = |v: &ciborium::Value, key: &str| {
        v.as_map()
            .and_then(|m| m.iter().find(|(k, _)| k.as_text() == Some(key)))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no `{key}`"))
    };
    assert_eq!(get(&value, "op").as_text(), Some("publish"));
    assert_eq!(get(&value, "topic").as_text(), Some("/odom"));
    let msg = get(&value, "msg");
    let secs = u64::try_from(get(&msg, "secs").as_integer().expect("secs")).expect("positive");
    assert!(secs > 1_600_000_000, "the relay's wall clock: {secs}");
    assert!(get(&msg, "nsecs").as_integer().is_some());
    let cdr = get(&msg, "bytes").into_bytes().expect("bytes");
    let decoded = streamwire_ros2::decode_any("nav_msgs/msg/Odometry", cdr)
        .expect("a built-in type")
        .expect("decodes");
    let odometry = decoded.downcast_ref::<Odometry>().expect("odometry");
    let p = odometry.pose().position;
    assert!(((p.x * p.x + p.y * p.y).sqrt() - 2.0).abs() < 1e-9);
    drop(run);
}

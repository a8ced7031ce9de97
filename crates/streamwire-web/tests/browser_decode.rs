//! Browser-side decode time, JSON against CBOR, in headless chromium: the messages of the
//! encode benchmark, written by the relay's own writers, decoded by `JSON.parse` (plus the
//! base64 of `uint8[]` fields, which a client must undo to use the bytes) and by the
//! viewer's CBOR decoder (typed arrays as views). A benchmark, not a test of timing: run
//! it with `cargo test -p streamwire-web --test browser_decode -- --ignored --nocapture`.

mod common;

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use streamwire::msgs::{
    Image, ImageEncoding, Odometry, PointCloud, PointDatatype, PointField, Pose, Quaternion, Twist,
    Vector3,
};
use streamwire_web::wire;

use common::chromium as browser;

fn image() -> Image {
    let pixels: Vec<u8> = (0..640 * 480 * 3)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8 / 4 + (i % 640) as u8 / 3)
        .collect();
    Image::from_packed(640, 480, ImageEncoding::Rgb8, pixels).expect("valid")
}

fn cloud(points: u32) -> PointCloud {
    let fields = vec![
        PointField::new("x", 0, PointDatatype::Float32, 1),
        PointField::new("y", 4, PointDatatype::Float32, 1),
        PointField::new("z", 8, PointDatatype::Float32, 1),
        PointField::new("rgb", 12, PointDatatype::Float32, 1),
    ];
    let mut data = Vec::with_capacity(points as usize * 16);
    for i in 0..points {
        let a = i as f32 * 0.013;
        for v in [
            a.cos() * 3.0,
            a.sin() * 3.0,
            (i % 97) as f32 * 0.01,
            f32::from_bits(0x00ff_8040 + i),
        ] {
            data.extend_from_slice(&v.to_le_bytes());
        }
    }
    PointCloud::new(fields, points, 1, 16, points * 16, data).expect("valid")
}

fn pose() -> Odometry {
    let pose = Pose {
        position: Vector3::new(1.25, -0.5, 0.0),
        orientation: Quaternion::from_yaw(0.3),
    };
    Odometry::new("odom", "base_link", pose, Twist::default()).expect("valid")
}

const BENCH: &str = r#"
function b64(s) { const bin = atob(s); const out = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i); return out; }
const fromBase64 = Uint8Array.fromBase64 ? (s) => Uint8Array.fromBase64(s) : b64;
function useJson(text) {
  const m = JSON.parse(text);
  // A client that uses the bytes must undo the base64 of uint8[] fields.
  if (typeof m.msg.data === "string") m.msg.data = fromBase64(m.msg.data);
  return m;
}
function time(f) {
  // Repeat until 20 ms passed: performance.now() is coarse in a page.
  let n = 0; const t0 = performance.now(); let t;
  do { f(); n++; t = performance.now(); } while (t - t0 < 20);
  return (t - t0) / n;
}
function median(v) { v.sort((a, b) => a - b); return v[v.length >> 1]; }
function runBench() {
  const out = [];
  for (const c of CASES) {
    const text = new TextDecoder().decode(b64(c.json));
    const cbor = b64(c.cbor).buffer;
    const js = [], cb = [];
    for (let r = 0; r < 15; r++) { js.push(time(() => useJson(text))); cb.push(time(() => decodeCbor(cbor))); }
    out.push({ name: c.name, json_ms: median(js), cbor_ms: median(cb), json_bytes: text.length, cbor_bytes: cbor.byteLength,
      native_base64: !!Uint8Array.fromBase64 });
  }
  return out;
}
"#;

#[test]
#[ignore = "a benchmark: run with --ignored --nocapture"]
fn browser_decode_json_against_cbor() -> anyhow::Result<()> {
    if !Path::new("/usr/bin/chromium").exists() {
        streamwire_testdata::skip("/usr/bin/chromium is absent");
        return Ok(());
    }
    let viewer = include_str!("../src/viewer.html");
    let decoder = viewer
        .split("// <cbor-decoder>")
        .nth(1)
        .and_then(|rest| rest.split("// </cbor-decoder>").next())
        .expect("the viewer's decoder");
    let image = image();
    let small = cloud(1928);
    let big = cloud(80_000);
    let odometry = pose();
    let cases = [
        ("640x480 rgb8 sensor_msgs/Image", wire::image(&image)),
        (
            "1928-point sensor_msgs/PointCloud2",
            wire::point_cloud(&small),
        ),
        (
            "80,000-point sensor_msgs/PointCloud2",
            wire::point_cloud(&big),
        ),
        ("pose (nav_msgs/Odometry)", wire::odometry(&odometry)),
    ];
    let b64 = base64::engine::general_purpose::STANDARD;
    let cases_js: Vec<String> = cases
        .iter()
        .map(|(name, value)| {
            format!(
                "{{name: {name:?}, json: \"{}\", cbor: \"{}\"}}",
                b64.encode(wire::publish_json("/t", value)),
                b64.encode(wire::publish_cbor("/t", value))
            )
        })
        .collect();
    let page = format!(
        "<!doctype html><html><body><script>//{decoder}\nconst CASES = [{}];\n{BENCH}</script></body></html>",
        cases_js.join(",")
    );
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("decode-bench.html");
    std::fs::write(&path, page)?;
    let chromium = browser::Chromium::launch()?;
    let tab = chromium.tab()?;
    tab.set_default_timeout(Duration::from_secs(300));
    tab.navigate_to(&format!("file://{}", path.display()))?;
    tab.wait_until_navigated()?;
    let result = browser::eval(
        &tab,
        "(() => { try { return JSON.stringify(runBench()); } catch (e) { return JSON.stringify({ error: String(e), loaded: typeof CASES }); } })()",
    )?;
    println!(
        "| message | JSON.parse (+ base64) | CBOR decode | JSON/CBOR | JSON size | CBOR size |"
    );
    println!("|---|---|---|---|---|---|");
    for row in result.as_array().cloned().unwrap_or_default() {
        let json = row["json_ms"].as_f64().unwrap_or(0.0);
        let cbor = row["cbor_ms"].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {json:.3} ms | {cbor:.3} ms | {:.1}x | {} B | {} B |",
            row["name"].as_str().unwrap_or(""),
            json / cbor.max(1e-9),
            row["json_bytes"],
            row["cbor_bytes"],
        );
    }
    println!(
        "native Uint8Array.fromBase64: {}",
        result[0]["native_base64"]
    );
    assert_eq!(result.as_array().map(Vec::len), Some(4), "{result}");
    drop(chromium);
    Ok(())
}

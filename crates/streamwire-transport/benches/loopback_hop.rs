//! The loopback hop of a 2.76 MB image (1280x720 RGB): time and bytes allocated, beside a
//! bare `memcpy` of the same bytes, measured interleaved (every round times each case once,
//! in turn) so that the machine's drift hits all of them alike; medians of the rounds.
//!
//! Each result is kept until the next is made (a consumer holds a frame while the next
//! arrives), so every case pays for fresh memory as a real hop does.
//!
//! Run: `cargo bench -p streamwire-transport --bench loopback_hop`.

#![expect(clippy::unwrap_used, reason = "a benchmark: a failure is a bug to see")]

use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_core::{Header, Qos, Timestamp};
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_testdata::alloc::{CountingAlloc, allocated_during};
use streamwire_transport::{FrameBytes, Loopback, Transport, WireFrame};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

const ROUNDS: usize = 15;
const PER_ROUND: usize = 20;

fn main() {
    let data: Vec<u8> = (0..1280 * 720 * 3).map(|i| (i % 251) as u8).collect();
    let image = Image::from_packed(1280, 720, ImageEncoding::Rgb8, data).unwrap();
    let header = Header {
        seq: 1,
        publish_time: Timestamp::from_nanos(1),
    };
    let accepted = [(
        <Image as streamwire_core::Message>::TYPE_NAME,
        <Image as streamwire_core::Message>::SCHEMA_VERSION,
    )];

    // The hop: a publisher puts the frame, the subscriber's sink reads the image back.
    let loopback = Loopback::new();
    let publisher = loopback.publisher("color_image", Qos::DEFAULT).unwrap();
    let received: Arc<Mutex<Option<Image>>> = Arc::default();
    let sink_slot = received.clone();
    let _subscription = loopback
        .subscribe(
            "color_image",
            Qos::DEFAULT,
            Arc::new(move |frame: FrameBytes| {
                let frame = WireFrame::parse(frame).unwrap();
                let message = frame.decode_message(&accepted).unwrap();
                *sink_slot.lock() = message.downcast_ref::<Image>().cloned();
            }),
        )
        .unwrap();
    let hop = || {
        publisher
            .put(&mut |seq| WireFrame::encode(&image, header, seq, ""))
            .unwrap();
    };
    // Every case keeps its last result alive until the next one is made, as a consumer
    // holds a frame while the next arrives: each result then needs fresh memory (for a
    // 2.76 MB buffer, new pages from the kernel), as the hop's does.
    let kept_copy: Mutex<Option<Bytes>> = Mutex::default();
    let memcpy = || {
        let copy = Bytes::copy_from_slice(black_box(image.data()));
        *kept_copy.lock() = Some(black_box(copy));
    };
    let kept_frame: Mutex<Option<FrameBytes>> = Mutex::default();
    let encode = || {
        let frame = WireFrame::encode(&image, header, 1, "").unwrap();
        *kept_frame.lock() = Some(black_box(frame));
    };
    let frame = WireFrame::encode(&image, header, 1, "").unwrap();
    let kept_message = Mutex::new(None);
    let decode = || {
        let parsed = WireFrame::parse(frame.clone()).unwrap();
        *kept_message.lock() = Some(black_box(parsed.decode_message(&accepted).unwrap()));
    };

    let ((), hop_bytes) = allocated_during(hop);
    let ((), copy_bytes) = allocated_during(memcpy);
    assert_eq!(
        received.lock().as_ref().map(|i| i.data().len()),
        Some(image.data().len())
    );
    let cases: [(&str, &dyn Fn()); 4] = [
        ("memcpy 2.76 MB (one copy)", &memcpy),
        ("frame encode (send side)", &encode),
        ("frame parse + decode (receive side)", &decode),
        ("loopback hop (encode, put, decode)", &hop),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..ROUNDS {
        for (i, (_, case)) in cases.iter().enumerate() {
            let began = Instant::now();
            for _ in 0..PER_ROUND {
                case();
            }
            times[i].push(began.elapsed() / PER_ROUND as u32);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let base = median(&mut times[0].clone());
    println!(
        "loopback hop of a 1280x720 rgb8 image ({} bytes), {ROUNDS} interleaved rounds of {PER_ROUND}",
        image.data().len()
    );
    for (i, (name, _)) in cases.iter().enumerate() {
        let m = median(&mut times[i]);
        println!(
            "  {name:<40} median {:>8.3} ms  ({:.2}x memcpy)",
            m.as_secs_f64() * 1e3,
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
    println!(
        "  bytes allocated per hop: {hop_bytes} ({:.2} image sizes); per memcpy: {copy_bytes}",
        hop_bytes as f64 / image.data().len() as f64
    );
}

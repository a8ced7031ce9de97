//! Zero copies at the zenoh edge: 720p images from a sender in another process, received
//! here through a real zenoh session on loopback.
//!
//! - With shared memory at both ends, a received image's pixels lie inside a zenoh segment
//!   mapped in this process (its address checked against `/proc/self/maps`), and receiving
//!   a frame allocates nothing of a payload's size (a counting allocator over every thread
//!   of this process, zenoh's included).
//! - Over TCP, a frame arrives in fragments: its pixels are copied once into one buffer,
//!   counted as a blob copy, and nothing else of that size is allocated.
//!
//! - A frame the sender writes into a loan of its session's shared memory is sent by
//!   reference: no payload-sized allocation in the sender either.
//! - A run whose consumer holds every frame it receives empties the shared-memory pool:
//!   the producer keeps publishing into heap buffers, counted as `loan_fallback`, and
//!   every frame is delivered and accounted for.
//!
//! A plain `main` (`harness = false`): the sender is this binary started again, and must
//! not run the tests. Sessions listen on 127.0.0.1 and connect by explicit endpoint;
//! every wait is bounded; the sender's shared-memory segments are removed once it ends.

#![expect(clippy::unwrap_used, reason = "a test: a failure is the test failing")]

use parking_lot::Mutex;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use streamwire_core::{
    Context, Durability, Header, History, In, Message, Node, NodeResult, Out, Qos, Reliability,
    Timestamp, Trigger,
};
use streamwire_graph::{Blueprint, Placement};
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_runtime::{RunOptions, Runtime};
use streamwire_testdata::alloc::{
    CountingAlloc, allocations_of_at_least, count_allocations_of_at_least,
};
use streamwire_transport::{FrameBytes, Transport, WireFrame};
use streamwire_zenoh::{
    SharedMemory, ZenohOptions, ZenohTransport, in_shared_memory, is_zenoh_buffer,
};

mod common;

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Frames the sender sends, 20 ms apart.
const FRAMES: u64 = 60;
/// Frames left out of the measurement at the start (connections settling); through shared
/// memory, at most this many may arrive before zenoh's pool is made.
const WARM_UP: usize = 10;
/// An allocation of this size or more is a copy of a payload (a frame is 2.76 MB).
const PAYLOAD_SIZED: usize = 1_000_000;
const GUARD: Duration = Duration::from_secs(30);

/// Every frame delivered (a keep-all stream blocks rather than drops), so that the
/// receiver sees each one.
const EVERY_FRAME: Qos = Qos {
    reliability: Reliability::Reliable,
    durability: Durability::Volatile,
    history: History::KeepAll,
};

/// What the receiver saw of one frame.
#[derive(Clone, Copy, Debug)]
struct Received {
    link_seq: u64,
    pixels_in_shared_memory: bool,
    copies: u64,
    /// Payload-sized allocations in this process so far, after this frame was read.
    large_allocations: usize,
}

/// Zenoh's shared memory, on (its default pool) or off.
fn pool(on: bool) -> SharedMemory {
    if on {
        SharedMemory::default()
    } else {
        SharedMemory::off()
    }
}

fn image() -> Image {
    let data: Vec<u8> = (0..1280 * 720 * 3).map(|i| (i % 251) as u8).collect();
    Image::from_packed(1280, 720, ImageEncoding::Rgb8, data).unwrap()
}

/// How the sender makes its frames.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Send {
    /// One heap image, sent again and again.
    Heap,
    /// Each frame written into a loan of the session's shared memory.
    Loaned,
}

/// The sender, in its own process: `FRAMES` images to `endpoint`, then it ends. Loaned,
/// it prints how many payload-sized allocations it made after the warm-up, and how many
/// frames were sent by reference.
fn sender_main(endpoint: String, shared_memory: bool, send: Send) -> ! {
    let transport = ZenohTransport::open(&ZenohOptions {
        run_id: "zero-copy".to_owned(),
        listen: Vec::new(),
        connect: vec![endpoint],
        gossip: false,
        shared_memory: pool(shared_memory),
        ..ZenohOptions::default()
    })
    .unwrap();
    let publisher = transport.publisher("camera", EVERY_FRAME).unwrap();
    let began = Instant::now();
    while !publisher.is_matched() && began.elapsed() < GUARD {
        std::thread::sleep(Duration::from_millis(10));
    }
    let heap = image();
    let loans = transport.loans();
    let (mut large_at_warm_up, mut by_reference) = (0, 0);
    for seq in 0..FRAMES {
        let header = Header {
            seq,
            publish_time: Timestamp::from_nanos(seq),
        };
        if seq == WARM_UP as u64 {
            large_at_warm_up = allocations_of_at_least();
        }
        let image = match send {
            Send::Heap => heap.clone(),
            Send::Loaned => {
                let mut loan = match loans.as_ref().unwrap().loan(1280 * 720 * 3) {
                    Some(shared) => streamwire_core::buffer::Loan::shared(shared),
                    None => streamwire_core::buffer::Loan::heap(1280 * 720 * 3),
                };
                for (i, byte) in loan.iter_mut().enumerate() {
                    *byte = (i % 251) as u8;
                }
                let pixels = loan.freeze();
                if seq >= WARM_UP as u64 && is_zenoh_buffer(&pixels) {
                    by_reference += 1;
                }
                Image::from_packed(1280, 720, ImageEncoding::Rgb8, pixels).unwrap()
            }
        };
        publisher
            .put(&mut |link_seq| WireFrame::encode(&image, header, link_seq, ""))
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    if send == Send::Loaned {
        println!(
            "SENDER large_allocations={} by_reference={by_reference}",
            allocations_of_at_least() - large_at_warm_up
        );
    }
    // Long enough for the last frames to be read before the segment's owner goes.
    std::thread::sleep(Duration::from_millis(500));
    transport.close();
    std::process::exit(0)
}

/// Receives the sender's frames here, reading each as the runtime's ingress does; returns
/// them and what the sender printed.
fn receive(shared_memory: bool, send: Send) -> (Vec<Received>, String) {
    let transport = ZenohTransport::open(&ZenohOptions {
        run_id: "zero-copy".to_owned(),
        shared_memory: pool(shared_memory),
        ..ZenohOptions::default()
    })
    .unwrap();
    let endpoint = transport
        .locators()
        .into_iter()
        .find(|l| l.starts_with("tcp/127.0.0.1:"))
        .unwrap();
    let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
    let sink = seen.clone();
    let accepted = [(Image::TYPE_NAME, Image::SCHEMA_VERSION)];
    let subscription = transport
        .subscribe(
            "camera",
            EVERY_FRAME,
            Arc::new(move |bytes: FrameBytes| {
                let frame = WireFrame::parse(bytes).unwrap();
                let message = frame.decode_message(&accepted).unwrap();
                let image = message.downcast_ref::<Image>().unwrap();
                assert_eq!(image.data().len(), 1280 * 720 * 3);
                assert_eq!(image.data()[1000], (1000 % 251) as u8);
                sink.lock().push(Received {
                    link_seq: frame.head.link_seq,
                    pixels_in_shared_memory: in_shared_memory(image.data()),
                    copies: frame.copies(),
                    large_allocations: allocations_of_at_least(),
                });
            }),
        )
        .unwrap();
    let mut sender = Command::new(std::env::current_exe().unwrap())
        .env("SW_TEST_ZERO_COPY_SENDER", &endpoint)
        .env(
            "SW_TEST_ZERO_COPY_SHM",
            if shared_memory { "1" } else { "0" },
        )
        .env(
            "SW_TEST_ZERO_COPY_LOANED",
            if send == Send::Loaned { "1" } else { "0" },
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut sender_out = sender.stdout.take().unwrap();
    let printed = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut sender_out, &mut text);
        text
    });
    let began = Instant::now();
    while seen.lock().len() < FRAMES as usize && began.elapsed() < GUARD {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = loop {
        if let Some(status) = sender.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > GUARD {
            let _ = sender.kill();
            break sender.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "the sender failed: {status}");
    drop(subscription);
    transport.close();
    let seen = seen.lock().clone();
    assert_eq!(
        seen.iter().map(|r| r.link_seq).collect::<Vec<_>>(),
        (0..FRAMES).collect::<Vec<_>>(),
        "every frame arrived, in order"
    );
    (seen, printed.join().unwrap())
}

/// Payload-sized allocations while the frames after `seen[start]` were received, and
/// those frames.
fn after(seen: &[Received], start: usize) -> (usize, &[Received]) {
    let measured = &seen[start + 1..];
    let large = measured.last().unwrap().large_allocations - seen[start].large_allocations;
    (large, measured)
}

fn with_shared_memory_the_pixels_are_read_where_zenoh_put_them() {
    let (seen, _) = receive(true, Send::Heap);
    // Zenoh makes its pool on the first large payload, on a thread: the frames sent
    // meanwhile travel as bytes. Measured from the first that came through the pool.
    let first = seen
        .iter()
        .position(|r| r.pixels_in_shared_memory)
        .expect("no frame came through shared memory");
    assert!(first < WARM_UP, "the pool took {first} frames to be made");
    let (large, measured) = after(&seen, first);
    assert!(
        measured.iter().all(|r| r.pixels_in_shared_memory),
        "pixels outside shared memory: {measured:?}"
    );
    assert!(measured.iter().all(|r| r.copies == 0), "{measured:?}");
    println!(
        "shared memory: frames {first}.. of {} through the pool, {large} payload-sized \
         allocations while receiving {} frames",
        seen.len(),
        measured.len()
    );
    assert_eq!(
        large,
        0,
        "payload-sized allocations while receiving {} frames through shared memory",
        measured.len()
    );
}

fn over_tcp_a_frame_in_fragments_is_copied_once_and_counted() {
    let (seen, _) = receive(false, Send::Heap);
    let (large, measured) = after(&seen, WARM_UP);
    assert!(measured.iter().all(|r| !r.pixels_in_shared_memory));
    let copies: u64 = measured.iter().map(|r| r.copies).sum();
    println!(
        "tcp: {copies} blob copies and {large} payload-sized allocations while receiving {} \
         frames",
        measured.len()
    );
    assert_eq!(
        copies,
        measured.len() as u64,
        "each 2.76 MB frame arrives in fragments: one blob copy each"
    );
    assert!(
        large <= measured.len(),
        "{large} payload-sized allocations for {} frames over TCP",
        measured.len()
    );
}

fn a_loaned_frame_crosses_with_no_payload_sized_allocation_on_either_side() {
    let (seen, printed) = receive(true, Send::Loaned);
    let field = |name: &str| -> usize {
        printed
            .split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the sender printed no {name}: {printed:?}"))
    };
    let (sender_large, by_reference) = (field("large_allocations"), field("by_reference"));
    let (receiver_large, measured) = after(&seen, WARM_UP);
    println!(
        "loaned: sender {sender_large} and receiver {receiver_large} payload-sized \
         allocations over {} frames; {by_reference} sent by reference",
        measured.len()
    );
    assert_eq!(
        by_reference,
        FRAMES as usize - WARM_UP,
        "every loan from the warm-up on was shared memory"
    );
    assert!(
        measured
            .iter()
            .all(|r| r.pixels_in_shared_memory && r.copies == 0)
    );
    assert_eq!(sender_large, 0, "payload-sized allocations in the sender");
    assert_eq!(
        receiver_large, 0,
        "payload-sized allocations in the receiver"
    );
}

/// A camera whose 64 KiB frames are written into loans of its output.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct LoaningCamera {
    #[port(reliable, keep_all)]
    image: Out<Image>,
    #[config]
    count: u32,
    #[state]
    sent: u32,
}

impl Node for LoaningCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(2))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == self.count {
            cx.finish();
            return Ok(());
        }
        let mut pixels = self.image.loan(128 * 128 * 4)?;
        pixels.fill((self.sent % 251) as u8);
        let image = Image::from_packed(128, 128, ImageEncoding::Rgba8, pixels.freeze())?;
        self.image.publish(image)?;
        self.sent += 1;
        Ok(())
    }
}

/// Keeps every frame it receives until it finishes: the producer's shared-memory chunks
/// stay pinned.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct Hoarder {
    #[port(name = "image", keep_all)]
    frames: In<Image>,
    #[state]
    kept: Vec<Image>,
}

impl Node for Hoarder {
    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        while let Some(frame) = self.frames.recv()? {
            assert!(
                frame
                    .message
                    .data()
                    .iter()
                    .all(|b| *b == frame.message.data()[0])
            );
            self.kept.push(frame.message);
            cx.counter("kept").increment();
        }
        Ok(())
    }
}

fn a_full_pool_falls_back_to_the_heap_and_the_producer_keeps_publishing() {
    // 1 MiB of shared memory (the smallest pool) holds 16 frames of 64 KiB: 60 frames
    // held by the consumer empty it.
    let small = SharedMemory {
        enabled: true,
        pool_bytes: 1 << 20,
    };
    let first = ZenohTransport::open(&ZenohOptions {
        run_id: "loans".to_owned(),
        shared_memory: small,
        ..ZenohOptions::default()
    })
    .unwrap();
    let second = ZenohTransport::open(&ZenohOptions {
        run_id: "loans".to_owned(),
        listen: Vec::new(),
        connect: vec![first.locators()[0].clone()],
        shared_memory: small,
        ..ZenohOptions::default()
    })
    .unwrap();
    let blueprint = || {
        let mut bp = Blueprint::new();
        bp.add(
            "camera",
            LoaningCamera {
                image: Out::new(),
                count: FRAMES as u32,
                sent: 0,
            },
        );
        let hoarder = bp.add(
            "hoarder",
            Hoarder {
                frames: In::new(),
                kept: Vec::new(),
            },
        );
        bp.place(&hoarder, Placement::process("ui"));
        bp.autoconnect();
        bp
    };
    let gate = streamwire_runtime::StartGate::closed();
    let start = |session: &ZenohTransport, process: &str| {
        Runtime::start(
            blueprint().into_runnable().unwrap(),
            RunOptions {
                transport: Some(Arc::new(session.clone())),
                local: Some(process.to_owned()),
                start_gate: Some(gate.clone()),
                ..RunOptions::default()
            },
        )
        .unwrap()
    };
    let (camera, hoarder) = (
        start(&first, "localhost/main"),
        start(&second, "localhost/ui"),
    );
    let began = Instant::now();
    while !(camera.unmatched_links().is_empty() && hoarder.unmatched_links().is_empty())
        && began.elapsed() < GUARD
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    gate.open();
    let camera = common::balanced(camera.wait_timeout(GUARD));
    let hoarder = common::balanced(hoarder.wait_timeout(GUARD));
    common::balanced_merge(&[("main", &camera), ("ui", &hoarder)]);
    println!("{camera}");
    assert_eq!(
        hoarder.stats.counter("hoarder", "kept"),
        FRAMES,
        "{hoarder}"
    );
    let loans = camera
        .stats
        .buffers
        .iter()
        .find(|b| b.name == "camera.image")
        .unwrap_or_else(|| panic!("no loans in the report: {camera}"));
    assert_eq!(loans.shared + loans.loan_fallback, FRAMES, "{camera}");
    assert!(
        loans.shared >= 8,
        "the pool served the first frames: {camera}"
    );
    assert!(loans.loan_fallback > 0, "the full pool fell back: {camera}");
    assert_eq!(
        loans.hits + loans.misses,
        loans.loan_fallback,
        "every fallback came from the output's heap pool: {camera}"
    );
    first.close();
    second.close();
}

fn main() {
    if let Ok(endpoint) = std::env::var("SW_TEST_ZERO_COPY_SENDER") {
        let shared_memory = std::env::var("SW_TEST_ZERO_COPY_SHM").is_ok_and(|v| v == "1");
        let send = if std::env::var("SW_TEST_ZERO_COPY_LOANED").is_ok_and(|v| v == "1") {
            Send::Loaned
        } else {
            Send::Heap
        };
        if send == Send::Loaned {
            count_allocations_of_at_least(PAYLOAD_SIZED);
        }
        sender_main(endpoint, shared_memory, send);
    }
    let tests: [(&str, fn()); 4] = [
        (
            "with_shared_memory_the_pixels_are_read_where_zenoh_put_them",
            with_shared_memory_the_pixels_are_read_where_zenoh_put_them,
        ),
        (
            "over_tcp_a_frame_in_fragments_is_copied_once_and_counted",
            over_tcp_a_frame_in_fragments_is_copied_once_and_counted,
        ),
        (
            "a_loaned_frame_crosses_with_no_payload_sized_allocation_on_either_side",
            a_loaned_frame_crosses_with_no_payload_sized_allocation_on_either_side,
        ),
        (
            "a_full_pool_falls_back_to_the_heap_and_the_producer_keeps_publishing",
            a_full_pool_falls_back_to_the_heap_and_the_producer_keeps_publishing,
        ),
    ];
    // A case runs in a process of its own (receiving there, its sender in another), so
    // that every shared-memory segment can be removed once both have ended.
    if let Ok(case) = std::env::var("SW_TEST_ZERO_COPY_CASE") {
        count_allocations_of_at_least(PAYLOAD_SIZED);
        if let Some((_, test)) = tests.iter().find(|(name, _)| *name == case) {
            test();
        }
        std::process::exit(0);
    }
    let before = streamwire_testdata::shm::zenoh_files();
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = Vec::new();
    for (name, _) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let status = Command::new(std::env::current_exe().unwrap())
            .env("SW_TEST_ZERO_COPY_CASE", name)
            .status()
            .unwrap();
        println!(
            "test {name} ... {}",
            if status.success() { "ok" } else { "FAILED" }
        );
        if !status.success() {
            failed.push(name);
        }
    }
    // Every process that made a segment has ended (a failed case's too): its segments are
    // removed now.
    streamwire_zenoh::remove_orphaned_shared_memory();
    let left: Vec<String> = streamwire_testdata::shm::left_since(&before);
    assert!(failed.is_empty(), "failed: {failed:?}");
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

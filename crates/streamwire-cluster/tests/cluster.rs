//! Distributed runs for real: a coordinator in this process starts workers as child
//! processes, and the workers are this same test binary (started with `SW_TEST_WORKER`
//! set, it runs one process of a scenario's plan with `run_worker` and exits), so the
//! scenarios' modules exist on both sides. Everything on loopback, multicast off; every
//! wait bounded; every child reaped (the tests check that no worker outlives its run).
//!
//! A plain `main` (`harness = false`): a child must not run the tests.

#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "test code: a failure is the test failing"
)]

use parking_lot::Mutex;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_cluster::{
    ClusterError, ClusterReport, Coordinator, CoordinatorOptions, Credential, Launch, StartHint,
    WorkerOptions, run_worker, shared_memory_pool,
};
use streamwire_core::DropReason;
use streamwire_core::{
    Context, Durability, History, In, Node, NodeResult, Out, Qos, Reliability, Timestamp, Trigger,
};
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, Supervision, WireFormat};
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_runtime::{CodecRole, EndReason, RunReport, WireDirection};
use streamwire_transport::{FrameBytes, Transport};
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};
use zenoh::Wait;

// The scenarios' modules are the zenoh transport's test modules: one definition for both
// crates' tests.
#[path = "../../streamwire-zenoh/tests/common/mod.rs"]
mod common;
use common::{Camera, Recorder, SensorCamera, SlowViewer, Viewer, counter};

/// The longest any scenario may take.
const GUARD: Duration = Duration::from_secs(60);

/// Frames of the finite scenarios.
const FRAMES: u32 = 40;

/// Frames of the closed run under attack (5 ms apart: 10 s, for the attacks to happen
/// while it runs).
const CLOSED_FRAMES: u32 = 2000;

/// A camera of raw 640 x 480 RGB frames (921,600 bytes: large enough for shared memory),
/// every 20 ms, until stopped. A plain `Out<Image>`: raw on every link.
#[derive(Module)]
#[module(crate = streamwire_core)]
struct BigCamera {
    #[port(keep_all)]
    color_image: Out<Image>,
    #[state]
    sent: u32,
}

impl Node for BigCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(20))
    }

    fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
        // Written into a loan of the output: the worker's shared memory.
        let mut data = self.color_image.loan(640 * 480 * 3)?;
        data.fill((self.sent % 251) as u8);
        let image = Image::from_packed(640, 480, ImageEncoding::Rgb8, data.freeze())?
            .with_stamp(Timestamp::from_nanos(u64::from(self.sent) + 1));
        self.color_image.publish(image)?;
        self.sent += 1;
        Ok(())
    }
}

/// Frames of the link camera.
const LINK_FRAMES: u32 = 60;

/// A camera of [`LINK_FRAMES`] raw 320 x 240 RGB frames (230,400 bytes), every 10 ms,
/// then done: a plain `Out<Image>`, raw on every link, large enough that the frames
/// outweigh what else crosses a link (handshakes, liveliness, the workers' states).
#[derive(Module)]
#[module(crate = streamwire_core)]
struct LinkCamera {
    #[port(keep_all)]
    color_image: Out<Image>,
    #[state]
    sent: u32,
}

impl Node for LinkCamera {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(10))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.sent == LINK_FRAMES {
            cx.finish();
            return Ok(());
        }
        let data: Vec<u8> = (0..320 * 240 * 3)
            .map(|i: u32| (i.wrapping_mul(31).wrapping_add(self.sent) % 251) as u8)
            .collect();
        let image = Image::from_packed(320, 240, ImageEncoding::Rgb8, data)?
            .with_stamp(Timestamp::from_nanos(u64::from(self.sent) + 1));
        self.color_image.publish(image)?;
        self.sent += 1;
        Ok(())
    }
}

/// A module without ports that taps the camera's encoded stream from its own process, as
/// the web relay does for a client: the tap's own ingress crosses the wire.
#[derive(Module, Default)]
#[module(crate = streamwire_core)]
struct Tapper {
    #[state]
    tap: Option<Box<dyn streamwire_core::StreamTap>>,
    /// Drop the tap ingress's subscription once this many messages arrived (the test
    /// hook of issue 50), once.
    #[state]
    cut_after: Option<u32>,
    #[state]
    received: u32,
}

impl Node for Tapper {
    fn trigger(&self) -> Trigger {
        Trigger::Period(Duration::from_millis(10))
    }

    fn step(&mut self, cx: &mut Context<'_>) -> NodeResult {
        if self.tap.is_none()
            && let Some(taps) = cx.taps()
        {
            self.tap = Some(taps.tap("color_image/compressed", None)?);
        }
        if let Some(tap) = &self.tap {
            while tap.recv_timeout(Duration::ZERO).is_some() {
                self.received += 1;
            }
        }
        if self.cut_after.is_some_and(|n| self.received >= n) {
            // Taken by the tap's next read.
            streamwire_runtime::cut_next_tap_ingress();
            self.cut_after = None;
        }
        Ok(())
    }
}

/// The link camera on this host and three viewers on host `remote`, a process each.
fn fanout_scenario(bp: &mut Blueprint) {
    let camera = bp.add(
        "camera",
        LinkCamera {
            color_image: Out::new(),
            sent: 0,
        },
    );
    bp.place(&camera, Placement::process("cam"));
    for n in 1..=3 {
        let viewer = bp.add(&format!("viewer{n}"), Viewer { frames: In::new() });
        bp.place(
            &viewer,
            Placement::process(format!("ui{n}")).on_host("remote"),
        );
    }
}

/// The plan of scenario `name` (`variant` changes it, for the refused worker).
fn scenario(name: &str, variant: &str) -> Blueprint {
    let mut bp = Blueprint::new();
    match name {
        // Keep-all everywhere: every frame must arrive, in three workers.
        "reliable" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: FRAMES,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            let recorder = bp.add("recorder", Recorder { jpeg: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui"))
                .place(&recorder, Placement::process("web"));
        }
        // Sensor QoS and a consumer slower than its producer: drops, counted.
        "sensor" => {
            let camera = bp.add(
                "camera",
                SensorCamera {
                    color_image: Out::new(),
                    count: 300,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", SlowViewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui"));
        }
        // A camera that never ends, a viewer that may be killed and restarted.
        "endless" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: u32::MAX,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui"));
            bp.supervision(Supervision::Restart { max: 2 });
        }
        // The viewer on another host, which this coordinator does not start.
        "two-hosts" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: u32::MAX,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui").on_host("laptop"));
            if variant == "different" {
                bp.codec_default("jpeg_quality", 50);
            }
        }
        // A closed run under attack: the camera runs long enough for the attacks.
        "closed" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: CLOSED_FRAMES,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui").on_host("laptop"));
        }
        // The viewer on host `remote`, in another network namespace: a real link.
        "netns" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: FRAMES,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui").on_host("remote"));
        }
        // Three viewers on host `remote`, in another network namespace: one copy of the
        // raw stream crosses the veth, received by `remote/ui1`, handed on to the others.
        "netns-fanout" => fanout_scenario(&mut bp),
        // Raw 921 KB frames between two workers of one host: shared memory.
        "shm" => {
            let camera = bp.add(
                "camera",
                BigCamera {
                    color_image: Out::new(),
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui"));
        }
        // The closed run's plan with the camera on another host (started by hand, with
        // its secret file: the credential a member of the run puts frames with).
        "member" => {
            let camera = bp.add(
                "camera",
                Camera {
                    color_image: Out::new(),
                    count: CLOSED_FRAMES,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", Viewer { frames: In::new() });
            bp.place(&camera, Placement::process("cam").on_host("rig"))
                .place(&viewer, Placement::process("ui"));
        }
        // A best-effort camera, its planned viewer, and a tap of its stream in a third
        // process (the web relay's place).
        "tap" | "tap-cut" => {
            let camera = bp.add(
                "camera",
                SensorCamera {
                    color_image: Out::new(),
                    count: u32::MAX,
                    sent: 0,
                },
            );
            let viewer = bp.add("viewer", SlowViewer { frames: In::new() });
            // `tap-cut`: the tap's subscription goes away once it received.
            let tapper = Tapper {
                cut_after: (name == "tap-cut").then_some(10),
                ..Tapper::default()
            };
            let tapper = bp.add("tapper", tapper);
            bp.place(&camera, Placement::process("cam"))
                .place(&viewer, Placement::process("ui"))
                .place(&tapper, Placement::process("web"));
        }
        other => panic!("no scenario {other}"),
    }
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    // Keep-all viewers of best-effort cameras in other processes: let through (what the
    // wire would lose is counted `lost_on_wire` on their rows).
    bp.lossy_path(streamwire_graph::Report::Warn);
    bp.autoconnect();
    bp
}

/// A child: one worker of a scenario, then exit.
fn worker_main(process: String) -> ! {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let runnable = scenario(&var("SW_TEST_SCENARIO"), &var("SW_TEST_VARIANT"))
        .into_runnable()
        .unwrap();
    // A closed run's credential: from the coordinator through standard input, or from
    // the secret file of a worker started by hand.
    let credential = match var("SW_TEST_SECRET_FILE") {
        file if !file.is_empty() => Some(read_secret_file(std::path::Path::new(&file))),
        _ if var("SW_TEST_CREDENTIAL") == "stdin" => {
            Some(Credential::read_from(&mut std::io::stdin().lock()).unwrap())
        }
        _ => None,
    };
    let options = WorkerOptions {
        credential,
        process: process.clone(),
        run_id: Some(var("SW_TEST_RUN")).filter(|r| !r.is_empty()),
        connect: var("SW_TEST_CONNECT")
            .split(',')
            .map(str::to_owned)
            .collect(),
        listen: match var("SW_TEST_LISTEN") {
            listen if listen.is_empty() => WorkerOptions::default().listen,
            listen => vec![listen],
        },
        join_timeout: Duration::from_secs(10),
        watch_stdin: var("SW_TEST_SUPERVISED") == "1",
        shared_memory: var("SW_TEST_NO_SHM") != process,
        ..WorkerOptions::default()
    };
    let stop = AtomicBool::new(false);
    let result = run_worker(runnable, &options, &stop, &mut |event| {
        eprintln!("[{process}] {event}");
    });
    match result {
        Ok(report) if report.reason != EndReason::Failed => std::process::exit(0),
        Ok(report) => {
            eprintln!("[{process}] failed: {report}");
            std::process::exit(1)
        }
        Err(error) => {
            eprintln!("[{process}] error: {error}");
            std::process::exit(2)
        }
    }
}

/// A secret file, once its coordinator has written it (a worker started by hand may start
/// first).
fn read_secret_file(path: &std::path::Path) -> Credential {
    let began = Instant::now();
    while !path.exists() && began.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    Credential::read_file(path).unwrap()
}

/// The command that starts a worker of `scenario`: this binary.
fn launcher(scenario: &'static str) -> impl Fn(&Launch) -> Command {
    launcher_without_shm(scenario, "")
}

/// The same, with shared memory off in the worker of `no_shm` (a `host/process`).
fn launcher_without_shm(
    scenario: &'static str,
    no_shm: &'static str,
) -> impl Fn(&Launch) -> Command {
    move |launch: &Launch| {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env("SW_TEST_WORKER", &launch.process)
            .env("SW_TEST_SCENARIO", scenario)
            .env("SW_TEST_RUN", &launch.run_id)
            .env("SW_TEST_CONNECT", launch.connect.join(","))
            .env("SW_TEST_SUPERVISED", "1")
            .env(
                "SW_TEST_CREDENTIAL",
                if launch.credential_on_stdin {
                    "stdin"
                } else {
                    ""
                },
            )
            .env("SW_TEST_NO_SHM", no_shm);
        c
    }
}

fn options(run_id: &str) -> CoordinatorOptions {
    CoordinatorOptions {
        run_id: run_id.to_owned(),
        join_timeout: Duration::from_secs(20),
        ..CoordinatorOptions::default()
    }
}

/// Runs scenario `name` to its end (or until `stop`), collecting the coordinator's events.
fn coordinate(
    name: &'static str,
    options: CoordinatorOptions,
    stop: &AtomicBool,
    events: &Mutex<Vec<String>>,
) -> Result<ClusterReport, ClusterError> {
    let plan = scenario(name, "").build().unwrap();
    let coordinator = Coordinator::start(&plan, options)?;
    coordinator.run(&launcher(name), stop, &mut |event| {
        eprintln!("coordinator: {event}");
        events.lock().push(event.to_owned());
    })
}

/// The pid in an event `worker `P` started (pid N)`.
fn pids(events: &[String], process: &str) -> Vec<u32> {
    let prefix = format!("worker `{process}` started (pid ");
    events
        .iter()
        .filter_map(|e| e.strip_prefix(&prefix)?.strip_suffix(')')?.parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The report's row of the image bytes' crossing, sending or receiving.
fn wire(report: &RunReport, direction: WireDirection) -> &streamwire_runtime::WireStats {
    report
        .stats
        .wire
        .iter()
        .find(|w| w.direction == direction && w.key == "color_image/compressed")
        .unwrap_or_else(|| panic!("no {direction:?} row: {report}"))
}

fn input<'r>(report: &'r RunReport, port: &str) -> &'r streamwire_runtime::InputStats {
    report
        .stats
        .inputs
        .iter()
        .find(|i| i.port == port)
        .unwrap_or_else(|| panic!("no input {port}: {report}"))
}

/// Three workers, keep-all: every frame reaches the viewer (decoded once, in its
/// process) and the recorder (the bytes, no decode in its process); the camera's process
/// encodes each frame once; nothing was lost at start (the sources waited for every
/// subscriber).
fn every_frame_crosses_three_workers() {
    let events = Mutex::new(Vec::new());
    let cluster = coordinate(
        "reliable",
        options("reliable"),
        &AtomicBool::new(false),
        &events,
    )
    .unwrap();
    let report = &common::balanced(cluster.report.clone());
    assert_eq!(report.reason, EndReason::Finished, "{cluster}");
    assert_eq!(cluster.workers.len(), 3, "{cluster}");
    assert!(cluster.workers.iter().all(|w| w.reported), "{cluster}");
    assert_eq!(counter(&report.stats, "viewer", "seen"), u64::from(FRAMES));
    assert_eq!(
        counter(&report.stats, "recorder", "recorded"),
        u64::from(FRAMES)
    );
    let codecs: Vec<(CodecRole, &str, u64)> = report
        .stats
        .codecs
        .iter()
        .map(|c| (c.role, c.placement.as_str(), c.done))
        .collect();
    assert_eq!(
        codecs,
        [
            (CodecRole::Encode, "localhost/cam", u64::from(FRAMES)),
            (CodecRole::Decode, "localhost/ui", u64::from(FRAMES)),
        ],
        "{cluster}"
    );
    let sent = wire(report, WireDirection::Out);
    assert_eq!(
        sent.unmatched, 0,
        "nothing sent before every subscriber: {cluster}"
    );
    let events = events.lock();
    for process in ["localhost/cam", "localhost/ui", "localhost/web"] {
        for pid in pids(&events, process) {
            assert!(!alive(pid), "worker {process} (pid {pid}) outlived its run");
        }
    }
}

/// Sensor QoS, a slow consumer in another worker: every frame the camera published is
/// delivered or counted as dropped somewhere on its way (the sender's queue, the wire,
/// the input's queue).
fn under_sensor_qos_every_frame_is_delivered_or_counted() {
    let events = Mutex::new(Vec::new());
    let cluster = coordinate(
        "sensor",
        options("sensor"),
        &AtomicBool::new(false),
        &events,
    )
    .unwrap();
    let report = &common::balanced(cluster.report.clone());
    assert_eq!(report.reason, EndReason::Finished, "{cluster}");
    let published = report
        .stats
        .outputs
        .iter()
        .find(|o| o.port == "camera.color_image")
        .unwrap()
        .published;
    assert_eq!(published, 300, "{cluster}");
    let encode = report
        .stats
        .codecs
        .iter()
        .find(|c| c.role == CodecRole::Encode)
        .unwrap();
    let sent = wire(report, WireDirection::Out);
    let received = wire(report, WireDirection::In);
    let decode = report
        .stats
        .codecs
        .iter()
        .find(|c| c.role == CodecRole::Decode)
        .unwrap();
    let viewer = input(report, "viewer.frames");
    // Each hop: what came in = what went on + what it counted as dropped.
    assert_eq!(
        published,
        encode.done + encode.dropped + encode.skipped + encode.failed,
        "camera -> encoder: {cluster}"
    );
    // The sender's frames include the end of the stream.
    assert_eq!(
        encode.done,
        sent.frames - 1 + sent.sender_dropped + sent.unmatched,
        "encoder -> wire: {cluster}"
    );
    assert_eq!(
        sent.frames,
        received.frames + received.lost,
        "on the wire: {cluster}"
    );
    assert_eq!(
        received.frames - 1,
        decode.done + decode.dropped + decode.failed,
        "wire -> decoder: {cluster}"
    );
    // The viewer's row also carries the losses upstream of it (codec queues, sender, wire:
    // RFC.md section 9), already counted on the hops above; this hop is its own queue's.
    let upstream = [
        DropReason::CodecQueueFull,
        DropReason::SenderDropped,
        DropReason::LostOnWire,
        DropReason::DecodeFailed,
    ]
    .iter()
    .map(|&reason| viewer.dropped.get(reason))
    .sum::<u64>();
    assert_eq!(
        decode.done,
        viewer.delivered + viewer.dropped.total() - upstream + viewer.unprocessed_at_stop,
        "decoder -> viewer: {cluster}"
    );
    assert!(
        viewer.dropped.get(DropReason::QueueFull) > 0 || decode.dropped > 0,
        "a consumer 3x slower than its producer drops: {cluster}"
    );
}

/// Two sessions on loopback, each with its own shared memory: the first listens, the
/// second connects to it.
fn pair_with(
    run_id: &str,
    first: SharedMemory,
    second: SharedMemory,
) -> (ZenohTransport, ZenohTransport) {
    let a = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        shared_memory: first,
        ..ZenohOptions::default()
    })
    .unwrap();
    let endpoint = a.locators()[0].clone();
    let b = ZenohTransport::open(&ZenohOptions {
        run_id: run_id.to_owned(),
        listen: Vec::new(),
        connect: vec![endpoint],
        shared_memory: second,
        ..ZenohOptions::default()
    })
    .unwrap();
    (a, b)
}

fn pair(run_id: &str) -> (ZenohTransport, ZenohTransport) {
    pair_with(run_id, SharedMemory::default(), SharedMemory::default())
}

fn until(mut done: impl FnMut() -> bool) -> bool {
    let began = Instant::now();
    while began.elapsed() < GUARD {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Sends frames of 1 MB from `a` to `b`, 10 ms apart, until `b` has received `shared` of
/// them in shared memory (zenoh makes its pool on the first large frame, on a thread: the
/// frames sent meanwhile travel as bytes) or `limit` were sent; returns what arrived.
fn send_large(
    a: &ZenohTransport,
    b: &ZenohTransport,
    key: &str,
    shared: u64,
    limit: usize,
) -> Vec<Bytes> {
    let keep_all = Qos {
        reliability: Reliability::Reliable,
        durability: Durability::Volatile,
        history: History::KeepAll,
    };
    let publisher = a.publisher(key, keep_all).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let subscription = b
        .subscribe(
            key,
            keep_all,
            Arc::new(move |frame: FrameBytes| sink.lock().push(frame.to_bytes())),
        )
        .unwrap();
    assert!(until(|| publisher.is_matched()), "never matched");
    let mut sent = 0;
    while sent < limit && b.shared_memory_stats().received_shared < shared {
        let payload = Bytes::from(vec![sent as u8; 1_000_000]);
        publisher.put(&mut |_| Ok(payload.clone().into())).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        until(|| got.lock().len() == sent),
        "{} of {sent} arrived",
        got.lock().len()
    );
    // The subscription counts what arrived through shared memory as the session does
    // (the session's only subscription): the report's wire rows show it.
    assert_eq!(
        subscription.counters().shared_memory,
        b.shared_memory_stats().received_shared
    );
    drop(subscription);
    got.lock().clone()
}

/// Every frame arrived whole, in order.
fn whole(frames: &[Bytes]) -> bool {
    frames
        .iter()
        .enumerate()
        .all(|(n, f)| f.len() == 1_000_000 && f[0] == n as u8)
}

/// In a child process (so that its shared-memory segments can be removed once it has
/// ended): the pair tests of `sessions_share_memory_and_a_session_without_it_is_named`.
fn shm_pair_main() -> ! {
    let (a, b) = pair("shm-both");
    assert!(a.shared_memory() && b.shared_memory());
    let frames = send_large(&a, &b, "big", 5, 500);
    assert!(whole(&frames));
    let stats = b.shared_memory_stats();
    assert_eq!(
        stats.received_shared + stats.received_large_copied,
        frames.len() as u64,
        "{stats:?}"
    );
    assert!(
        stats.received_shared >= 5,
        "not through shared memory: {stats:?}"
    );
    // Read where zenoh put it: the last frame's bytes lie in a mapped segment.
    assert!(streamwire_zenoh::in_shared_memory(frames.last().unwrap()));
    assert_eq!(a.shared_memory_gaps(), Vec::new());
    assert_eq!(b.shared_memory_gaps(), Vec::new());
    a.close();
    b.close();

    let (a, b) = pair_with("shm-half", SharedMemory::default(), SharedMemory::off());
    assert!(!b.shared_memory());
    let frames = send_large(&a, &b, "big", 1, 30);
    assert_eq!(frames.len(), 30);
    assert!(whole(&frames));
    let stats = b.shared_memory_stats();
    assert_eq!(stats.received_shared, 0, "{stats:?}");
    assert_eq!(stats.received_large_copied, 30, "{stats:?}");
    let gaps = a.shared_memory_gaps();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].zid, b.zid());
    assert!(gaps[0].ours);
    let text = gaps[0].to_string();
    assert!(
        text.contains("does not use shared memory (the peer has it off)")
            && text.contains("127.0.0.1"),
        "{text}"
    );
    let theirs = b.shared_memory_gaps();
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert!(!theirs[0].ours);
    a.close();
    b.close();
    std::process::exit(0)
}

/// A worker's pool holds, per stream it sends raw to its host, what its deepest consumer's
/// queue may keep (a keep-all viewer: the runtime's keep-all depth, 10) plus a frame being
/// written and one in flight, at 8 MiB each; a worker that sends nothing raw gets zenoh's
/// 16 MiB.
fn a_workers_pool_holds_what_its_consumers_queue_may_keep() {
    let runnable = scenario("shm", "").into_runnable().unwrap();
    let pool = |process: &str| shared_memory_pool(runnable.plan(), &Placement::process(process));
    assert_eq!(pool("cam"), (10 + 2) * (8 << 20));
    assert_eq!(pool("ui"), 16 << 20);
}

/// Two sessions of one host (in a child process): with shared memory on both ends large
/// frames arrive through it (after the first few, sent while zenoh makes its pool); with
/// it off at one end they arrive as bytes, whole, and each end names the other as a gap.
/// Once the child has ended, its segments are removed: nothing is left in /dev/shm.
fn sessions_share_memory_and_a_session_without_it_is_named() {
    let before = streamwire_testdata::shm::zenoh_files();
    let status = Command::new(std::env::current_exe().unwrap())
        .env("SW_TEST_SHM_PAIR", "1")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the pair test failed in its process: {status}"
    );
    streamwire_zenoh::remove_orphaned_shared_memory();
    let left: Vec<String> = streamwire_testdata::shm::left_since(&before);
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

/// Raw 921 KB frames between two workers of one host go through shared memory (zenoh's
/// segment files exist in /dev/shm while they run); the camera's worker killed with
/// SIGKILL leaves its segments behind, and the coordinator removes them at the end of the
/// run: no file is left in /dev/shm.
fn shared_memory_between_workers_and_nothing_left_after_a_kill() {
    let before = streamwire_testdata::shm::zenoh_files();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let events = events.clone();
        let stop = stop.clone();
        std::thread::spawn(move || coordinate("shm", options("shm"), &stop, &events))
    };
    let began = Instant::now();
    while !events
        .lock()
        .iter()
        .any(|e| e.starts_with("every worker is ready"))
    {
        assert!(began.elapsed() < GUARD, "{:?}", events.lock());
        std::thread::sleep(Duration::from_millis(20));
    }
    // Frames flow: the sender's pool is a segment file.
    while streamwire_testdata::shm::zenoh_files()
        .difference(&before)
        .next()
        .is_none()
    {
        assert!(
            began.elapsed() < GUARD,
            "no shared-memory segment appeared: {:?}",
            events.lock()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let camera = pids(&events.lock(), "localhost/cam")[0];
    assert!(
        Command::new("kill")
            .args(["-9", &camera.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let cluster = run.join().unwrap().unwrap();
    assert_eq!(cluster.report.reason, EndReason::Failed, "{cluster}");
    assert!(
        counter(&cluster.report.stats, "viewer", "seen") > 0,
        "the viewer received frames: {cluster}"
    );
    let left: Vec<String> = streamwire_testdata::shm::left_since(&before);
    assert!(left.is_empty(), "left in /dev/shm after the run: {left:?}");
}

/// A worker of the same host without shared memory is named in a warning when the run
/// starts, and still gets every frame (as bytes, through TCP); a clean end leaves nothing
/// in /dev/shm.
fn a_worker_without_shared_memory_is_named_and_still_served() {
    let before = streamwire_testdata::shm::zenoh_files();
    let plan = scenario("shm", "").build().unwrap();
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            duration: Some(Duration::from_millis(1500)),
            ..options("shm-half")
        },
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let mut events = Vec::new();
    let cluster = coordinator
        .run(
            &launcher_without_shm("shm", "localhost/ui"),
            &stop,
            &mut |event| {
                eprintln!("coordinator: {event}");
                events.push(event.to_owned());
            },
        )
        .unwrap();
    let warning = events
        .iter()
        .find(|e| e.starts_with("shared memory:"))
        .unwrap_or_else(|| panic!("no shared-memory warning: {events:?}"));
    assert!(
        warning.contains("worker localhost/ui on host `localhost` runs without it")
            && warning.contains("localhost/cam has it"),
        "{warning}"
    );
    assert!(
        counter(&cluster.report.stats, "viewer", "seen") > 0,
        "the viewer without shared memory received frames: {cluster}"
    );
    let left: Vec<String> = streamwire_testdata::shm::left_since(&before);
    assert!(left.is_empty(), "left in /dev/shm after the run: {left:?}");
}

/// A worker killed mid-run is named with its exit status, restarted by the blueprint's
/// policy, and delivery resumes; at the end no worker process is left.
fn a_killed_worker_is_named_and_restarted() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let events = events.clone();
        let stop = stop.clone();
        std::thread::spawn(move || coordinate("endless", options("endless"), &stop, &events))
    };
    let began = Instant::now();
    let wait_for = |what: &dyn Fn(&[String]) -> bool| {
        while !what(&events.lock()) {
            assert!(began.elapsed() < GUARD, "{:?}", events.lock());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(&|e| e.iter().any(|e| e.starts_with("every worker is ready")));
    std::thread::sleep(Duration::from_millis(300));
    let first = pids(&events.lock(), "localhost/ui")[0];
    let killed = Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for(&|e| pids(e, "localhost/ui").len() == 2);
    let said = events.lock().clone();
    let death = said
        .iter()
        .find(|e| e.contains("died"))
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(
        death.contains(&format!("worker `localhost/ui` (pid {first})"))
            && death.contains("signal: 9")
            && death.contains("restart 1 of 2"),
        "{death}"
    );
    // Delivery resumes in the new viewer: let it see frames, then stop the run.
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::SeqCst);
    let cluster = run.join().unwrap().unwrap();
    assert_eq!(cluster.report.reason, EndReason::Stopped, "{cluster}");
    let ui = cluster
        .workers
        .iter()
        .find(|w| w.process == "localhost/ui")
        .unwrap();
    assert_eq!(ui.restarts, 1, "{cluster}");
    assert!(
        counter(&cluster.report.stats, "viewer", "seen") > 0,
        "the restarted viewer received frames: {cluster}"
    );
    let all = events.lock().clone();
    for process in ["localhost/cam", "localhost/ui"] {
        for pid in pids(&all, process) {
            assert!(!alive(pid), "worker {process} (pid {pid}) outlived its run");
        }
    }
}

/// A worker whose plan differs is refused, both sides naming the worker's hash (never the
/// coordinator's); a process
/// placed on a host whose worker never joins makes the run fail at the join timeout,
/// naming it.
fn a_different_plan_is_refused_and_a_missing_host_is_named() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let plan = scenario("two-hosts", "").build().unwrap();
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            run_id: "hosts".to_owned(),
            host: Some("localhost".to_owned()),
            join_timeout: Duration::from_secs(6),
            // The caller's advice for a process started by hand (the CLI gives its
            // command line).
            start_hint: Some(StartHint::new(|launch: &Launch| {
                format!(
                    "start it there with `worker --connect {} --process {}`",
                    launch.connect.join(" --connect "),
                    launch.process
                )
            })),
            ..CoordinatorOptions::default()
        },
    )
    .unwrap();
    assert_eq!(coordinator.local_processes(), ["localhost/cam"]);
    let endpoint = coordinator.endpoints().join(",");
    let secret_file = coordinator.secret_file("laptop/ui").unwrap().to_owned();
    // The laptop's worker, started by hand with another setting and its secret file.
    let by_hand = Command::new(std::env::current_exe().unwrap())
        .env("SW_TEST_WORKER", "laptop/ui")
        .env("SW_TEST_SCENARIO", "two-hosts")
        .env("SW_TEST_VARIANT", "different")
        .env("SW_TEST_SECRET_FILE", &secret_file)
        .env("SW_TEST_CONNECT", &endpoint)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let said = events.clone();
    let result = coordinator.run(&launcher("two-hosts"), &AtomicBool::new(false), &mut |e| {
        eprintln!("coordinator: {e}");
        said.lock().push(e.to_owned());
    });
    let output = by_hand.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let hash = streamwire_cluster::plan_hash(&plan).unwrap();
    let theirs =
        streamwire_cluster::plan_hash(&scenario("two-hosts", "different").build().unwrap())
            .unwrap();
    assert_ne!(hash, theirs);
    // The refusal names the worker's hash, never the coordinator's (whoever learnt it
    // could join with it).
    assert!(
        stderr.contains("worker `laptop/ui` refused by the coordinator of run `hosts`")
            && !stderr.contains(&hash)
            && stderr.contains(&theirs),
        "{stderr}"
    );
    let events = events.lock();
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("refused worker `laptop/ui`") && e.contains(&theirs)),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| e.contains(&hash)), "{events:?}");
    // Its secret file goes with the run.
    assert!(!secret_file.exists(), "{}", secret_file.display());
    let Err(ClusterError::JoinTimeout { missing, .. }) = result else {
        panic!("{:?}", result.map(|r| r.to_string()));
    };
    assert!(
        missing.contains("`laptop/ui` (host `laptop`: start it there with `worker --connect"),
        "{missing}"
    );
    // The camera's worker joined but waits for its subscriber, and says so.
    assert!(
        missing.contains("`localhost/cam` (started here, joined, its links not matched yet)"),
        "{missing}"
    );
    for pid in pids(&events, "localhost/cam") {
        assert!(
            !alive(pid),
            "worker localhost/cam (pid {pid}) outlived its run"
        );
    }
}

/// A session of the closed run's test: `credential`'s TLS and the run's rules, connected
/// to `endpoint` (and, by gossip, to the workers), listening on loopback.
fn member_session(credential: &Credential, endpoint: &str) -> ZenohTransport {
    member_session_of("closed", credential, endpoint)
}

/// [`member_session`] in a run of scenario `name`.
fn member_session_of(name: &str, credential: &Credential, endpoint: &str) -> ZenohTransport {
    let plan = scenario(name, "").build().unwrap();
    let rules = streamwire_cluster::AccessRules::from_plan(&plan, credential.run_id());
    ZenohTransport::open(&ZenohOptions {
        run_id: credential.run_id().to_owned(),
        listen: vec!["tls/127.0.0.1:0".to_owned()],
        connect: vec![endpoint.to_owned()],
        gossip: true,
        settings: streamwire_zenoh::Settings(credential.zenoh_settings(&rules)),
        ..ZenohOptions::default()
    })
    .unwrap()
}

/// Frames a subscriber on every stream of the run receives.
fn listen_all(session: &ZenohTransport) -> (zenoh::pubsub::Subscriber<()>, Arc<AtomicU64>) {
    let heard = Arc::new(AtomicU64::new(0));
    let counter = heard.clone();
    let subscriber = session
        .session()
        .declare_subscriber(format!("{}/**", session.prefix()))
        .callback(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .wait()
        .unwrap();
    (subscriber, heard)
}

/// A subscriber on one stream of `session`'s run, counting what it hears.
fn listen(
    session: &ZenohTransport,
    stream: &str,
) -> (zenoh::pubsub::Subscriber<()>, Arc<AtomicU64>) {
    let heard = Arc::new(AtomicU64::new(0));
    let counter = heard.clone();
    let subscriber = session
        .session()
        .declare_subscriber(session.key_expr(stream))
        .callback(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .wait()
        .unwrap();
    (subscriber, heard)
}

/// The answer to `request` at `key` from another session, if any came within a second.
fn ask(session: &ZenohTransport, key: &str, request: &serde_json::Value) -> Option<String> {
    let replies = session
        .session()
        .get(key)
        .allowed_destination(zenoh::sample::Locality::Remote)
        .payload(request.to_string())
        .timeout(Duration::from_secs(1))
        .wait()
        .unwrap();
    let reply = replies.recv().ok()?;
    let sample = reply.result().ok()?;
    Some(String::from_utf8_lossy(&sample.payload().to_bytes()).into_owned())
}

/// Every forgery a member of the run can try with `session`: frames and the end of the
/// camera's stream, a failed report and a state for the camera's worker, the run's state
/// answered with go and stop. What answered, by attempt.
fn forge(session: &ZenohTransport, hash: &str) -> Vec<(&'static str, Option<String>)> {
    let run = session.prefix().to_owned();
    let key = format!("{run}/color_image/compressed");
    // Each sample claims to come from one of the sessions this one reaches (the camera's
    // worker among them): a `SourceInfo` is the sender's to choose.
    let peers: Vec<zenoh::session::ZenohId> = session.session().info().peers_zid().wait().collect();
    let claims: Vec<Option<zenoh::sample::SourceInfo>> = std::iter::once(None)
        .chain(peers.into_iter().map(|zid| {
            let id = zenoh_protocol::core::EntityGlobalIdProto {
                zid: zid.into(),
                eid: 1,
            };
            Some(zenoh::sample::SourceInfo::new(id.into(), 1))
        }))
        .collect();
    for seq in 0..50 {
        let frame = streamwire_transport::WireFrame::end_of_stream(seq).unwrap();
        for claim in &claims {
            session
                .session()
                .put(&key, frame.to_bytes().to_vec())
                .source_info(claim.clone())
                .wait()
                .unwrap();
            session
                .session()
                .put(&key, vec![0u8; 64])
                .source_info(claim.clone())
                .wait()
                .unwrap();
        }
    }
    let stopper = session
        .session()
        .declare_queryable(format!("{run}/@cluster/state/**"))
        .callback(|query| {
            let _ = query
                .reply(query.key_expr().clone(), r#"{"go":true,"stop":true}"#)
                .wait();
        })
        .wait()
        .unwrap();
    let failed = serde_json::json!({
        "process": "localhost/cam",
        "report": RunReport::new(EndReason::Failed, Some("injected by a stranger".to_owned()),
            Vec::new(), streamwire_runtime::RunStats::default()),
    });
    let answers = vec![
        (
            "report",
            ask(
                session,
                &format!("{run}/@cluster/report/localhost/cam"),
                &failed,
            ),
        ),
        (
            "state",
            ask(
                session,
                &format!("{run}/@cluster/state/localhost/cam"),
                &serde_json::json!({"process": "localhost/cam", "ready": true}),
            ),
        ),
        (
            "join",
            ask(
                session,
                &format!("{run}/@cluster/join/laptop/ui"),
                &serde_json::json!({"version": 3, "process": "laptop/ui", "plan_hash": hash,
                    "pid": std::process::id()}),
            ),
        ),
    ];
    // Long enough for a worker to ask its state of the forged queryable, were it heard.
    std::thread::sleep(Duration::from_millis(500));
    drop(stopper);
    answers
}

/// The closed run's access control, generated from its plan, as zenoh reads it.
fn the_access_control_is_generated_from_the_plan() {
    let plan = scenario("closed", "").build().unwrap();
    let rules = streamwire_cluster::AccessRules::from_plan(&plan, "lab").to_json();
    insta::assert_snapshot!(
        "closed_run_access_control",
        serde_json::to_string_pretty(&rules).unwrap()
    );
}

/// Posing as the viewer's worker before it joined (what made the sources start with no
/// real remote worker in an open run): a subscriber on its stream, its announcement and
/// its worker token, and a join with the plan's hash. The declarations are kept while
/// they are held; the join's answer, if one came.
fn pose_as_viewer(
    session: &ZenohTransport,
    hash: &str,
) -> (
    zenoh::pubsub::Subscriber<()>,
    Vec<zenoh::liveliness::LivelinessToken>,
    Option<String>,
) {
    let run = session.prefix().to_owned();
    let subscriber = session
        .session()
        .declare_subscriber(format!("{run}/color_image/compressed"))
        .callback(|_| {})
        .wait()
        .unwrap();
    let tokens = [
        format!("{run}/@sub/color_image/compressed/@/laptop/ui"),
        format!("{run}/@cluster/worker/laptop/ui"),
    ]
    .into_iter()
    .map(|key| {
        session
            .session()
            .liveliness()
            .declare_token(key)
            .wait()
            .unwrap()
    })
    .collect();
    let join = ask(
        session,
        &format!("{run}/@cluster/join/laptop/ui"),
        &serde_json::json!({"version": 3, "process": "laptop/ui", "plan_hash": hash,
            "pid": std::process::id()}),
    );
    (subscriber, tokens, join)
}

/// A closed run attacked before and while it runs. Before the remote viewer's worker
/// starts, a session with a certificate of another authority (same names) and a tool
/// (read-only) pose as it (subscriber, announcement, worker token, join with the plan's
/// hash): nobody answers their join and the sources do not start. Then the viewer
/// joins; while the run goes on, the stranger connects to nothing and hears nothing; the
/// tool hears the streams but its forged frames and end of stream (also claiming to be
/// each session it reaches by `SourceInfo`), report, state and join are refused, as are
/// those of a session holding the viewer's credential (which produces nothing), whose
/// second join for the joined viewer is refused without the plan hash. The run ends as
/// it would have: every frame delivered, no other frame received.
fn a_closed_run_refuses_strangers_and_forgeries() {
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let plan = scenario("closed", "").build().unwrap();
    let hash = streamwire_cluster::plan_hash(&plan).unwrap();
    // A folder of this user's for the run's secret files (not /tmp itself, which others
    // may write).
    let outer = std::env::temp_dir().join(format!("sw-closed-{}", std::process::id()));
    let folder = outer.join("closed");
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            host: Some("localhost".to_owned()),
            secret_folder: Some(folder.clone()),
            ..options("closed")
        },
    )
    .unwrap();
    let endpoint = coordinator.endpoints()[0].clone();
    assert!(endpoint.starts_with("tls/127.0.0.1:"), "{endpoint}");
    let ui_file = coordinator.secret_file("laptop/ui").unwrap().to_owned();
    let tool = Credential::read_file(coordinator.tool_secret_file().unwrap()).unwrap();
    let said =
        |events: &Mutex<Vec<String>>, what: &str| events.lock().iter().any(|e| e.contains(what));
    let attack = {
        let (events, endpoint, hash) = (events.clone(), endpoint.clone(), hash.clone());
        let ui = Credential::read_file(&ui_file).unwrap();
        std::thread::spawn(move || {
            // A certificate of another authority, with a planned process's name.
            let foreign = streamwire_cluster::RunAuthority::new("closed")
                .unwrap()
                .issue("localhost/cam")
                .unwrap();
            let stranger = member_session(&foreign, &endpoint);
            let (_stranger_sub, stranger_heard) = listen_all(&stranger);
            let tool = member_session(&tool, &endpoint);
            // Before the viewer: the camera's worker started (and, a moment later, is
            // ready), the viewer's is not there, and both pose as it.
            assert!(until(|| said(&events, "worker `localhost/cam` started")));
            std::thread::sleep(Duration::from_secs(2));
            let posed = [
                pose_as_viewer(&stranger, &hash),
                pose_as_viewer(&tool, &hash),
            ];
            std::thread::sleep(Duration::from_secs(1));
            let started_early = said(&events, "the sources start");
            let posed_joins: Vec<Option<String>> = posed.iter().map(|p| p.2.clone()).collect();
            let viewer = Command::new(std::env::current_exe().unwrap())
                .env("SW_TEST_WORKER", "laptop/ui")
                .env("SW_TEST_SCENARIO", "closed")
                .env("SW_TEST_SECRET_FILE", &ui_file)
                .env("SW_TEST_CONNECT", &endpoint)
                .spawn()
                .unwrap();
            assert!(until(|| said(&events, "every worker is ready")));
            // The tool reads the encoded stream only: a subscriber on the raw one would
            // (rightly: a tool may read) make the camera send raw frames.
            let (_tool_sub, tool_heard) = listen(&tool, "color_image/compressed");
            let ui = member_session(&ui, &endpoint);
            // The viewer's credential subscribing to the raw stream, which the plan does
            // not bring it: refused by the access control, so the camera never sees a
            // subscriber and sends no raw frame (in an open run it sent 2.76 MB frames
            // nobody planned).
            let (_ui_raw, ui_raw_heard) = listen(&ui, "color_image");
            // What they heard of the run before forging (a session hears its own puts).
            std::thread::sleep(Duration::from_secs(1));
            let heard = (
                stranger_heard.load(Ordering::SeqCst),
                tool_heard.load(Ordering::SeqCst),
                ui_raw_heard.load(Ordering::SeqCst),
            );
            let stranger_answers = forge(&stranger, &hash);
            let tool_answers = forge(&tool, &hash);
            let ui_answers = forge(&ui, &hash);
            let peers = stranger.session().info().peers_zid().wait().count();
            drop(posed);
            (
                (started_early, posed_joins),
                (stranger_answers, tool_answers, ui_answers),
                heard,
                peers,
                Instant::now(),
                viewer,
            )
        })
    };
    let recorded = events.clone();
    let cluster = coordinator
        .run(&launcher("closed"), &AtomicBool::new(false), &mut |e| {
            eprintln!("coordinator: {e}");
            recorded.lock().push(e.to_owned());
        })
        .unwrap();
    let ended = Instant::now();
    let (
        (started_early, posed_joins),
        (stranger, tool, ui),
        (stranger_heard, tool_heard, ui_raw_heard),
        stranger_peers,
        attacked,
        viewer,
    ) = attack.join().unwrap();
    let viewer = viewer.wait_with_output().unwrap();
    assert!(
        !started_early,
        "the sources started before the viewer joined"
    );
    assert_eq!(posed_joins, [None, None], "a join posing as the viewer");
    assert!(attacked < ended, "the attacks ended after the run");
    assert_eq!((stranger_peers, stranger_heard), (0, 0));
    assert!(
        stranger.iter().all(|(_, answer)| answer.is_none()),
        "{stranger:?}"
    );
    assert!(tool_heard > 0, "the tool may read the streams");
    assert_eq!(
        ui_raw_heard, 0,
        "the viewer's credential heard the raw stream"
    );
    assert!(tool.iter().all(|(_, answer)| answer.is_none()), "{tool:?}");
    // The viewer's own credential: its keys answer, and its second join is refused,
    // without the coordinator's plan hash.
    assert_eq!(ui[0], ("report", None));
    assert_eq!(ui[1], ("state", None));
    let join = ui[2].1.clone().unwrap_or_default();
    assert!(
        join.contains(r#""accepted":false"#)
            && join.contains("process `laptop/ui` has already joined (pid ")
            && !join.contains(&hash),
        "{join}"
    );
    let report = &cluster.report;
    assert_eq!(report.reason, EndReason::Finished, "{cluster}");
    assert!(viewer.status.success(), "{:?}", viewer.status);
    assert_eq!(
        counter(&report.stats, "viewer", "seen"),
        u64::from(CLOSED_FRAMES),
        "{cluster}"
    );
    let (sent, received) = (
        wire(report, WireDirection::Out),
        wire(report, WireDirection::In),
    );
    assert_eq!(
        (received.frames, received.lost),
        (sent.frames, 0),
        "no forged frame arrived: {cluster}"
    );
    let raw_sent: u64 = report
        .stats
        .wire
        .iter()
        .filter(|w| w.direction == WireDirection::Out && w.key == "color_image")
        .map(|w| w.frames)
        .sum();
    assert_eq!(
        raw_sent, 0,
        "raw frames nobody planned were sent: {cluster}"
    );
    assert!(cluster.to_string().contains("access: closed"), "{cluster}");
    assert!(!folder.exists(), "the run's secret files outlived it");
    std::fs::remove_dir_all(&outer).unwrap();
}

/// Sends `signal` (`-STOP`, `-CONT`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// What [`watch_tap`] saw: the silences named, those said to receive again, the report.
type Watched = (
    Vec<streamwire_cluster::SilentLink>,
    Vec<streamwire_cluster::SilentLink>,
    ClusterReport,
);

/// How [`watch_tap`] cuts the tap's ingress.
#[derive(Clone, Copy, PartialEq)]
enum Cut {
    /// A closed run's access control refuses the tap's subscription.
    Refused,
    /// The tapping worker is stopped (SIGSTOP) once its tap receives, resumed once a
    /// silence is named.
    Paused,
    /// The tap ingress's subscription is dropped once it received (scenario `tap-cut`).
    Undeclared,
}

/// Runs scenario `tap` (or `tap-cut`) cut as `cut` says, its links watched by the
/// coordinator's silent-link rule (a 2 s window), each silent tap's worker asked to
/// subscribe again, as `run` does. Stops once a silence ended, or (refused) once one is
/// named.
fn watch_tap(cut: Cut) -> Watched {
    let (name, access) = match cut {
        Cut::Refused => ("tap", streamwire_cluster::Access::Closed),
        Cut::Paused => ("tap", streamwire_cluster::Access::Insecure),
        Cut::Undeclared => ("tap-cut", streamwire_cluster::Access::Insecure),
    };
    let pause = cut == Cut::Paused;
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let plan = scenario(name, "").build().unwrap();
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            access,
            ..options(name)
        },
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let mut silent = streamwire_cluster::SilentLinks::new(Duration::from_secs(2));
    let resubscriber = coordinator.resubscriber();
    let (mut named, mut recovered) = (Vec::new(), Vec::new());
    let (mut paused, mut resumed) = (None, false);
    let began = Instant::now();
    let recorded = events.clone();
    let cluster = coordinator
        .run_observed(
            &launcher(name),
            &stop,
            &mut |e| {
                eprintln!("coordinator: {e}");
                recorded.lock().push(e.to_owned());
            },
            &mut |stats| {
                for link in silent.observe(stats, Instant::now()) {
                    eprintln!("warning: silent link: {link}");
                    resubscriber.ask(&link);
                    named.push(link);
                }
                for link in silent.recovered() {
                    eprintln!("silent link receives again: {link}");
                    recovered.push(link);
                }
                let tap_receives = stats
                    .wire
                    .iter()
                    .any(|w| w.tap.is_some_and(|t| t.attached) && w.frames > 0);
                if pause && paused.is_none() && tap_receives {
                    let pid = pids(&events.lock(), "localhost/web")[0];
                    signal(pid, "-STOP");
                    paused = Some(pid);
                }
                if let Some(pid) = paused
                    && !resumed
                    && (!named.is_empty() || began.elapsed() > GUARD / 2)
                {
                    signal(pid, "-CONT");
                    resumed = true;
                }
                let done = if cut == Cut::Refused {
                    !named.is_empty()
                } else {
                    !recovered.is_empty()
                };
                if done || began.elapsed() > GUARD {
                    stop.store(true, Ordering::SeqCst);
                }
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(paused.is_some(), pause, "the tap never received: {cluster}");
    (named, recovered, cluster)
}

/// A tap whose ingress receives nothing while the stream's sender sends is a silent link
/// like a planned one (issue 50), named with its tap, and said again when it receives
/// again. Two cuts: in a closed run, the access control generated from the plan, which
/// declares no tap of the tapping module, refuses its subscription (before, the tap just
/// got nothing, and nothing said so); in an insecure run, the tapping worker is stopped
/// (SIGSTOP) once its tap receives: from the coordinator's side a tap ingress that stalls
/// (its counters stop while the camera's sender goes on) with no hook in the library, the
/// tap staying attached; resumed, it receives again. The planned link is never named.
fn a_tap_that_receives_nothing_is_named_and_said_when_it_receives_again() {
    let tap_line = "`color_image/compressed` into localhost/web (tap 0): nothing received for";
    let (named, recovered, cluster) = watch_tap(Cut::Refused);
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].to_string().starts_with(tap_line), "{named:?}");
    assert!(recovered.is_empty(), "{recovered:?}");
    // The tap's ingress is a row of the report's wire table: no frame.
    let text = cluster.to_string();
    assert!(text.contains("in (tap 0"), "{text}");

    let (named, recovered, cluster) = watch_tap(Cut::Paused);
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].to_string().starts_with(tap_line), "{named:?}");
    assert_eq!(
        recovered.iter().map(|l| l.tap).collect::<Vec<_>>(),
        [Some(0)],
        "{recovered:?}"
    );
    assert_eq!(cluster.report.reason, EndReason::Stopped, "{cluster}");
}

/// A tap whose ingress lost its subscription (dropped by the test hook once the tap
/// received, as a link that went away) is named silent; the coordinator asks its worker
/// to subscribe again, the worker does, and the tap receives again (issue 50): the tap's
/// wire row counts the re-subscription, the report says it, and the row's frames only
/// grew.
fn a_silent_tap_subscribes_again_and_receives_again() {
    let tap_line = "`color_image/compressed` into localhost/web (tap 0): nothing received for";
    let (named, recovered, cluster) = watch_tap(Cut::Undeclared);
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(named[0].to_string().starts_with(tap_line), "{named:?}");
    assert_eq!(
        recovered.iter().map(|l| l.tap).collect::<Vec<_>>(),
        [Some(0)],
        "{recovered:?}"
    );
    let row = cluster
        .report
        .stats
        .wire
        .iter()
        .find(|w| w.tap.is_some())
        .unwrap_or_else(|| panic!("no tap row: {cluster}"));
    assert!(row.resubscribed >= 1, "{cluster}");
    // Received before the cut (10 or more) and after.
    assert!(row.frames > 10, "{cluster}");
    let text = cluster.to_string();
    assert!(
        text.contains(
            "subscribed again (a tap's ingress the coordinator found silent): \
                       localhost/web color_image/compressed (tap 0)"
        ),
        "{text}"
    );
    assert_eq!(cluster.report.reason, EndReason::Stopped, "{cluster}");
}

/// Where a frame's schema version, link sequence and payload start in `frame` (version 1
/// or 2 of the wire frame, RFC.md section 10).
fn head_fields(frame: &[u8]) -> (usize, usize, usize) {
    let u32_at = |at: usize| u32::from_le_bytes(frame[at..at + 4].try_into().unwrap()) as usize;
    let version = u16::from_le_bytes([frame[4], frame[5]]);
    let head = if version == 1 {
        16
    } else {
        24 + 8 * u32_at(16)
    };
    // CDR after its 4-byte encapsulation: the name (length, bytes), then u32 schema
    // version and u64 link sequence, each aligned to its size.
    let cdr = head + 4;
    let schema = (4 + u32_at(cdr)).next_multiple_of(4);
    let link_seq = (schema + 4).next_multiple_of(8);
    (cdr + schema, cdr + link_seq, head + u32_at(8))
}

/// The 11 kinds of bad frame a member of the run may put on its own stream, made from
/// `real` (a frame of the stream, numbered `seq`), by the kind each is refused as.
fn hostile_kinds(real: &[u8], seq: u64) -> Vec<(&'static str, Vec<u8>)> {
    let (schema, link_seq, payload) = head_fields(real);
    let edit = |at: usize, bytes: &[u8]| {
        let mut frame = real.to_vec();
        frame[at..at + bytes.len()].copy_from_slice(bytes);
        frame
    };
    let unreadable = |number: u64| {
        let mut frame = edit(link_seq, &number.to_le_bytes());
        frame[payload] = 0xFF;
        frame
    };
    let image = Image::from_packed(2, 2, ImageEncoding::Rgb8, vec![0u8; 12]).unwrap();
    let header = streamwire_core::Header {
        seq: 1,
        publish_time: Timestamp::from_nanos(1),
    };
    let foreign = streamwire_transport::WireFrame::encode(&image, header, seq + 1, "").unwrap();
    let mut wrong_schema = edit(link_seq, &0u64.to_le_bytes());
    wrong_schema[schema] += 1;
    vec![
        ("garbage", b"not a frame".to_vec()),
        ("garbage", vec![0, 0, 0]),
        ("garbage", edit(6, &8u16.to_le_bytes())),
        // A batch that declares no frame.
        ("garbage", b"SWFB\x01\x00\x00\x00".to_vec()),
        ("truncated", real[..real.len() / 2].to_vec()),
        ("truncated", edit(12, &u32::MAX.to_le_bytes())),
        ("incompatible", edit(4, &99u16.to_le_bytes())),
        // Forged numbers: 28 ahead, 2^62, and 0 on another schema version.
        ("undecodable", unreadable(seq + 28)),
        ("undecodable", unreadable(1 << 62)),
        ("incompatible", wrong_schema),
        ("foreign", foreign.to_bytes().to_vec()),
    ]
}

/// A member of a closed run, with the camera's own credential (a member may put on its
/// streams), puts 11 kinds of bad frame on the camera's stream while it runs (issue 50):
/// each is refused and counted once, on the viewer's wire row by its kind; none is on the
/// viewer's input row and none of their link sequences makes a real frame lost; the report
/// balances.
fn a_members_bad_frames_are_counted_once_and_the_report_balances() {
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let plan = scenario("member", "").build().unwrap();
    let outer = std::env::temp_dir().join(format!("sw-member-{}", std::process::id()));
    let folder = outer.join("member");
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            host: Some("localhost".to_owned()),
            secret_folder: Some(folder.clone()),
            ..options("member")
        },
    )
    .unwrap();
    let endpoint = coordinator.endpoints()[0].clone();
    let cam_file = coordinator.secret_file("rig/cam").unwrap().to_owned();
    let cam = Credential::read_file(&cam_file).unwrap();
    let tool = Credential::read_file(coordinator.tool_secret_file().unwrap()).unwrap();
    let said =
        |events: &Mutex<Vec<String>>, what: &str| events.lock().iter().any(|e| e.contains(what));
    let attack = {
        let (events, endpoint) = (events.clone(), endpoint.clone());
        std::thread::spawn(move || {
            assert!(until(|| said(&events, "worker `localhost/ui` started")));
            let camera = Command::new(std::env::current_exe().unwrap())
                .env("SW_TEST_WORKER", "rig/cam")
                .env("SW_TEST_SCENARIO", "member")
                .env("SW_TEST_SECRET_FILE", &cam_file)
                .env("SW_TEST_CONNECT", &endpoint)
                .spawn()
                .unwrap();
            assert!(until(|| said(&events, "the sources start")));
            // A real frame of the stream, heard by the tool, to make the bad ones from.
            let tool = member_session_of("member", &tool, &endpoint);
            let heard: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
            let keep = heard.clone();
            let subscriber = tool
                .session()
                .declare_subscriber(tool.key_expr("color_image/compressed"))
                .callback(move |sample| {
                    let bytes = sample.payload().to_bytes().to_vec();
                    // A message's frame (no flag: not the end, not a stop).
                    if bytes.starts_with(b"SWFR") && bytes.get(6..8) == Some(&[0, 0]) {
                        *keep.lock() = Some(bytes);
                    }
                })
                .wait()
                .unwrap();
            assert!(until(|| heard.lock().is_some()), "no frame heard");
            drop(subscriber);
            let real = heard.lock().clone().unwrap();
            let (_, at, _) = head_fields(&real);
            let seq = u64::from_le_bytes(real[at..at + 8].try_into().unwrap());
            let member = member_session_of("member", &cam, &endpoint);
            let publisher = member
                .session()
                .declare_publisher(member.key_expr("color_image/compressed"))
                .wait()
                .unwrap();
            // Once the member's session reaches the viewer's (gossip makes the link).
            assert!(
                until(|| publisher.matching_status().wait().unwrap().matching()),
                "the member reaches no subscriber"
            );
            let kinds = hostile_kinds(&real, seq);
            for (_, frame) in &kinds {
                publisher.put(frame.clone()).wait().unwrap();
            }
            let mut expected: std::collections::BTreeMap<&str, u64> = Default::default();
            for (kind, _) in &kinds {
                *expected.entry(kind).or_default() += 1;
            }
            (expected, kinds.len(), Instant::now(), camera)
        })
    };
    let recorded = events.clone();
    let cluster = coordinator
        .run(&launcher("member"), &AtomicBool::new(false), &mut |e| {
            eprintln!("coordinator: {e}");
            recorded.lock().push(e.to_owned());
        })
        .unwrap();
    let ended = Instant::now();
    let (expected, sent_bad, attacked, camera) = attack.join().unwrap();
    let camera = camera.wait_with_output().unwrap();
    assert!(camera.status.success(), "{:?}", camera.status);
    assert!(attacked < ended, "the bad frames were put after the run");
    assert_eq!(sent_bad, 11);
    let report = &cluster.report;
    assert_eq!(report.reason, EndReason::Finished, "{cluster}");
    let received = wire(report, WireDirection::In);
    let refused: std::collections::BTreeMap<&str, u64> = expected
        .keys()
        .map(|kind| {
            let n = if *kind == "foreign" {
                received.foreign
            } else {
                received.rejected(kind)
            };
            (*kind, n)
        })
        .collect();
    assert_eq!(
        refused, expected,
        "each refused once by its kind: {cluster}"
    );
    assert_eq!(
        received.rejected_total() + received.foreign,
        11,
        "{cluster}"
    );
    assert_eq!((received.lost, received.resets), (0, 0), "{cluster}");
    let viewer_row = input(report, "viewer.frames");
    assert_eq!(viewer_row.dropped.deserialize_failed, 0, "{cluster}");
    assert_eq!(viewer_row.dropped.lost_on_wire, 0, "{cluster}");
    assert_eq!(
        counter(&report.stats, "viewer", "seen"),
        u64::from(CLOSED_FRAMES),
        "{cluster}"
    );
    if let Err(error) = streamwire_runtime::check_balance(report) {
        panic!("{error}\n{cluster}");
    }
    assert!(!folder.exists(), "the run's secret files outlived it");
    std::fs::remove_dir_all(&outer).unwrap();
}

/// The two network namespaces of the netns test, joined by a veth pair: `a` holds the
/// coordinator and the camera's worker (10.231.0.1), `b` the remote viewer's (10.231.0.2).
/// Both are this test's own: nothing is added to the host's namespace but the pair's
/// creation, and deleting the namespaces deletes the pair.
struct Namespaces {
    a: String,
    b: String,
    veth_b: String,
}

const NETNS_A: &str = "10.231.0.1";
const NETNS_B: &str = "10.231.0.2";

impl Namespaces {
    /// Creates them, or says why it cannot (not root, no `ip`, namespaces not allowed).
    fn create() -> Result<Namespaces, String> {
        let id = std::process::id();
        let ns = Namespaces {
            a: format!("sw-test-{id}-a"),
            b: format!("sw-test-{id}-b"),
            veth_b: format!("sw{id}b"),
        };
        let veth_a = format!("sw{id}a");
        let ip = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("cannot run `ip`: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "`ip {}` failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        ip(&["netns", "add", &ns.a])?;
        if let Err(error) = ip(&["netns", "add", &ns.b]) {
            ns.delete();
            return Err(error);
        }
        let steps: Vec<Vec<&str>> = vec![
            vec![
                "-n", &ns.a, "link", "add", &veth_a, "type", "veth", "peer", "name", &ns.veth_b,
                "netns", &ns.b,
            ],
            vec!["-n", &ns.a, "addr", "add", "10.231.0.1/24", "dev", &veth_a],
            vec![
                "-n",
                &ns.b,
                "addr",
                "add",
                "10.231.0.2/24",
                "dev",
                &ns.veth_b,
            ],
            vec!["-n", &ns.a, "link", "set", &veth_a, "up"],
            vec!["-n", &ns.b, "link", "set", &ns.veth_b, "up"],
            vec!["-n", &ns.a, "link", "set", "lo", "up"],
            vec!["-n", &ns.b, "link", "set", "lo", "up"],
        ];
        for step in steps {
            if let Err(error) = ip(&step) {
                ns.delete();
                return Err(error);
            }
        }
        Ok(ns)
    }

    /// `ip netns exec NS <this binary>`.
    fn exec(&self, ns: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns])
            .arg(std::env::current_exe().unwrap());
        c
    }

    /// Bytes received by the remote end of the pair.
    fn received_by_b(&self) -> u64 {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.b, "cat"])
            .arg(format!(
                "/sys/class/net/{}/statistics/rx_bytes",
                self.veth_b
            ))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    fn delete(&self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.delete();
    }
}

/// In namespace `a`: the coordinator of a netns scenario (`netns`, or `netns-fanout` when
/// `SW_TEST_NETNS_COORDINATOR` says so), starting the camera's worker (host `localhost`)
/// and waiting for the remote viewers; prints the merged report.
fn netns_coordinator_main() -> ! {
    let name: &'static str = match std::env::var("SW_TEST_NETNS_COORDINATOR").as_deref() {
        Ok("netns-fanout") => "netns-fanout",
        _ => "netns",
    };
    let plan = scenario(name, "").build().unwrap();
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            host: Some("localhost".to_owned()),
            listen: vec![format!("tcp/{NETNS_A}:7447")],
            secret_folder: std::env::var_os("SW_TEST_SECRET_FOLDER").map(Into::into),
            ..options(name)
        },
    )
    .unwrap();
    // Two namespaces of one machine share /dev/shm, which two hosts do not: without
    // shared memory in the camera's worker, its frames cross the veth as bytes, as they
    // cross a real link (with it, zenoh would send only references to its pool).
    let no_shm = if name == "netns-fanout" {
        "localhost/cam"
    } else {
        ""
    };
    let stop = AtomicBool::new(false);
    let cluster = coordinator
        .run(&launcher_without_shm(name, no_shm), &stop, &mut |event| {
            eprintln!("coordinator: {event}");
        })
        .unwrap();
    println!("REPORT {}", serde_json::to_string(&cluster.report).unwrap());
    std::process::exit(0)
}

/// Workers in two network namespaces joined by a veth pair: the frames really cross an
/// interface, every one is delivered, and the link between hosts carries JPEG bytes
/// (encoded once in the camera's worker, decoded in the remote viewer's), not pixels.
/// Skips, saying why, where network namespaces cannot be made (fails instead under
/// `STREAMWIRE_REQUIRE=all`).
fn workers_in_two_network_namespaces_compress_across_the_veth() {
    let ns = match Namespaces::create() {
        Ok(ns) => ns,
        Err(reason) => {
            streamwire_testdata::skip(format!(
                "network namespaces are not available here: {reason}"
            ));
            return;
        }
    };
    let (report, crossed) = run_across_veth(&ns, "netns", &["ui"]);
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    assert_eq!(
        counter(&report.stats, "viewer", "seen"),
        u64::from(FRAMES),
        "{report}"
    );
    // The link between the hosts carries the bytes; no pixels crossed.
    // Every frame and the end of the stream crossed, as JPEG bytes; the camera's raw
    // stream went nowhere (its publisher, there for taps, was never matched).
    let received = wire(&report, WireDirection::In);
    assert_eq!(received.frames, u64::from(FRAMES) + 1, "{report}");
    assert!(
        report
            .stats
            .wire
            .iter()
            .filter(|w| w.key == "color_image")
            .all(|w| w.frames == 0),
        "pixels crossed: {report}"
    );
    let decodes = report
        .stats
        .codecs
        .iter()
        .filter(|c| c.role == CodecRole::Decode)
        .count();
    assert_eq!(decodes, 1, "{report}");
    // And they crossed the veth pair.
    assert!(
        crossed >= received.wire_bytes,
        "{crossed} bytes on the veth, {} in the frames",
        received.wire_bytes
    );
}

/// Runs netns scenario `scenario` to its end: its coordinator and camera's worker in
/// namespace `a`, the workers of host `remote` named `remote` (process names) in `b`,
/// each bounded by [`GUARD`]. Gives the merged report and the bytes `b`'s end of the veth
/// received meanwhile; every process has ended and the run's secret files are gone.
fn run_across_veth(ns: &Namespaces, scenario: &str, remote: &[&str]) -> (RunReport, u64) {
    let before = ns.received_by_b();
    // The remote workers' secret files, where the coordinator writes them (both
    // namespaces share the file system, as two hosts share a copied file).
    let outer = std::env::temp_dir().join(format!("sw-{scenario}-{}", std::process::id()));
    let folder = outer.join(scenario);
    let mut coordinator = ns
        .exec(&ns.a)
        .env("SW_TEST_NETNS_COORDINATOR", scenario)
        .env("SW_TEST_SECRET_FOLDER", &folder)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut workers: Vec<std::process::Child> = remote
        .iter()
        .enumerate()
        .map(|(n, process)| {
            ns.exec(&ns.b)
                .env("SW_TEST_WORKER", format!("remote/{process}"))
                .env("SW_TEST_SCENARIO", scenario)
                .env("SW_TEST_RUN", scenario)
                .env(
                    "SW_TEST_SECRET_FILE",
                    folder.join(format!("remote-{process}.credential")),
                )
                .env("SW_TEST_CONNECT", format!("tcp/{NETNS_A}:7447"))
                .env("SW_TEST_LISTEN", format!("tcp/{NETNS_B}:{}", 7448 + n))
                .spawn()
                .unwrap()
        })
        .collect();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = coordinator.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > GUARD {
            for child in workers.iter_mut().chain([&mut coordinator]) {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("the coordinator in {} did not end", ns.a);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut coordinator.stdout.take().unwrap(), &mut out).unwrap();
    let statuses: Vec<_> = workers
        .iter_mut()
        .map(|worker| {
            loop {
                if let Some(status) = worker.try_wait().unwrap() {
                    break status;
                }
                if began.elapsed() > GUARD {
                    let _ = worker.kill();
                    break worker.wait().unwrap();
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .collect();
    let crossed = ns.received_by_b() - before;
    // The workers of `remote` were started by hand, so no coordinator of their host sweeps
    // the segments zenoh leaves at a process's exit once they ended: this does, as the
    // coordinator does for the workers it started.
    streamwire_zenoh::remove_orphaned_shared_memory();
    // The coordinator removed the run's folder; ours goes too.
    let _ = std::fs::remove_dir_all(&outer);
    assert!(status.success(), "coordinator: {status}");
    for (process, status) in remote.iter().zip(statuses) {
        assert!(status.success(), "remote worker {process}: {status}");
    }
    let report: RunReport = serde_json::from_str(
        out.lines()
            .find_map(|l| l.strip_prefix("REPORT "))
            .unwrap_or_else(|| panic!("no report: {out}")),
    )
    .unwrap();
    (report, crossed)
}

/// Three consumer processes on the far host, one copy on the link: the raw stream crosses
/// the veth once, into the host's receiver (`remote/ui1`, the first by name), which hands
/// it on to the two others (`@host/remote/color_image`, shared memory); every frame
/// reaches all three; the report balances and no shared memory is left. Without the
/// rule, each process subscribes across the link and three copies cross it.
fn one_copy_crosses_the_veth_for_three_consumer_processes() {
    let ns = match Namespaces::create() {
        Ok(ns) => ns,
        Err(reason) => {
            streamwire_testdata::skip(format!(
                "network namespaces are not available here: {reason}"
            ));
            return;
        }
    };
    let shm_before = streamwire_testdata::shm::zenoh_files();
    let (report, crossed) = run_across_veth(&ns, "netns-fanout", &["ui1", "ui2", "ui3"]);
    assert_eq!(report.reason, EndReason::Finished, "{report}");
    for n in 1..=3 {
        assert_eq!(
            counter(&report.stats, &format!("viewer{n}"), "seen"),
            u64::from(LINK_FRAMES),
            "viewer{n}: {report}"
        );
    }
    // One ingress takes the stream off the link, in the receiver; the two others get it
    // on the forwarded key, from the receiver's sender. Every frame and the end of the
    // stream on each.
    let rows = |key: &str, direction: WireDirection| -> Vec<&streamwire_runtime::WireStats> {
        report
            .stats
            .wire
            .iter()
            .filter(|w| w.key == key && w.direction == direction)
            .collect()
    };
    let off_the_link = rows("color_image", WireDirection::In);
    // One copy of the frames: what the host's receiver took off the link (the first row
    // alone, when every process subscribes across the link: the failure this tests for).
    let one_copy = off_the_link
        .first()
        .map(|w| w.wire_bytes)
        .unwrap_or_else(|| panic!("nothing came off the link: {report}"));
    // The veth carried one copy: the frames' bytes once, and far less than a second copy
    // of everything else (handshakes, liveliness, states). Three copies is the failure.
    eprintln!(
        "the veth carried {crossed} bytes into `remote`; one copy of the frames is {one_copy} \
         bytes ({:.2} copies)",
        crossed as f64 / one_copy as f64
    );
    assert!(
        crossed >= one_copy,
        "{crossed} bytes on the veth, {one_copy} in one copy"
    );
    assert!(
        crossed < one_copy + one_copy / 2,
        "{crossed} bytes crossed the veth: more than one copy ({one_copy} bytes) of the stream"
    );
    assert_eq!(off_the_link.len(), 1, "{report}");
    assert_eq!(off_the_link[0].partition, "remote/ui1", "{report}");
    assert_eq!(
        off_the_link[0].frames,
        u64::from(LINK_FRAMES) + 1,
        "{report}"
    );
    let handed_on = rows("@host/remote/color_image", WireDirection::Out);
    assert_eq!(handed_on.len(), 1, "{report}");
    assert_eq!(handed_on[0].partition, "remote/ui1", "{report}");
    assert_eq!(handed_on[0].frames, u64::from(LINK_FRAMES) + 1, "{report}");
    let forwarded: Vec<&str> = rows("@host/remote/color_image", WireDirection::In)
        .iter()
        .map(|w| {
            assert_eq!(w.frames, u64::from(LINK_FRAMES) + 1, "{report}");
            w.partition.as_str()
        })
        .collect();
    assert_eq!(forwarded, ["remote/ui2", "remote/ui3"], "{report}");
    if let Err(error) = streamwire_runtime::check_balance(&report) {
        panic!("{error}\n{report}");
    }
    let left = streamwire_testdata::shm::left_since(&shm_before);
    assert!(left.is_empty(), "shared memory left in /dev/shm: {left:?}");
}

fn main() {
    if let Ok(process) = std::env::var("SW_TEST_WORKER") {
        worker_main(process);
    }
    if std::env::var("SW_TEST_NETNS_COORDINATOR").is_ok() {
        netns_coordinator_main();
    }
    if std::env::var("SW_TEST_SHM_PAIR").is_ok() {
        shm_pair_main();
    }
    let tests: [(&str, fn()); 15] = [
        (
            "the_access_control_is_generated_from_the_plan",
            the_access_control_is_generated_from_the_plan,
        ),
        (
            "a_tap_that_receives_nothing_is_named_and_said_when_it_receives_again",
            a_tap_that_receives_nothing_is_named_and_said_when_it_receives_again,
        ),
        (
            "a_silent_tap_subscribes_again_and_receives_again",
            a_silent_tap_subscribes_again_and_receives_again,
        ),
        (
            "a_members_bad_frames_are_counted_once_and_the_report_balances",
            a_members_bad_frames_are_counted_once_and_the_report_balances,
        ),
        (
            "a_closed_run_refuses_strangers_and_forgeries",
            a_closed_run_refuses_strangers_and_forgeries,
        ),
        (
            "every_frame_crosses_three_workers",
            every_frame_crosses_three_workers,
        ),
        (
            "under_sensor_qos_every_frame_is_delivered_or_counted",
            under_sensor_qos_every_frame_is_delivered_or_counted,
        ),
        (
            "a_killed_worker_is_named_and_restarted",
            a_killed_worker_is_named_and_restarted,
        ),
        (
            "a_different_plan_is_refused_and_a_missing_host_is_named",
            a_different_plan_is_refused_and_a_missing_host_is_named,
        ),
        (
            "a_workers_pool_holds_what_its_consumers_queue_may_keep",
            a_workers_pool_holds_what_its_consumers_queue_may_keep,
        ),
        (
            "sessions_share_memory_and_a_session_without_it_is_named",
            sessions_share_memory_and_a_session_without_it_is_named,
        ),
        (
            "shared_memory_between_workers_and_nothing_left_after_a_kill",
            shared_memory_between_workers_and_nothing_left_after_a_kill,
        ),
        (
            "a_worker_without_shared_memory_is_named_and_still_served",
            a_worker_without_shared_memory_is_named_and_still_served,
        ),
        (
            "workers_in_two_network_namespaces_compress_across_the_veth",
            workers_in_two_network_namespaces_compress_across_the_veth,
        ),
        (
            "one_copy_crosses_the_veth_for_three_consumer_processes",
            one_copy_crosses_the_veth_for_three_consumer_processes,
        ),
    ];
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if std::env::args().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return;
    }
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, test) in tests {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        eprintln!("test {name} ...");
        let began = Instant::now();
        match std::panic::catch_unwind(test) {
            Ok(()) => eprintln!(
                "test {name} ... ok ({:.1} s)",
                began.elapsed().as_secs_f64()
            ),
            Err(_) => {
                eprintln!("test {name} ... FAILED");
                failed.push(name);
            }
        }
    }
    eprintln!(
        "cluster: {ran} ran, {} passed, {} failed{}",
        ran - failed.len(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(": {}", failed.join(", "))
        }
    );
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

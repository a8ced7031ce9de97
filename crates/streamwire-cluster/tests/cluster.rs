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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use streamwire_cluster::{
    ClusterError, ClusterReport, Coordinator, CoordinatorOptions, Launch, StartHint, WorkerOptions,
    run_worker,
};
use streamwire_core::DropReason;
use streamwire_core::{
    Context, Durability, History, In, Node, NodeResult, Out, Qos, Reliability, Timestamp, Trigger,
};
use streamwire_graph::{AutoTable, Blueprint, Locality, Placement, Supervision, WireFormat};
use streamwire_macros::Module;
use streamwire_msgs::{Image, ImageEncoding};
use streamwire_runtime::{CodecRole, EndReason, RunReport, WireDirection};
use streamwire_transport::Transport;
use streamwire_zenoh::{SharedMemory, ZenohOptions, ZenohTransport};

// The scenarios' modules are the zenoh transport's test modules: one definition for both
// crates' tests.
#[path = "../../streamwire-zenoh/tests/common/mod.rs"]
mod common;
use common::{Camera, Recorder, SensorCamera, SlowViewer, Viewer, counter};

/// The longest any scenario may take.
const GUARD: Duration = Duration::from_secs(60);

/// Frames of the finite scenarios.
const FRAMES: u32 = 40;

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
        let data = vec![(self.sent % 251) as u8; 640 * 480 * 3];
        let image = Image::from_packed(640, 480, ImageEncoding::Rgb8, data)?
            .with_stamp(Timestamp::from_nanos(u64::from(self.sent) + 1));
        self.color_image.publish(image)?;
        self.sent += 1;
        Ok(())
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
        other => panic!("no scenario {other}"),
    }
    // The compressed wire between processes of one host is what this test exercises.
    bp.auto_table(AutoTable::default().with(Locality::SameHost, WireFormat::Compressed));
    bp.autoconnect();
    bp
}

/// A child: one worker of a scenario, then exit.
fn worker_main(process: String) -> ! {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let runnable = scenario(&var("SW_TEST_SCENARIO"), &var("SW_TEST_VARIANT"))
        .into_runnable()
        .unwrap();
    let options = WorkerOptions {
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
            .env("SW_TEST_NO_SHM", no_shm);
        c
    }
}

/// Zenoh's shared-memory files in /dev/shm (`<id>.zenoh`).
fn shm_files() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".zenoh"))
                .collect()
        })
        .unwrap_or_default()
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
    let report = &cluster.report;
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
    let report = &cluster.report;
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
    assert_eq!(
        decode.done,
        viewer.delivered + viewer.dropped.total(),
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
            Arc::new(move |frame: Bytes| sink.lock().push(frame)),
        )
        .unwrap();
    assert!(until(|| publisher.is_matched()), "never matched");
    let mut sent = 0;
    while sent < limit && b.shared_memory_stats().received_shared < shared {
        let payload = Bytes::from(vec![sent as u8; 1_000_000]);
        publisher.put(&mut |_| Ok(payload.clone())).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        until(|| got.lock().len() == sent),
        "{} of {sent} arrived",
        got.lock().len()
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

/// Two sessions of one host (in a child process): with shared memory on both ends large
/// frames arrive through it (after the first few, sent while zenoh makes its pool); with
/// it off at one end they arrive as bytes, whole, and each end names the other as a gap.
/// Once the child has ended, its segments are removed: nothing is left in /dev/shm.
fn sessions_share_memory_and_a_session_without_it_is_named() {
    let before = shm_files();
    let status = Command::new(std::env::current_exe().unwrap())
        .env("SW_TEST_SHM_PAIR", "1")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the pair test failed in its process: {status}"
    );
    streamwire_zenoh::remove_orphaned_shared_memory();
    let left: Vec<String> = shm_files().difference(&before).cloned().collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

/// Raw 921 KB frames between two workers of one host go through shared memory (zenoh's
/// segment files exist in /dev/shm while they run); the camera's worker killed with
/// SIGKILL leaves its segments behind, and the coordinator removes them at the end of the
/// run: no file is left in /dev/shm.
fn shared_memory_between_workers_and_nothing_left_after_a_kill() {
    let before = shm_files();
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
    while shm_files().difference(&before).next().is_none() {
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
    let left: Vec<String> = shm_files().difference(&before).cloned().collect();
    assert!(left.is_empty(), "left in /dev/shm after the run: {left:?}");
}

/// A worker of the same host without shared memory is named in a warning when the run
/// starts, and still gets every frame (as bytes, through TCP); a clean end leaves nothing
/// in /dev/shm.
fn a_worker_without_shared_memory_is_named_and_still_served() {
    let before = shm_files();
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
    let left: Vec<String> = shm_files().difference(&before).cloned().collect();
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

/// A worker whose plan differs is refused, both sides naming both hashes; a process
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
    // The laptop's worker, started by hand with another setting.
    let by_hand = Command::new(std::env::current_exe().unwrap())
        .env("SW_TEST_WORKER", "laptop/ui")
        .env("SW_TEST_SCENARIO", "two-hosts")
        .env("SW_TEST_VARIANT", "different")
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
    assert!(
        stderr.contains("worker `laptop/ui` refused by the coordinator of run `hosts`")
            && stderr.contains(&hash)
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

/// In namespace `a`: the coordinator of the netns scenario, starting the camera's worker
/// (host `localhost`) and waiting for the remote viewer; prints the merged report.
fn netns_coordinator_main() -> ! {
    let plan = scenario("netns", "").build().unwrap();
    let coordinator = Coordinator::start(
        &plan,
        CoordinatorOptions {
            host: Some("localhost".to_owned()),
            listen: vec![format!("tcp/{NETNS_A}:7447")],
            ..options("netns")
        },
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let cluster = coordinator
        .run(&launcher("netns"), &stop, &mut |event| {
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
    let before = ns.received_by_b();
    let mut coordinator = ns
        .exec(&ns.a)
        .env("SW_TEST_NETNS_COORDINATOR", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut remote = ns
        .exec(&ns.b)
        .env("SW_TEST_WORKER", "remote/ui")
        .env("SW_TEST_SCENARIO", "netns")
        .env("SW_TEST_RUN", "netns")
        .env("SW_TEST_CONNECT", format!("tcp/{NETNS_A}:7447"))
        .env("SW_TEST_LISTEN", format!("tcp/{NETNS_B}:7448"))
        .spawn()
        .unwrap();
    let began = Instant::now();
    let status = loop {
        if let Some(status) = coordinator.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > GUARD {
            let _ = coordinator.kill();
            let _ = remote.kill();
            let _ = coordinator.wait();
            let _ = remote.wait();
            panic!("the coordinator in {} did not end", ns.a);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut coordinator.stdout.take().unwrap(), &mut out).unwrap();
    let remote_status = loop {
        if let Some(status) = remote.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > GUARD {
            let _ = remote.kill();
            break remote.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "coordinator: {status}");
    assert!(remote_status.success(), "remote worker: {remote_status}");
    let report: RunReport = serde_json::from_str(
        out.lines()
            .find_map(|l| l.strip_prefix("REPORT "))
            .unwrap_or_else(|| panic!("no report: {out}")),
    )
    .unwrap();
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
    let crossed = ns.received_by_b() - before;
    assert!(
        crossed >= received.wire_bytes,
        "{crossed} bytes on the veth, {} in the frames",
        received.wire_bytes
    );
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
    let tests: [(&str, fn()); 8] = [
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

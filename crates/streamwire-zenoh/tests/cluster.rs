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

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use streamwire_core::DropReason;
use streamwire_core::{In, Out};
use streamwire_graph::{Blueprint, Placement, Supervision};
use streamwire_runtime::{CodecRole, EndReason, RunReport, WireDirection};
use streamwire_zenoh::cluster::{
    ClusterError, ClusterReport, Coordinator, CoordinatorOptions, Launch, WorkerOptions, run_worker,
};

mod common;
use common::{Camera, Recorder, SensorCamera, SlowViewer, Viewer, counter};

/// The longest any scenario may take.
const GUARD: Duration = Duration::from_secs(60);

/// Frames of the finite scenarios.
const FRAMES: u32 = 40;

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
        other => panic!("no scenario {other}"),
    }
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
        join_timeout: Duration::from_secs(10),
        watch_stdin: var("SW_TEST_SUPERVISED") == "1",
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
    move |launch: &Launch| {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env("SW_TEST_WORKER", &launch.process)
            .env("SW_TEST_SCENARIO", scenario)
            .env("SW_TEST_RUN", &launch.run_id)
            .env("SW_TEST_CONNECT", launch.connect.join(","))
            .env("SW_TEST_SUPERVISED", "1");
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
        events.lock().unwrap().push(event.to_owned());
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
    let events = events.lock().unwrap();
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
        while !what(&events.lock().unwrap()) {
            assert!(began.elapsed() < GUARD, "{:?}", events.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(&|e| e.iter().any(|e| e.starts_with("every worker is ready")));
    std::thread::sleep(Duration::from_millis(300));
    let first = pids(&events.lock().unwrap(), "localhost/ui")[0];
    let killed = Command::new("kill")
        .args(["-9", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for(&|e| pids(e, "localhost/ui").len() == 2);
    let said = events.lock().unwrap().clone();
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
    let all = events.lock().unwrap().clone();
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
        said.lock().unwrap().push(e.to_owned());
    });
    let output = by_hand.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let hash = streamwire_zenoh::cluster::plan_hash(&plan);
    let theirs =
        streamwire_zenoh::cluster::plan_hash(&scenario("two-hosts", "different").build().unwrap());
    assert_ne!(hash, theirs);
    assert!(
        stderr.contains("worker `laptop/ui` refused by the coordinator of run `hosts`")
            && stderr.contains(&hash)
            && stderr.contains(&theirs),
        "{stderr}"
    );
    let events = events.lock().unwrap();
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

fn main() {
    if let Ok(process) = std::env::var("SW_TEST_WORKER") {
        worker_main(process);
    }
    let tests: [(&str, fn()); 4] = [
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

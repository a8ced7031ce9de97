//! One cell of the benchmark: one run of one blueprint in one mode and profile, in a
//! network namespace of its own.
//!
//! The driver ([`launch`]) starts `unshare -n <this program> bench cell SPEC`; that
//! process ([`serve`]) brings its loopback up, measures an idle baseline, starts the run
//! (`<this program> run replay-<blueprint> --duration S --report ...`, under `taskset` for
//! a constrained profile), samples it once a second and writes what it saw. Everything a
//! cell leaves is in its folder:
//!
//! | file | what |
//! |---|---|
//! | `spec.json` | the [`CellSpec`] |
//! | `host.json` | the [`HostRecord`]: baseline, wall time, the tree's CPU, how it ended |
//! | `samples.jsonl` | one [`Sample`] a second |
//! | `report.json` | the run's merged report (every counter of every worker) |
//! | `arrivals/<instance>.jsonl` | every arrival at every colour consumer |
//! | `run.log`, `cell.log` | the run's and the cell's standard error |

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use streamwire_graph::PlanSummary;

use crate::BenchError;
use crate::link::{Link, LinkCounters, LinkProfile, QdiscStats, RelayStats, Side, netns_command};
use crate::sampler::{Sample, Sampler};

/// How long a run may take beyond its duration (workers joining, then the runtime's
/// bounded stop) before the cell interrupts it.
pub const STOP_BOUND_S: f64 = 45.0;
/// After an interrupt, how long before the cell kills the run's process group.
pub const KILL_AFTER_S: f64 = 10.0;

/// CPUs a run may use.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Profile {
    /// `all` or `constrained`.
    pub name: String,
    /// A `taskset -c` list, or none for every core.
    pub cpus: Option<String>,
}

impl Profile {
    /// Every core of the machine.
    pub fn all() -> Profile {
        Profile {
            name: "all".to_owned(),
            cpus: None,
        }
    }

    /// One core (`taskset -c 0`): our stand-in for a robot computer.
    pub fn constrained() -> Profile {
        Profile {
            name: "constrained".to_owned(),
            cpus: Some("0".to_owned()),
        }
    }

    /// `all` or `constrained`.
    pub fn parse(name: &str) -> Result<Profile, BenchError> {
        match name {
            "all" => Ok(Profile::all()),
            "constrained" => Ok(Profile::constrained()),
            _ => Err(BenchError::Usage(format!(
                "unknown profile `{name}`: expected all or constrained"
            ))),
        }
    }

    /// Cores the run gets: `available` for `all`, else the list's length.
    pub fn cores(&self, available: usize) -> usize {
        match &self.cpus {
            None => available,
            Some(list) => list
                .split(',')
                .map(|part| match part.split_once('-') {
                    Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                        (Ok(a), Ok(b)) if b >= a => b - a + 1,
                        _ => 1,
                    },
                    None => 1,
                })
                .sum(),
        }
    }
}

/// Everything one cell runs with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// `basic`, `full` or `heavy`.
    pub blueprint: String,
    /// `raw` or `codec`.
    pub mode: String,
    /// Whether the workers offer shared memory.
    pub shared_memory: bool,
    /// The CPUs.
    pub profile: Profile,
    /// Busy sinks (none: the blueprint's own).
    pub sinks: Option<usize>,
    /// CPU-ms of image work per frame, each busy sink.
    pub work_ms: f64,
    /// Seconds the run lasts.
    pub duration_s: f64,
    /// The folder of frames, or an MCAP file (none: the simulated camera).
    pub replay: Option<PathBuf>,
    /// The camera's rate (none: as recorded).
    pub fps: Option<f64>,
    /// Which repetition (0-based).
    pub rep: usize,
    /// Run in a network namespace of its own (`unshare -n`).
    pub netns: bool,
    /// The link to the operator's laptop (none: every process on one host).
    #[serde(default)]
    pub link: Option<LinkProfile>,
    /// Where that link is, once the driver made it.
    #[serde(default)]
    pub place: Option<LinkPlace>,
    /// The colour stream's bit-rate budget, bit/s (the `budget` mode).
    #[serde(default)]
    pub max_bitrate: Option<u64>,
    /// The cell's folder.
    pub dir: PathBuf,
}

/// Where a cell's link is: the driver makes it ([`Link::create`]) and tells the cell,
/// which runs in the robot's namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkPlace {
    /// The laptop's network namespace (`ip netns exec` starts its workers there).
    pub laptop_namespace: String,
    /// The robot's address on the link: the coordinator listens there.
    pub robot_address: Ipv4Addr,
    /// The laptop's address on the link: its workers listen there.
    pub laptop_address: Ipv4Addr,
    /// The robot's end of the link, whose counters the cell samples.
    pub robot_device: String,
}

/// Where the coordinator of a cell across a link listens, on the robot's address.
pub const COORDINATOR_PORT: u16 = 7447;

impl CellSpec {
    /// `raw-shm`, `raw-tcp` (raw without shared memory), `codec`, `auto` or `budget` (auto
    /// under a bit-rate budget): the variant a table row names.
    pub fn variant(&self) -> String {
        if self.max_bitrate.is_some() {
            return "budget".to_owned();
        }
        match (self.mode.as_str(), self.shared_memory) {
            ("raw", false) => "raw-tcp".to_owned(),
            ("raw", true) => "raw-shm".to_owned(),
            (mode, _) => mode.to_owned(),
        }
    }

    /// The cell's name, its folder's: `heavy-constrained-codec-r0`, or with a link
    /// `heavy-all-wifi-auto-r0`.
    pub fn label(&self) -> String {
        let link = self
            .link
            .as_ref()
            .map(|l| format!("{}-", l.name))
            // infallible: no link, nothing in the label
            .unwrap_or_default();
        format!(
            "{}-{}-{link}{}-r{}",
            self.blueprint,
            self.profile.name,
            self.variant(),
            self.rep
        )
    }

    /// The blueprint's settings (`-o key=value`), the same for the coordinator and for
    /// every worker started by hand (their plans must agree).
    pub fn settings(&self) -> Vec<String> {
        let mut set = vec![
            format!("mode={}", self.mode),
            format!("work_ms={}", self.work_ms),
            format!("record.dir={}", self.dir.join("arrivals").display()),
        ];
        if self.link.is_some() {
            set.push("hosts=split".to_owned());
        }
        if let Some(n) = self.sinks {
            set.push(format!("sinks={n}"));
        }
        if let Some(dir) = &self.replay {
            set.push(format!("replay.dir={}", dir.display()));
        }
        if let Some(fps) = self.fps {
            set.push(format!("fps={fps}"));
        }
        if let Some(bits) = self.max_bitrate {
            set.push(format!("max_bitrate={bits}"));
        }
        set
    }

    /// The run's id across a link (its secret files are found by it).
    pub fn run_id(&self) -> String {
        format!("bench-{}", self.label())
    }

    /// The `run` command line after the program: blueprint, duration, report, settings.
    pub fn run_args(&self) -> Vec<String> {
        let mut args = vec![
            "run".to_owned(),
            format!("replay-{}", self.blueprint),
            "--duration".to_owned(),
            self.duration_s.to_string(),
            "--report".to_owned(),
            self.dir.join("report.json").display().to_string(),
        ];
        if !self.shared_memory {
            args.push("--no-shared-memory".to_owned());
        }
        if let Some(place) = &self.place {
            // The robot's processes here; the laptop's join across the link.
            args.extend([
                "--host".to_owned(),
                "robot".to_owned(),
                "--run-id".to_owned(),
                self.run_id(),
                "--listen".to_owned(),
                format!("tcp/{}:{COORDINATOR_PORT}", place.robot_address),
            ]);
        }
        for kv in self.settings() {
            args.push("-o".to_owned());
            args.push(kv);
        }
        args
    }

    /// The `worker` command line after the program for `process` (`laptop/ui`), started
    /// in the laptop's namespace with its secret file: no shared memory (another host).
    pub fn worker_args(&self, process: &str, place: &LinkPlace, secret_file: &Path) -> Vec<String> {
        let mut args = vec![
            "worker".to_owned(),
            format!("replay-{}", self.blueprint),
            "--process".to_owned(),
            process.to_owned(),
            "--connect".to_owned(),
            format!("tcp/{}:{COORDINATOR_PORT}", place.robot_address),
            "--listen".to_owned(),
            format!("tcp/{}:0", place.laptop_address),
            "--run-id".to_owned(),
            self.run_id(),
            "--secret-file".to_owned(),
            secret_file.display().to_string(),
            "--no-shared-memory".to_owned(),
        ];
        for kv in self.settings() {
            args.push("-o".to_owned());
            args.push(kv);
        }
        args
    }
}

/// What the cell's own process measured around the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The machine's CPU use with nothing of ours running, percent of all cores.
    pub idle_host_cpu_pct: f64,
    /// Loopback bytes per second with nothing of ours running.
    pub idle_lo_bytes_per_s: f64,
    /// From starting the run to its exit, seconds.
    pub wall_s: f64,
    /// CPU seconds (user + system) of the run and every process it waited for: exact,
    /// from the kernel's account of reaped children (`/proc/self/stat` cutime + cstime).
    pub tree_cpu_s: f64,
    /// The run's exit status code (none: killed by a signal).
    pub exit_code: Option<i32>,
    /// `exited`, `interrupted` (still running past its bound: SIGINT) or `killed`
    /// (SIGKILL after that).
    pub ended: String,
    /// Whether the cell had a network namespace of its own.
    pub netns: bool,
    /// The machine's cores.
    pub host_cores: usize,
    /// Across a link: the laptop's workers and how each ended.
    #[serde(default)]
    pub workers: Vec<WorkerRecord>,
}

/// A worker the cell started in the laptop's namespace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerRecord {
    /// `laptop/ui`.
    pub process: String,
    /// Its exit status code (none: killed by a signal, or never started).
    pub exit_code: Option<i32>,
    /// `exited`, `killed` (still running past the bound) or why it never started.
    pub ended: String,
}

/// What the driver read off a cell's link after the cell: `link.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The profile.
    pub profile: LinkProfile,
    /// How the link is made, one sentence ([`Link::describe`]).
    pub description: String,
    /// The veths' counters over the cell's whole life (its idle second and the workers'
    /// join included).
    pub counters: LinkCounters,
    /// The shaping queues.
    pub qdiscs: Vec<QdiscStats>,
    /// The relay that adds the delay.
    pub relay: RelayStats,
}

/// Starts the cell `spec` in its folder (created) and waits for it; `exe` is this
/// program. A cell that outlives its bound is killed. A cell with a link gets its link
/// here (three network namespaces: [`Link`]), for its life only.
pub fn launch(spec: &CellSpec, exe: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(&spec.dir).map_err(|e| BenchError::io(&spec.dir, e))?;
    let link = match &spec.link {
        Some(profile) => Some(Link::create(&link_tag(), profile)?),
        None => None,
    };
    let mut spec = spec.clone();
    spec.place = link.as_ref().map(|link| LinkPlace {
        laptop_namespace: link.namespace(Side::Laptop).to_owned(),
        robot_address: link.address(Side::Robot),
        laptop_address: link.address(Side::Laptop),
        robot_device: link.device(Side::Robot).to_owned(),
    });
    let spec = &spec;
    let spec_path = spec.dir.join("spec.json");
    write_json(&spec_path, spec)?;
    let log_path = spec.dir.join("cell.log");
    let log = File::create(&log_path).map_err(|e| BenchError::io(&log_path, e))?;
    let mut command = match &link {
        // In the robot's namespace, with the coordinator.
        Some(link) => link.command(Side::Robot, exe),
        None if spec.netns => {
            let mut c = Command::new("unshare");
            c.arg("-n").arg(exe);
            c
        }
        None => Command::new(exe),
    };
    command
        .arg("bench")
        .arg("cell")
        .arg(&spec_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log);
    let mut child = command.spawn().map_err(|e| {
        BenchError::Cell(format!(
            "cannot start the cell ({}): {e}",
            if spec.netns {
                "`unshare -n`, from util-linux"
            } else {
                "this program"
            }
        ))
    })?;
    // The cell bounds its run; this bounds the cell (its own start, baseline and
    // analysis take seconds).
    let bound = spec.duration_s + STOP_BOUND_S + KILL_AFTER_S + 30.0;
    let status = wait_bounded(&mut child, Duration::from_secs_f64(bound))?;
    if let Some(link) = &link {
        let record = LinkRecord {
            profile: link.profile().clone(),
            description: link.describe(),
            counters: link.counters()?,
            qdiscs: link.qdiscs()?,
            relay: link.relay_stats(),
        };
        write_json(&spec.dir.join("link.json"), &record)?;
    }
    drop(link);
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(BenchError::Cell(format!(
            "cell {} failed ({s}); see {}",
            spec.label(),
            log_path.display()
        ))),
        None => Err(BenchError::Cell(format!(
            "cell {} did not end within {bound:.0} s and was killed; see {}",
            spec.label(),
            log_path.display()
        ))),
    }
}

/// A tag for a link's names, unique on this machine while this process lives.
fn link_tag() -> String {
    static CELLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CELLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}c{n}", std::process::id())
}

fn wait_bounded(child: &mut Child, bound: Duration) -> Result<Option<ExitStatus>, BenchError> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) if start.elapsed() > bound => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(BenchError::Cell(format!("cannot wait for a cell: {e}"))),
        }
    }
}

/// The cell's own process (`bench cell SPEC`): loopback up, idle baseline, the run under
/// the sampler, the records written. `exe` is this program. Across a link the cell is in
/// the robot's namespace: it starts the coordinator with the robot's processes and, in
/// the laptop's namespace, a worker for each of the laptop's, with the secret file the
/// coordinator wrote for it.
pub fn serve(spec_path: &Path, exe: &Path) -> Result<(), BenchError> {
    let text = std::fs::read_to_string(spec_path).map_err(|e| BenchError::io(spec_path, e))?;
    let spec: CellSpec = serde_json::from_str(&text)
        .map_err(|e| BenchError::Cell(format!("{}: not a cell spec: {e}", spec_path.display())))?;
    if spec.netns && spec.place.is_none() {
        // A new namespace's loopback is down: the run's zenoh sessions need it.
        let status = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .map_err(|e| BenchError::Cell(format!("cannot run `ip` (iproute2): {e}")))?;
        if !status.success() {
            return Err(BenchError::Cell(format!(
                "`ip link set lo up` failed ({status}) in the cell's namespace"
            )));
        }
    }
    let laptop = match &spec.place {
        Some(_) => laptop_processes(&plan_summary(&spec, exe)?),
        None => Vec::new(),
    };
    let device = spec.place.as_ref().map(|p| p.robot_device.clone());
    let mut sampler = Sampler::new(device).map_err(|e| BenchError::Cell(e.to_string()))?;
    // Idle baseline: one second with nothing of ours running.
    let idle_start = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let idle = sampler.sample(&[]);
    let idle_s = idle_start.elapsed().as_secs_f64();
    let cpu_before = children_cpu_s();

    let arrivals = spec.dir.join("arrivals");
    std::fs::create_dir_all(&arrivals).map_err(|e| BenchError::io(&arrivals, e))?;
    sampler.restart();
    let started = Instant::now();
    let mut run = Run::start(&spec, exe, laptop)?;
    let samples_path = spec.dir.join("samples.jsonl");
    let samples_file = File::create(&samples_path).map_err(|e| BenchError::io(&samples_path, e))?;
    let mut samples = BufWriter::new(samples_file);
    let interrupt_at = spec.duration_s + STOP_BOUND_S;
    let mut ended = "exited";
    let mut next = Duration::from_secs(1);
    let status = loop {
        run.start_ready_workers(&spec, exe)?;
        if let Some(status) = run
            .coordinator
            .try_wait()
            .map_err(|e| BenchError::Cell(format!("cannot wait for the run: {e}")))?
        {
            break status;
        }
        let elapsed = started.elapsed();
        if elapsed >= next {
            let sample: Sample = sampler.sample(&run.pids());
            write_line(&mut samples, &samples_path, &sample)?;
            next += Duration::from_secs(1);
        }
        let s = elapsed.as_secs_f64();
        if s > interrupt_at && ended == "exited" {
            eprintln!("cell: the run is still going {STOP_BOUND_S} s past its duration: SIGINT");
            let _ = killpg(run.group, Signal::SIGINT);
            ended = "interrupted";
        } else if s > interrupt_at + KILL_AFTER_S && ended == "interrupted" {
            eprintln!("cell: the run did not stop {KILL_AFTER_S} s after SIGINT: SIGKILL");
            let _ = killpg(run.group, Signal::SIGKILL);
            ended = "killed";
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let workers = run.finish_workers();
    let wall_s = started.elapsed().as_secs_f64();
    samples
        .flush()
        .map_err(|e| BenchError::io(&samples_path, e))?;
    let host = HostRecord {
        idle_host_cpu_pct: idle.host_cpu_pct,
        idle_lo_bytes_per_s: idle.lo_bytes as f64 / idle_s.max(1e-3),
        wall_s,
        tree_cpu_s: (children_cpu_s() - cpu_before).max(0.0),
        exit_code: status.code(),
        ended: ended.to_owned(),
        netns: spec.netns,
        host_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        workers,
    };
    write_json(&spec.dir.join("host.json"), &host)
}

/// A cell's run: the coordinator (with the robot's processes, or every process), and
/// across a link the laptop's workers, all in the coordinator's process group.
struct Run {
    coordinator: Child,
    group: Pid,
    /// The laptop's processes whose worker is not started yet (its secret file is not
    /// written yet).
    pending: Vec<String>,
    workers: Vec<(String, Child)>,
}

impl Run {
    /// Starts the coordinator, under `taskset` for a constrained profile (the laptop's
    /// workers are not: the profile is the robot's computer).
    fn start(spec: &CellSpec, exe: &Path, laptop: Vec<String>) -> Result<Run, BenchError> {
        let log = create(&spec.dir.join("run.log"))?;
        let out = create(&spec.dir.join("run.out"))?;
        let mut command = match &spec.profile.cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cpus).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        command
            .args(spec.run_args())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(log);
        if spec.place.is_some() {
            // The run's secret files, where the cell finds them: `$XDG_RUNTIME_DIR`
            // names the folder of a run's secret files (`run_folder` of the cluster).
            let runtime = spec.dir.join("runtime");
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&runtime)
                .map_err(|e| BenchError::io(&runtime, e))?;
            command.env("XDG_RUNTIME_DIR", &runtime);
        }
        // Its own process group, so that a run past its bound is stopped whole.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let coordinator = command
            .spawn()
            .map_err(|e| BenchError::Cell(format!("cannot start the run: {e}")))?;
        let group = Pid::from_raw(i32::try_from(coordinator.id()).unwrap_or(i32::MAX));
        Ok(Run {
            coordinator,
            group,
            pending: laptop,
            workers: Vec::new(),
        })
    }

    /// Starts the worker of each pending laptop process whose secret file the
    /// coordinator has written (it writes them whole: renamed into place), in the
    /// laptop's namespace.
    fn start_ready_workers(&mut self, spec: &CellSpec, exe: &Path) -> Result<(), BenchError> {
        let Some(place) = &spec.place else {
            return Ok(());
        };
        let folder = spec
            .dir
            .join("runtime")
            .join("streamwire")
            .join(spec.run_id());
        let mut still = Vec::new();
        for process in std::mem::take(&mut self.pending) {
            // The cluster's naming of a secret file: `laptop/ui` → `laptop-ui.credential`.
            let secret = folder.join(format!("{}.credential", process.replace('/', "-")));
            if !secret.exists() {
                still.push(process);
                continue;
            }
            let log_path = spec
                .dir
                .join(format!("worker-{}.log", process.replace('/', "-")));
            let mut command = netns_command(&place.laptop_namespace, exe);
            command
                .args(spec.worker_args(&process, place, &secret))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(create(&log_path)?);
            std::os::unix::process::CommandExt::process_group(&mut command, self.group.as_raw());
            let child = command.spawn().map_err(|e| {
                BenchError::Cell(format!("cannot start the worker of `{process}`: {e}"))
            })?;
            self.workers.push((process, child));
        }
        self.pending = still;
        Ok(())
    }

    /// The roots of the run's process trees, for the sampler.
    fn pids(&self) -> Vec<u32> {
        std::iter::once(self.coordinator.id())
            .chain(self.workers.iter().map(|(_, c)| c.id()))
            .collect()
    }

    /// After the coordinator's exit: waits for the laptop's workers (they stop when the
    /// coordinator stops the run), kills those still running after [`KILL_AFTER_S`].
    fn finish_workers(mut self) -> Vec<WorkerRecord> {
        let deadline = Instant::now() + Duration::from_secs_f64(KILL_AFTER_S);
        let mut records = Vec::new();
        for (process, mut child) in self.workers.drain(..) {
            let (exit_code, ended) = loop {
                match child.try_wait() {
                    Ok(Some(status)) => break (status.code(), "exited"),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    _ => {
                        let _ = child.kill();
                        let code = child.wait().ok().and_then(|s| s.code());
                        break (code, "killed");
                    }
                }
            };
            records.push(WorkerRecord {
                process,
                exit_code,
                ended: ended.to_owned(),
            });
        }
        for process in self.pending.drain(..) {
            records.push(WorkerRecord {
                process,
                exit_code: None,
                ended: "never started (no secret file)".to_owned(),
            });
        }
        records
    }
}

fn create(path: &Path) -> Result<File, BenchError> {
    File::create(path).map_err(|e| BenchError::io(path, e))
}

/// The plan of the cell's run, as `graph --format json` gives it, kept as `plan.json`.
fn plan_summary(spec: &CellSpec, exe: &Path) -> Result<PlanSummary, BenchError> {
    let mut command = Command::new(exe);
    command.args([
        "graph",
        &format!("replay-{}", spec.blueprint),
        "--format",
        "json",
    ]);
    for kv in spec.settings() {
        command.arg("-o").arg(kv);
    }
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::Cell(format!("cannot run `graph`: {e}")))?;
    if !out.status.success() {
        return Err(BenchError::Cell(format!(
            "`graph` of the cell's blueprint failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let path = spec.dir.join("plan.json");
    std::fs::write(&path, &out.stdout).map_err(|e| BenchError::io(&path, e))?;
    serde_json::from_slice(&out.stdout)
        .map_err(|e| BenchError::Malformed(format!("{}: {e}", path.display())))
}

/// The processes a plan places on host `laptop`, `host/process`.
pub fn laptop_processes(plan: &PlanSummary) -> Vec<String> {
    let mut processes: Vec<String> = plan
        .instances
        .iter()
        .map(|i| i.placement.clone())
        .chain(plan.codec_nodes.iter().map(|n| n.placement.clone()))
        .filter(|p| p.starts_with("laptop/"))
        .collect();
    processes.sort();
    processes.dedup();
    processes
}

/// CPU seconds of this process's reaped children (and theirs), from `/proc/self/stat`.
fn children_cpu_s() -> f64 {
    // Fields after the command's closing parenthesis: state is field 3, cutime 16,
    // cstime 17 (1-based), in clock ticks (USER_HZ, 100 on Linux).
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // `rest` starts at field 3.
    (tick(16 - 3) + tick(17 - 3)) / 100.0
}

fn write_line<T: Serialize>(
    out: &mut impl Write,
    path: &Path,
    value: &T,
) -> Result<(), BenchError> {
    let line = serde_json::to_string(value).map_err(|e| BenchError::Cell(e.to_string()))?;
    writeln!(out, "{line}").map_err(|e| BenchError::io(path, e))
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), BenchError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| BenchError::Cell(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| BenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_count_their_cores() {
        assert_eq!(Profile::all().cores(2), 2);
        assert_eq!(Profile::constrained().cores(2), 1);
        let p = Profile {
            name: "x".into(),
            cpus: Some("0-3,6".into()),
        };
        assert_eq!(p.cores(8), 5);
        assert!(Profile::parse("robot").is_err());
    }

    #[test]
    fn the_run_command_carries_every_setting() {
        let spec = CellSpec {
            blueprint: "heavy".into(),
            mode: "raw".into(),
            shared_memory: false,
            profile: Profile::constrained(),
            sinks: Some(2),
            work_ms: 5.0,
            duration_s: 12.0,
            replay: Some("/data/frames".into()),
            fps: Some(10.0),
            rep: 1,
            netns: true,
            link: None,
            place: None,
            max_bitrate: None,
            dir: "/out/c".into(),
        };
        assert_eq!(spec.label(), "heavy-constrained-raw-tcp-r1");
        assert_eq!(
            spec.run_args().join(" "),
            "run replay-heavy --duration 12 --report /out/c/report.json --no-shared-memory \
             -o mode=raw -o work_ms=5 -o record.dir=/out/c/arrivals -o sinks=2 \
             -o replay.dir=/data/frames -o fps=10"
        );
    }

    #[test]
    fn children_cpu_grows_after_a_busy_child_is_reaped() {
        let before = children_cpu_s();
        let status = Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(status.success());
        assert!(children_cpu_s() > before, "the shell's CPU is accounted");
    }
}

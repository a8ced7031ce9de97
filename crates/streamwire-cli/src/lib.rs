//! The `streamwire` command line as a library: a user's `main` gets the whole CLI with the
//! user's own modules and blueprints.
//!
//! ```no_run
//! use streamwire_cli::Cli;
//!
//! fn main() -> std::process::ExitCode {
//!     Cli::new("acme-robot", "The ACME robot's software")
//!         // A blueprint file shipped inside the binary (its modules register themselves
//!         // with `#[derive(Module)]`); files on disk are accepted too: `run robot.yaml`.
//!         .blueprint_file("robot", "The robot: camera, detector, logger", "instances: {}\n")
//!         .main()
//! }
//! ```
//!
//! Commands: `run <blueprint | FILE> [--duration S] [-o key=value]...`, `graph <blueprint>
//! [--format text|dot|mermaid|json]`, `list`, `config <blueprint> [-o ...]`, `check <FILE>`,
//! `completions <SHELL>`, and with [`Cli::distributed`] `worker`. Configuration keys and
//! sources: [`config`].
//!
//! **Where a plan runs.** A plan of one process runs in this process. A plan of several
//! runs, with [`Cli::distributed`] (the `zenoh` feature), as *workers*: `run` is the
//! coordinator and starts each process of the plan as a child process of the same binary
//! (`worker`), joined by zenoh; `--host NAME` starts only the processes of host `NAME`
//! here, and the others join by hand from their hosts (`worker --connect tcp/HOST:PORT
//! --process host/process <blueprint>`). Without it, or with `run --in-process`, every
//! process of the plan runs as a partition of this one process, joined by the loopback
//! transport (the same wire frames, no network).

#[cfg(feature = "bench")]
mod bench;
pub mod config;
mod status;
mod topic;
#[cfg(feature = "zenoh")]
mod workers;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use streamwire_core::{ModuleConfig, registered_modules};
use streamwire_graph::{Blueprint, BlueprintFile, Compression, FileFormat, KeyLines, Plan, Report};
use streamwire_runtime::{EndReason, RunOptions, RunReport, Runtime};

pub use config::{ConfigError, Setting, Source};
pub use status::status_line;
pub use topic::TopicStats;

type BuildFn = Box<dyn Fn(&[Setting]) -> Result<Built, anyhow::Error>>;

/// A blueprint registered by name.
struct Registered {
    name: String,
    about: String,
    kind: RegisteredKind,
}

enum RegisteredKind {
    /// Built by code from a serde config type.
    Code {
        /// The config type's default, as JSON (its keys are the valid `-o` keys).
        defaults: serde_json::Map<String, Value>,
        build: BuildFn,
    },
    /// A YAML blueprint shipped in the binary.
    File { text: String },
}

/// What a target resolves to, before it runs.
struct Built {
    blueprint: Blueprint,
    /// The effective configuration, for `config`.
    settings: Vec<Setting>,
}

/// The command line, with the blueprints a binary registers. Every module type linked
/// into the binary (`#[derive(Module)]`) is known by its tag, for blueprint files.
pub struct Cli {
    name: String,
    about: String,
    blueprints: Vec<Registered>,
    /// Plans of several processes run as worker processes on zenoh.
    distributed: bool,
}

#[derive(Parser)]
#[command(version)]
struct Args {
    /// More logs: -v info, -vv debug, -vvv trace (`RUST_LOG` overrides).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a blueprint (registered name or file) and print its report.
    Run {
        /// A registered blueprint's name, or a blueprint file (.yaml, .yml, .json).
        blueprint: String,
        /// Stop after this many seconds (default: until Ctrl+C or every module finished).
        #[arg(long, value_name = "S")]
        duration: Option<f64>,
        /// A setting, `key=value` (repeatable); `streamwire config` lists the keys.
        #[arg(short = 'o', value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Replay this folder of frames: short for `-o replay.dir=DIR` (blueprints with a
        /// replay source, like `demo`).
        #[arg(long, value_name = "DIR")]
        replay: Option<PathBuf>,
        /// The replay's frame rate when the folder has no timestamps: short for
        /// `-o replay.fps=N`.
        #[arg(long, value_name = "N", requires = "replay")]
        fps: Option<f64>,
        #[command(flatten)]
        placement: RunPlacement,
        /// Also write the report as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
    },
    /// Run one process of a blueprint's plan as a worker of a distributed run (`run`
    /// starts its own; start one by hand on another host).
    Worker {
        /// The same blueprint as the coordinator's (registered name or file).
        blueprint: String,
        /// The process to run, `host/process` as `graph` shows it (or the process alone
        /// when unique).
        #[arg(long, value_name = "NAME")]
        process: String,
        /// The coordinator's endpoint, e.g. `tcp/192.168.1.10:7447` (repeatable).
        #[arg(long, value_name = "ENDPOINT", required = true)]
        connect: Vec<String>,
        /// Where this worker listens for the other workers (repeatable; default
        /// `tcp/127.0.0.1:0`; on another host, an address the others can reach).
        #[arg(long, value_name = "ENDPOINT")]
        listen: Vec<String>,
        /// The run to join (default: whichever coordinator answers).
        #[arg(long, value_name = "ID")]
        run_id: Option<String>,
        /// How long to look for the coordinator.
        #[arg(long, value_name = "S", default_value_t = 30.0)]
        join_timeout: f64,
        /// A setting, `key=value` (repeatable): the same as the coordinator's.
        #[arg(short = 'o', value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Started by a coordinator: stop when standard input closes, report to it only.
        #[arg(long, hide = true)]
        supervised: bool,
        /// A zenoh configuration file (JSON5) for this worker's session: TLS or mTLS
        /// endpoints, user/password authentication, access control.
        #[arg(long, value_name = "FILE")]
        zenoh_config: Option<PathBuf>,
        /// Do not offer shared memory to the workers of this host (their large frames
        /// are then copied through TCP; the coordinator warns about it).
        #[arg(long)]
        no_shared_memory: bool,
    },
    /// Print a blueprint's plan.
    Graph {
        /// A registered blueprint's name, or a blueprint file.
        blueprint: String,
        /// text (for people), dot (Graphviz), mermaid, json (a plan summary for tools).
        #[arg(long, value_enum, default_value = "text")]
        format: GraphFormat,
        /// A setting, `key=value` (repeatable).
        #[arg(short = 'o', value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// List the registered blueprints and module types.
    List,
    /// Print a blueprint's effective configuration and where each value came from.
    Config {
        /// A registered blueprint's name, or a blueprint file.
        blueprint: String,
        /// A setting, `key=value` (repeatable).
        #[arg(short = 'o', value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Parse and build a blueprint file; report every problem (exit status 1 if any).
    Check {
        /// The blueprint file.
        file: PathBuf,
    },
    /// Tools on a running blueprint's streams: bench (rate, bandwidth, latency), list,
    /// echo.
    Topic {
        #[command(subcommand)]
        command: topic::TopicCommand,
    },
    /// Benchmarks of streamwire itself.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `bench` and its subcommands.
#[derive(Subcommand)]
enum BenchCommand {
    /// Latency and throughput across payload sizes and transports, against bare zenoh
    /// and a bare channel (`BENCH_CSV=1`: CSV on stdout, the table on stderr).
    Latency {
        /// Round trips per size.
        #[arg(long, value_name = "N", default_value_t = 10_000)]
        samples: usize,
        /// Payload sizes in bytes, comma-separated (default: 10 sizes from 0 B to 4 MiB).
        #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
        sizes: Vec<usize>,
        /// Payload sizes of the 16-hop chain (default: 0, 4096, 65536).
        #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
        chain_sizes: Vec<usize>,
        /// What to measure, comma-separated: in-process, loopback, zenoh, zenoh-shm, chain
        /// (default: all).
        #[arg(long, value_name = "NAME,..", value_delimiter = ',')]
        transport: Vec<String>,
    },
    /// The replay benchmark: real blueprints on real frames, raw against JPEG, each run
    /// in a network namespace of its own, with a host sampler; a table, charts and a
    /// markdown summary in --out (BENCHMARKS.md says how to read them).
    Replay {
        /// basic, full or heavy (comma-separated for several).
        #[arg(
            long,
            value_name = "NAME,..",
            value_delimiter = ',',
            default_value = "heavy"
        )]
        blueprint: Vec<String>,
        /// raw (pixels, shared memory on), raw-tcp (pixels, shared memory off), codec
        /// (JPEG q75), comma-separated (default: all three, or --matrix's).
        #[arg(long, value_name = "MODE,..", value_delimiter = ',')]
        mode: Vec<String>,
        /// all (every core) or constrained (`taskset -c 0`), comma-separated (default
        /// all; --matrix: both).
        #[arg(long, value_name = "NAME,..", value_delimiter = ',')]
        profile: Vec<String>,
        /// Busy sinks (default: the blueprint's own, 1 / 0 / 4).
        #[arg(long, value_name = "N")]
        sinks: Option<usize>,
        /// CPU-ms of real image work per frame, each busy sink (comma-separated: each).
        #[arg(long, value_name = "MS,..", value_delimiter = ',')]
        work_ms: Vec<f64>,
        /// Seconds each run lasts.
        #[arg(long, value_name = "S", default_value_t = 20.0)]
        duration: f64,
        /// Where the results, charts and summary go.
        #[arg(long, value_name = "DIR", default_value = "target/bench-replay")]
        out: PathBuf,
        /// The folder of frames (default: $STREAMWIRE_DATA/cockatoo_720p, or
        /// ../shared/data/cockatoo_720p).
        #[arg(long, value_name = "DIR", conflicts_with = "sim")]
        replay: Option<PathBuf>,
        /// Use the simulated camera instead of recorded frames.
        #[arg(long)]
        sim: bool,
        /// The camera's frame rate (default: as recorded).
        #[arg(long, value_name = "F")]
        fps: Option<f64>,
        /// Every blueprint, both profiles, every mode, 3 repetitions (unless given).
        #[arg(long)]
        matrix: bool,
        /// Repetitions of each cell (default 1; --matrix 3).
        #[arg(long, value_name = "N")]
        reps: Option<usize>,
        /// Run in this machine's network namespace (no root needed; the loopback
        /// counter then sees everything on it).
        #[arg(long)]
        no_netns: bool,
    },
    /// One cell of `bench replay` (started by it, in its namespace).
    #[command(hide = true)]
    Cell {
        /// The cell's spec.json.
        spec: PathBuf,
    },
    /// The far side of `bench latency` (started by it).
    #[command(hide = true)]
    Peer {
        /// The peer's own arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// Where `run` runs a plan of several processes.
#[derive(clap::Args, Clone, Debug, Default)]
struct RunPlacement {
    /// Run every process of the plan as a partition of this one process, joined by the
    /// loopback transport (no workers).
    #[arg(long)]
    in_process: bool,
    /// Start only the processes placed on this host; the others join by hand (`worker
    /// --connect`). Default: every process of the plan, on this machine.
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Where the coordinator listens for workers (repeatable; default
    /// `tcp/127.0.0.1:0`, a free port on loopback).
    #[arg(long, value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// How long to wait for every worker to be ready.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    join_timeout: f64,
    /// The run's id, the first chunk of its zenoh keys (default `run<pid>`).
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// A zenoh configuration file (JSON5) for the coordinator and the workers it starts:
    /// TLS or mTLS endpoints, user/password authentication, access control.
    #[arg(long, value_name = "FILE")]
    zenoh_config: Option<PathBuf>,
    /// Start the workers without shared memory (`worker --no-shared-memory`): large frames
    /// between the processes of a host are then copied through TCP.
    #[arg(long)]
    no_shared_memory: bool,
}

fn seconds(flag: &str, s: f64) -> anyhow::Result<Duration> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        bail!("{flag} {s}: expected a number of seconds > 0")
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum GraphFormat {
    Text,
    Dot,
    Mermaid,
    Json,
}

impl Cli {
    /// The CLI of binary `name` (used in help and completions).
    pub fn new(name: &str, about: &str) -> Cli {
        Cli {
            name: name.to_owned(),
            about: about.to_owned(),
            blueprints: Vec::new(),
            distributed: false,
        }
    }

    /// Runs plans of several processes as worker processes on zenoh (`run` coordinates,
    /// `worker` joins), instead of as partitions of one process. See the crate docs.
    #[cfg(feature = "zenoh")]
    pub fn distributed(mut self) -> Cli {
        self.distributed = true;
        self
    }

    /// Registers blueprint `name`, built by `build` from a config `C`: `C::default()`
    /// changed by `-o field=value` (each of `C`'s serde fields is a key; a field of a
    /// nested struct is `outer.inner`). The global keys (`compression`, `jpeg_quality`,
    /// `max_width`, `lossy_pixels`, `streams.*`) are applied to the blueprint `build`
    /// returns. `build` returns a `Blueprint`, or a `Result` whose error is shown.
    pub fn blueprint<C, F, R>(mut self, name: &str, about: &str, build: F) -> Cli
    where
        C: Serialize + DeserializeOwned + Default + 'static,
        F: Fn(C) -> R + 'static,
        R: IntoBlueprint,
    {
        let defaults = match serde_json::to_value(C::default()) {
            Ok(Value::Object(map)) => flatten(map),
            _ => serde_json::Map::new(),
        };
        let keys = defaults.clone();
        let blueprint_name = name.to_owned();
        let build: BuildFn = Box::new(move |settings: &[Setting]| {
            let mut object = keys.clone();
            let mut effective: Vec<Setting> = keys
                .iter()
                .map(|(k, v)| Setting {
                    key: k.clone(),
                    value: value_text(v),
                    source: Source::Registered,
                })
                .collect();
            let mut global = Vec::new();
            for s in settings {
                if is_global(&s.key) {
                    global.push(s.clone());
                    continue;
                }
                let Some(old) = object.get(&s.key) else {
                    let valid: Vec<String> = valid_keys(keys.keys().cloned());
                    return Err(ConfigError {
                        origin: s.source.clone(),
                        message: format!(
                            "unknown key `{}` for blueprint `{blueprint_name}`{}; the keys are: {}",
                            s.key,
                            config::suggest(&s.key, valid.iter().map(String::as_str)),
                            valid.join(", ")
                        ),
                    }
                    .into());
                };
                let value = parse_value(&s.value, old);
                object.insert(s.key.clone(), value);
                set_effective(&mut effective, s);
            }
            let config: C = serde_json::from_value(unflatten(object)).map_err(|e| {
                anyhow!("invalid configuration of blueprint `{blueprint_name}`: {e}")
            })?;
            let mut blueprint = build(config)
                .into_blueprint()
                .map_err(|e| anyhow!("blueprint `{blueprint_name}`: {e}"))?;
            let applied = apply_global(&mut blueprint, &global)?;
            effective.extend(applied);
            Ok(Built {
                blueprint,
                settings: effective,
            })
        });
        self.blueprints.push(Registered {
            name: name.to_owned(),
            about: about.to_owned(),
            kind: RegisteredKind::Code { defaults, build },
        });
        self
    }

    /// Registers blueprint `name` given as YAML text (e.g. `include_str!("robot.yaml")`).
    pub fn blueprint_file(mut self, name: &str, about: &str, yaml: &str) -> Cli {
        self.blueprints.push(Registered {
            name: name.to_owned(),
            about: about.to_owned(),
            kind: RegisteredKind::File {
                text: yaml.to_owned(),
            },
        });
        self
    }

    /// Runs the command line of this process and returns its exit status: 0 when
    /// everything went well, 1 with the error (a failing module named) otherwise.
    pub fn main(self) -> ExitCode {
        let stop = Arc::new(AtomicBool::new(false));
        let code = self.run_args(std::env::args_os(), std::env::vars(), &stop);
        match code {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        }
    }

    /// Runs the command line `args` (the first is the program name) with environment
    /// `env`. `stop` stops a `run` when set (the Ctrl+C handler sets it too).
    pub fn run_args<I, T>(
        &self,
        args: I,
        env: impl IntoIterator<Item = (String, String)>,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<ExitCode>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let command = self.command();
        let matches = match command.try_get_matches_from(args) {
            Ok(m) => m,
            Err(e) => {
                // Help and version are not errors.
                let code = if e.use_stderr() {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                };
                let _ = e.print();
                return Ok(code);
            }
        };
        let args = <Args as clap::FromArgMatches>::from_arg_matches(&matches)?;
        // A worker plans what its coordinator planned and already warned about: its
        // planner's warnings would repeat them once per worker.
        let quiet_planner = matches!(args.command, Command::Worker { .. });
        init_logging(args.verbose, quiet_planner);
        let env: Vec<(String, String)> = env.into_iter().collect();
        let out = &mut std::io::stdout();
        match args.command {
            Command::List => {
                write!(out, "{}", self.list())?;
                Ok(ExitCode::SUCCESS)
            }
            Command::Completions { shell } => {
                let mut command = self.command();
                clap_complete::generate(shell, &mut command, self.name.clone(), out);
                Ok(ExitCode::SUCCESS)
            }
            Command::Topic { command } => self.topic(command, &env, stop, out),
            Command::Bench { command } => {
                let replay_blueprints = ["replay-basic", "replay-full", "replay-heavy"]
                    .iter()
                    .all(|name| self.blueprints.iter().any(|b| b.name == *name));
                bench_command(command, &env, replay_blueprints, out)
            }
            Command::Config { blueprint, set } => {
                let built = self.resolve(&blueprint, &env, &set)?;
                write!(out, "{}", render_settings(&blueprint, &built.settings))?;
                Ok(ExitCode::SUCCESS)
            }
            Command::Graph {
                blueprint,
                format,
                set,
            } => {
                let built = self.resolve(&blueprint, &env, &set)?;
                let plan = built.blueprint.build()?;
                let text = match format {
                    GraphFormat::Text => plan.to_string(),
                    GraphFormat::Dot => plan.to_dot(),
                    GraphFormat::Mermaid => to_mermaid(&plan),
                    GraphFormat::Json => serde_json::to_string_pretty(&plan.summary())? + "\n",
                };
                write!(out, "{text}")?;
                Ok(ExitCode::SUCCESS)
            }
            Command::Check { file } => {
                let target = file.to_string_lossy().into_owned();
                match self
                    .resolve(&target, &env, &[])
                    .and_then(|b| b.blueprint.build().map_err(anyhow::Error::from))
                {
                    Ok(plan) => {
                        let count = |n: usize, one: &str, many: &str| {
                            format!("{n} {}", if n == 1 { one } else { many })
                        };
                        writeln!(
                            out,
                            "ok: {}, {}, {}",
                            count(plan.instances().count(), "instance", "instances"),
                            count(plan.codec_nodes().count(), "codec node", "codec nodes"),
                            count(plan.links().count(), "link", "links")
                        )?;
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        Ok(ExitCode::FAILURE)
                    }
                }
            }
            Command::Run {
                blueprint,
                duration,
                mut set,
                replay,
                fps,
                placement,
                report,
            } => {
                if let Some(dir) = replay {
                    set.push(format!("replay.dir={}", dir.display()));
                }
                if let Some(fps) = fps {
                    set.push(format!("replay.fps={fps}"));
                }
                let built = self.resolve(&blueprint, &env, &set)?;
                let duration = duration.map(|s| seconds("--duration", s)).transpose()?;
                let join_timeout = seconds("--join-timeout", placement.join_timeout)?;
                let runnable = built.blueprint.into_runnable()?;
                let processes = runnable.plan().processes().len();
                let (code, run_report) =
                    if self.distributed && processes > 1 && !placement.in_process {
                        self.run_distributed(
                            &blueprint,
                            &set,
                            args.verbose,
                            runnable,
                            &placement,
                            join_timeout,
                            duration,
                            stop,
                        )?
                    } else {
                        run(runnable, duration, stop)?
                    };
                if let Some(path) = report {
                    let json = serde_json::to_string_pretty(&run_report)?;
                    std::fs::write(&path, json + "\n").with_context(|| {
                        format!("cannot write the report to {}", path.display())
                    })?;
                }
                Ok(code)
            }
            Command::Worker {
                blueprint,
                process,
                connect,
                listen,
                run_id,
                join_timeout,
                set,
                supervised,
                zenoh_config,
                no_shared_memory,
            } => {
                let join_timeout = seconds("--join-timeout", join_timeout)?;
                let built = self.resolve(&blueprint, &env, &set)?;
                self.work(
                    built.blueprint,
                    WorkerArgs {
                        process,
                        connect,
                        listen,
                        run_id,
                        join_timeout,
                        supervised,
                        zenoh_config,
                        shared_memory: !no_shared_memory,
                    },
                    stop,
                )
            }
        }
    }

    /// `topic bench | list | echo`.
    fn topic(
        &self,
        command: topic::TopicCommand,
        env: &[(String, String)],
        stop: &Arc<AtomicBool>,
        out: &mut dyn Write,
    ) -> anyhow::Result<ExitCode> {
        let resolve = |target: &str, set: &[String]| -> anyhow::Result<Blueprint> {
            Ok(self.resolve(target, env, set)?.blueprint)
        };
        let optional_seconds = |flag: &str, s: Option<f64>| s.map(|s| seconds(flag, s)).transpose();
        match command {
            topic::TopicCommand::Bench {
                stream,
                join,
                duration,
                count,
                wait,
                report,
                qos,
                window,
            } => {
                if count == Some(0) {
                    bail!("--count 0: expected at least 1 message");
                }
                let settings = topic::BenchSettings {
                    stream,
                    duration: optional_seconds("--duration", duration)?,
                    count,
                    wait: optional_seconds("--wait", wait)?,
                    report,
                    qos,
                    window,
                };
                let report = topic::bench(join.target(&resolve)?, &settings, stop, out)?;
                // Nothing received is an answer, not a failure of the tool; the report
                // says it plainly. Exit status 2 lets a script tell.
                Ok(if report.summary.count == 0 {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                })
            }
            topic::TopicCommand::List { join } => {
                topic::list(join.target(&resolve)?, out)?;
                Ok(ExitCode::SUCCESS)
            }
            topic::TopicCommand::Echo {
                stream,
                join,
                count,
                wait,
            } => {
                topic::echo(
                    join.target(&resolve)?,
                    &stream,
                    count,
                    optional_seconds("--wait", wait)?,
                    stop,
                    out,
                )?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }

    #[cfg(feature = "zenoh")]
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts of one `run` command line"
    )]
    fn run_distributed(
        &self,
        target: &str,
        set: &[String],
        verbose: u8,
        runnable: streamwire_graph::RunnablePlan,
        placement: &RunPlacement,
        join_timeout: Duration,
        duration: Option<Duration>,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<(ExitCode, RunReport)> {
        workers::coordinate(
            &workers::Coordinate {
                target,
                set,
                verbose,
                host: placement.host.clone(),
                listen: placement.listen.clone(),
                run_id: placement.run_id.clone(),
                join_timeout,
                duration,
                zenoh_config: placement.zenoh_config.clone(),
                shared_memory: !placement.no_shared_memory,
            },
            runnable,
            stop,
        )
    }

    #[cfg(not(feature = "zenoh"))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts of one `run` command line"
    )]
    fn run_distributed(
        &self,
        _target: &str,
        _set: &[String],
        _verbose: u8,
        runnable: streamwire_graph::RunnablePlan,
        _placement: &RunPlacement,
        _join_timeout: Duration,
        duration: Option<Duration>,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<(ExitCode, RunReport)> {
        run(runnable, duration, stop)
    }

    fn work(
        &self,
        blueprint: Blueprint,
        args: WorkerArgs,
        stop: &Arc<AtomicBool>,
    ) -> anyhow::Result<ExitCode> {
        if !self.distributed {
            bail!(
                "`{} worker`: this binary runs a plan's processes in one process (its `Cli` \
                 has no `.distributed()`, from streamwire-cli's `zenoh` feature)",
                self.name
            );
        }
        #[cfg(feature = "zenoh")]
        {
            workers::work(blueprint, args, stop)
        }
        #[cfg(not(feature = "zenoh"))]
        {
            let _ = (blueprint, args, stop);
            bail!("`worker` needs streamwire-cli's `zenoh` feature")
        }
    }

    fn command(&self) -> clap::Command {
        let mut command = Args::command()
            .name(self.name.clone())
            .bin_name(self.name.clone())
            .about(self.about.clone());
        // The latency suite starts zenoh peers: shown where zenoh workers are (and the
        // suite is built in), so an application's help does not change with the
        // features a workspace build happens to unify.
        if !(self.distributed && cfg!(feature = "bench")) {
            command = command.mut_subcommand("bench", |c| c.hide(true));
        }
        if self.distributed {
            return command;
        }
        // Without workers every plan runs in this process: the worker command and the
        // placement flags would only mislead.
        command
            .mut_subcommand("worker", |c| c.hide(true))
            .mut_subcommand("run", |c| {
                [
                    "in_process",
                    "host",
                    "listen",
                    "join_timeout",
                    "run_id",
                    "zenoh_config",
                    "no_shared_memory",
                ]
                .into_iter()
                .fold(c, |c, arg| c.mut_arg(arg, |a| a.hide(true)))
            })
    }

    /// `list`: the blueprints and the module tags, one line each.
    fn list(&self) -> String {
        let mut out = String::from("blueprints:\n");
        if self.blueprints.is_empty() {
            out.push_str("  (none registered; `run FILE` takes a blueprint file)\n");
        }
        let width = self
            .blueprints
            .iter()
            .map(|b| b.name.len())
            .max()
            .unwrap_or(0);
        for b in &self.blueprints {
            let keys = match &b.kind {
                RegisteredKind::Code { defaults, .. } if !defaults.is_empty() => {
                    let keys: Vec<&str> = defaults.keys().map(String::as_str).collect();
                    format!(" [config: {}]", keys.join(", "))
                }
                _ => String::new(),
            };
            out.push_str(&format!("  {:width$}  {}{keys}\n", b.name, b.about));
        }
        out.push_str("modules (the `type:` of a blueprint file's instance):\n");
        let modules = registered_modules();
        let width = modules.iter().map(|m| m.tag.len()).max().unwrap_or(0);
        for m in modules {
            let fields = if m.config_fields.is_empty() {
                String::new()
            } else {
                format!(" [config: {}]", m.config_fields.join(", "))
            };
            out.push_str(&format!("  {:width$}  {}{fields}\n", m.tag, m.doc));
        }
        out
    }

    /// A target (registered name or file) with every configuration layer applied.
    fn resolve(
        &self,
        target: &str,
        env: &[(String, String)],
        flags: &[String],
    ) -> anyhow::Result<Built> {
        let mut layers = config::from_env(env.iter().cloned())?;
        for flag in flags {
            layers.push(config::parse_flag(flag)?);
        }
        if let Some(registered) = self.blueprints.iter().find(|b| b.name == target) {
            return match &registered.kind {
                RegisteredKind::Code { build, .. } => build(&layers),
                RegisteredKind::File { text } => {
                    let path = format!("<blueprint {}>", registered.name);
                    let file = BlueprintFile::parse(text, FileFormat::Yaml, Path::new(&path))?;
                    from_file(file, text, &path, &layers)
                }
            };
        }
        let path = Path::new(target);
        let looks_like_file = path.exists()
            || matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            );
        if !looks_like_file {
            let names: Vec<&str> = self.blueprints.iter().map(|b| b.name.as_str()).collect();
            bail!(
                "no blueprint `{target}`{}: the registered blueprints are: {} (or give a \
                 blueprint file: .yaml, .yml, .json)",
                config::suggest(target, names.iter().copied()),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read blueprint file {}", path.display()))?;
        let file = BlueprintFile::parse(&text, FileFormat::of(path), path)?;
        from_file(file, &text, &path.display().to_string(), &layers)
    }
}

/// What a registered blueprint's builder returns: a blueprint, or a result of one.
pub trait IntoBlueprint {
    /// The blueprint, or why it could not be made.
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>>;
}

impl IntoBlueprint for Blueprint {
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>> {
        Ok(self)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> IntoBlueprint for Result<Blueprint, E> {
    fn into_blueprint(self) -> Result<Blueprint, Box<dyn std::error::Error + Send + Sync>> {
        self.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    }
}

/// `{"camera": {"fps": 20}}` as `{"camera.fps": 20}`: every leaf a `-o` key.
fn flatten(map: serde_json::Map<String, Value>) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                for (k, v) in flatten(inner) {
                    out.insert(format!("{key}.{k}"), v);
                }
            }
            other => {
                out.insert(key, other);
            }
        }
    }
    out
}

/// The inverse of [`flatten`].
fn unflatten(flat: serde_json::Map<String, Value>) -> Value {
    fn insert(map: &mut serde_json::Map<String, Value>, parts: &[&str], value: Value) {
        match parts {
            [] => {}
            [last] => {
                map.insert((*last).to_owned(), value);
            }
            [first, rest @ ..] => {
                let entry = map
                    .entry((*first).to_owned())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(serde_json::Map::new());
                }
                if let Value::Object(inner) = entry {
                    insert(inner, rest, value);
                }
            }
        }
    }
    let mut root = serde_json::Map::new();
    for (key, value) in flat {
        let parts: Vec<&str> = key.split('.').collect();
        insert(&mut root, &parts, value);
    }
    Value::Object(root)
}

fn is_global(key: &str) -> bool {
    config::GLOBAL_KEYS.iter().any(|(k, _)| *k == key) || key.starts_with("streams.")
}

fn valid_keys(own: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut keys: Vec<String> = config::GLOBAL_KEYS
        .iter()
        .map(|(k, _)| (*k).to_owned())
        .collect();
    keys.push("streams.<stream>.<setting>".to_owned());
    keys.extend(own);
    keys
}

fn set_effective(effective: &mut Vec<Setting>, s: &Setting) {
    effective.retain(|e| e.key != s.key);
    effective.push(s.clone());
}

/// A `-o` value as JSON, read the way the old value is typed: a string field takes the
/// text as it is, anything else is parsed as YAML/JSON scalar text (`15`, `true`, `0.5`).
fn parse_value(text: &str, old: &Value) -> Value {
    if old.is_string() {
        return Value::String(text.to_owned());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Applies the global and per-stream settings (already checked) to a blueprint built by
/// code; returns them for the effective configuration.
fn apply_global(blueprint: &mut Blueprint, settings: &[Setting]) -> anyhow::Result<Vec<Setting>> {
    let mut effective: Vec<Setting> = Vec::new();
    for s in settings {
        apply_one(blueprint, s)?;
        set_effective(&mut effective, s);
    }
    for (key, _) in config::GLOBAL_KEYS {
        if !effective.iter().any(|s| s.key == *key) {
            effective.push(Setting {
                key: (*key).to_owned(),
                value: default_of(key),
                source: Source::Default,
            });
        }
    }
    Ok(effective)
}

fn default_of(key: &str) -> String {
    match key {
        "compression" => "auto".to_owned(),
        "lossy_pixels" => "warn".to_owned(),
        _ => "(the codec's default)".to_owned(),
    }
}

fn apply_one(blueprint: &mut Blueprint, s: &Setting) -> anyhow::Result<()> {
    let err = |message: String| ConfigError {
        origin: s.source.clone(),
        message,
    };
    if s.key.starts_with("streams.") {
        let (stream, settings) = config::check_stream(&s.key, &s.value).map_err(err)?;
        blueprint.stream_override(&stream, &settings);
        return Ok(());
    }
    config::check_global(&s.key, &s.value).map_err(err)?;
    match s.key.as_str() {
        "compression" => {
            blueprint.compression(s.value.parse::<Compression>()?);
        }
        "lossy_pixels" => {
            blueprint.lossy_pixels(s.value.parse::<Report>()?);
        }
        key => {
            blueprint.codec_default(key, &s.value);
        }
    }
    Ok(())
}

/// A blueprint file with the environment and `-o` layers on top.
fn from_file(
    mut file: BlueprintFile,
    text: &str,
    path: &str,
    layers: &[Setting],
) -> anyhow::Result<Built> {
    let lines = KeyLines::of(text).unwrap_or_default();
    let at = |keys: &[&str]| Source::File {
        path: path.to_owned(),
        line: lines.line(keys),
    };
    // The file's own values, as the lowest layer.
    let mut effective: Vec<Setting> = Vec::new();
    let mut push = |key: String, value: String, source: Source| {
        effective.push(Setting { key, value, source });
    };
    let globals: [(&str, Option<String>); 4] = [
        ("compression", file.compression.map(|c| c.to_string())),
        ("jpeg_quality", file.jpeg_quality.map(|q| q.to_string())),
        ("max_width", file.max_width.map(|w| w.to_string())),
        ("lossy_pixels", file.lossy_pixels.map(|r| r.to_string())),
    ];
    for (key, value) in globals {
        match value {
            Some(v) => push(key.to_owned(), v, at(&[key])),
            None => push(key.to_owned(), default_of(key), Source::Default),
        }
    }
    for (stream, settings) in &file.streams {
        let text_form = settings.to_string();
        for pair in text_form
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            if let Some((k, v)) = pair.split_once('=') {
                push(
                    format!("streams.{stream}.{k}"),
                    v.to_owned(),
                    at(&["streams", stream]),
                );
            }
        }
    }
    // Instance config as JSON objects, edited by the layers, then read back.
    let mut objects: Vec<(String, serde_json::Map<String, Value>)> = Vec::new();
    for (name, module) in &file.instances.0 {
        let value = serde_json::to_value(&**module)?;
        let Value::Object(map) = value else {
            bail!("instance `{name}` did not serialize as a map");
        };
        for (k, v) in &map {
            if k != "type" {
                push(
                    format!("{name}.{k}"),
                    value_text(v),
                    at(&["instances", name, k]),
                );
            }
        }
        objects.push((name.clone(), map));
    }
    let mut changed = vec![false; objects.len()];
    for s in layers {
        if is_global(&s.key) {
            let err = |message: String| ConfigError {
                origin: s.source.clone(),
                message,
            };
            if s.key.starts_with("streams.") {
                let (stream, settings) = config::check_stream(&s.key, &s.value).map_err(err)?;
                let old = file.streams.remove(&stream).unwrap_or_default();
                file.streams.insert(stream, old.merged(&settings));
            } else {
                config::check_global(&s.key, &s.value).map_err(err)?;
                match s.key.as_str() {
                    "compression" => file.compression = Some(s.value.parse()?),
                    "lossy_pixels" => file.lossy_pixels = Some(s.value.parse()?),
                    "jpeg_quality" => file.jpeg_quality = Some(s.value.parse()?),
                    "max_width" => file.max_width = Some(s.value.parse()?),
                    _ => {}
                }
            }
            set_effective(&mut effective, s);
            continue;
        }
        let own_keys: Vec<String> = objects
            .iter()
            .flat_map(|(n, m)| {
                m.keys()
                    .filter(|k| *k != "type")
                    .map(move |k| format!("{n}.{k}"))
            })
            .collect();
        let unknown = |what: String| -> anyhow::Error {
            let valid = valid_keys(own_keys.clone());
            ConfigError {
                origin: s.source.clone(),
                message: format!(
                    "{what}{}; the keys are: {}",
                    config::suggest(&s.key, valid.iter().map(String::as_str)),
                    valid.join(", ")
                ),
            }
            .into()
        };
        let Some((instance, field)) = s.key.rsplit_once('.') else {
            return Err(unknown(format!("unknown key `{}`", s.key)));
        };
        let Some(index) = objects.iter().position(|(n, _)| n == instance) else {
            return Err(unknown(format!(
                "unknown key `{}`: no instance `{instance}`",
                s.key
            )));
        };
        let map = &mut objects[index].1;
        let Some(old) = map.get(field) else {
            return Err(unknown(format!(
                "unknown key `{}`: `{instance}` has no config field `{field}`",
                s.key
            )));
        };
        let value = parse_value(&s.value, old);
        map.insert(field.to_owned(), value);
        changed[index] = true;
        set_effective(&mut effective, s);
    }
    for ((name, map), changed) in objects.into_iter().zip(changed) {
        if !changed {
            continue;
        }
        let module: Box<dyn ModuleConfig> = serde_json::from_value(Value::Object(map))
            .map_err(|e| anyhow!("invalid configuration of instance `{name}`: {e}"))?;
        if let Some(slot) = file.instances.0.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = module;
        }
    }
    Ok(Built {
        blueprint: file.into_blueprint(),
        settings: effective,
    })
}

/// `config`: one line per key, its value and where it came from.
fn render_settings(target: &str, settings: &[Setting]) -> String {
    let mut rows: BTreeMap<&str, &Setting> = BTreeMap::new();
    for s in settings {
        rows.insert(&s.key, s);
    }
    let key_width = rows.keys().map(|k| k.len()).max().unwrap_or(0);
    let value_width = rows.values().map(|s| s.value.len()).max().unwrap_or(0);
    let mut out = format!("configuration of `{target}` (lowest to highest: file, env, -o):\n");
    for (key, s) in rows {
        out.push_str(&format!(
            "  {key:key_width$} = {:value_width$}  ({})\n",
            s.value, s.source
        ));
    }
    out
}

/// The plan as a Mermaid flowchart: instances grouped by process, codec nodes, links.
fn to_mermaid(plan: &Plan) -> String {
    let summary = plan.summary();
    let mut out = String::from("flowchart LR\n");
    let mut by_process: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let id = |name: &str| {
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
    };
    for i in &summary.instances {
        by_process
            .entry(i.placement.clone())
            .or_default()
            .push(format!(
                "    {}[\"{} ({})\"]",
                id(&i.name),
                i.name,
                i.module_type
            ));
    }
    for c in &summary.codec_nodes {
        let name = format!("{:?} {} {}", c.kind, c.codec, c.stream).to_lowercase();
        by_process
            .entry(c.placement.clone())
            .or_default()
            .push(format!("    {}{{{{\"{name}\"}}}}", id(&name)));
    }
    for (n, (process, nodes)) in by_process.iter().enumerate() {
        out.push_str(&format!("  subgraph p{n}[\"{process}\"]\n"));
        for node in nodes {
            out.push_str(&format!("  {node}\n"));
        }
        out.push_str("  end\n");
    }
    for l in &summary.links {
        let from = id(l.from_name.split('.').next().unwrap_or(&l.from_name));
        let to = id(l.to_name.split('.').next().unwrap_or(&l.to_name));
        out.push_str(&format!(
            "  {from} -->|\"{} ({})\"| {to}\n",
            l.stream, l.locality
        ));
    }
    out
}

fn init_logging(verbose: u8, quiet_planner: bool) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let directives = if quiet_planner {
        format!("{level},streamwire_graph::planner=error")
    } else {
        level.to_owned()
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(directives));
    // A second CLI in one process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// `bench latency` and its peer.
#[cfg(feature = "bench")]
fn bench_command(
    command: BenchCommand,
    env: &[(String, String)],
    replay_blueprints: bool,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    bench::run(command, env, replay_blueprints, out)
}

#[cfg(not(feature = "bench"))]
fn bench_command(
    command: BenchCommand,
    _env: &[(String, String)],
    _replay_blueprints: bool,
    _out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let _ = command;
    bail!("`bench` needs streamwire-cli's `bench` feature (the stock `streamwire` binary has it)")
}

/// What `worker` was given.
#[cfg_attr(
    not(feature = "zenoh"),
    expect(dead_code, reason = "read by the zenoh workers")
)]
struct WorkerArgs {
    process: String,
    connect: Vec<String>,
    listen: Vec<String>,
    run_id: Option<String>,
    join_timeout: Duration,
    supervised: bool,
    zenoh_config: Option<PathBuf>,
    shared_memory: bool,
}

/// The exit status of a run that ended with `report`.
fn exit_code(report: &RunReport) -> ExitCode {
    match report.reason {
        EndReason::Failed => {
            eprintln!(
                "error: {}",
                report
                    .failure
                    .as_deref()
                    .unwrap_or("a module failed (no message)")
            );
            ExitCode::FAILURE
        }
        _ if !report.stragglers.is_empty() => {
            eprintln!(
                "error: did not stop within the deadline: {}",
                report.stragglers.join(", ")
            );
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// Runs `f` once on Ctrl+C: only the first handler of a process is installed (a second
/// `run` in one process keeps it), so `stop` is polled as well.
fn on_ctrl_c(f: impl Fn() + Send + 'static) {
    let _ = ctrlc::set_handler(f);
}

/// `run`: starts the plan, shows the status line, stops on `--duration`, Ctrl+C or when
/// every module finished, prints the report; a failed module is the exit status.
fn run(
    runnable: streamwire_graph::RunnablePlan,
    duration: Option<Duration>,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<(ExitCode, RunReport)> {
    // Each planned process a partition of this one, joined by the loopback.
    let handle = Runtime::start(
        runnable,
        RunOptions {
            partitions: streamwire_runtime::Partitions::PerProcess,
            ..RunOptions::default()
        },
    )?;
    let flag = handle.stop_flag();
    let ctrl_c = stop.clone();
    on_ctrl_c(move || {
        ctrl_c.store(true, Ordering::SeqCst);
        flag.stop();
    });
    let started = Instant::now();
    let terminal = std::io::stderr().is_terminal();
    let bar = if terminal {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        Some(bar)
    } else {
        None
    };
    let mut previous = handle.stats();
    let mut last_plain = Instant::now();
    // Stopped from outside (duration, Ctrl+C), or ended by itself (every module finished,
    // or one failed and the runtime stopped the rest): only the former asks for a stop,
    // so a failure is reported as one.
    let mut ask_stop = true;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        if stop.load(Ordering::SeqCst) || duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        let stats = handle.stats();
        if !stats.instances.is_empty() && stats.instances.iter().all(|i| i.finished) {
            ask_stop = false;
            break;
        }
        let line = status_line(&previous, &stats);
        match &bar {
            Some(bar) => {
                bar.set_message(line);
                bar.tick();
            }
            None if last_plain.elapsed() >= Duration::from_secs(1) => {
                eprintln!("{line}");
                last_plain = Instant::now();
            }
            None => {}
        }
        if last_plain.elapsed() >= Duration::from_secs(1) || bar.is_some() {
            previous = stats;
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if ask_stop {
        handle.stop();
    }
    let report: RunReport = handle.wait();
    println!("{report}");
    Ok((exit_code(&report), report))
}

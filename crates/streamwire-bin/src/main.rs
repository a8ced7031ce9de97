//! The stock `streamwire` binary: the CLI library with the built-in modules and
//! blueprints, and every capability added as a plugin (distributed runs, MCAP, the
//! benchmarks). A robot application is its own binary calling `streamwire::cli::Cli` the
//! same way, with its own modules (see `examples/app`).

mod mcap_replay;

use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use streamwire::prelude::*;
use streamwire_cli::Cli;
use streamwire_cluster::cli::Distributed;
use streamwire_latency_bench::cli::LatencyBench;
use streamwire_mcap::cli::Mcap;
use streamwire_modules::demo::{DemoConfig, DemoError, Layout, ReplayFormat, demo_blueprint_with};
use streamwire_modules::replay_bench::{BenchBlueprint, ReplayBenchConfig, bench_blueprint_with};
use streamwire_replay_bench::cli::ReplayBench;
use streamwire_scale_bench::cli::ScaleBench;
use streamwire_web::{RelayConfig, RelayToken, WebRelay};

use mcap_replay::McapReplay;

/// The recording formats `replay.dir` may name besides a folder of frames.
const REPLAY_FORMATS: [&dyn ReplayFormat; 1] = [&McapReplay];

/// The `demo` blueprint's keys: the demo's own (`camera.fps`, `replay.dir`, `busy.work_ms`,
/// ...), the web relay's (`web.port`, `web.enabled`, `web.token`, `web.allowed_origins`)
/// and its Foxglove protocol's (`foxglove.enabled`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default)]
struct StockDemo {
    #[serde(flatten)]
    demo: DemoConfig,
    web: WebSettings,
    foxglove: FoxgloveSettings,
}

/// The Foxglove WebSocket protocol on the web relay (`foxglove.*`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FoxgloveSettings {
    /// Serve it at `/foxglove` on the relay's port, for Foxglove and Lichtblick (off by
    /// default; needs `web.enabled`).
    enabled: bool,
}

/// The demo's web relay (`web.*`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct WebSettings {
    /// Serve the viewer and the rosbridge websocket.
    enabled: bool,
    /// Its port on 127.0.0.1 (0: a free one).
    port: u16,
    /// `random` (a new token each run, in the URL printed), `none` (no token), or a token.
    token: RelayToken,
    /// Origins whose pages may open the websocket besides the relay's own, comma-separated
    /// (`https://app.foxglove.dev`).
    allowed_origins: String,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            enabled: true,
            port: streamwire_web::DEFAULT_PORT,
            token: RelayToken::Random,
            allowed_origins: String::new(),
        }
    }
}

fn demo(config: StockDemo) -> Result<Blueprint, DemoError> {
    let mut blueprint = demo_blueprint_with(&config.demo, &REPLAY_FORMATS)?;
    if config.web.enabled {
        // The relay wants the camera's JPEG bytes: it sits on the operator's laptop, fed
        // by the encode node in the camera's process, with no decode anywhere for it.
        let mut relay = RelayConfig {
            token: config.web.token.clone(),
            allowed_origins: config
                .web
                .allowed_origins
                .split(',')
                .map(str::trim)
                .filter(|origin| !origin.is_empty())
                .map(str::to_owned)
                .collect(),
            ..RelayConfig::default().with_port(config.web.port)
        };
        if config.foxglove.enabled {
            // The run's configuration, as Foxglove's parameters (read-only, the token left
            // out). Plain data: it always serializes.
            relay = match relay.clone().with_foxglove().with_parameters(&config) {
                Ok(relay) => relay,
                Err(error) => {
                    eprintln!("foxglove: the configuration is not shown as parameters: {error}");
                    relay.with_foxglove()
                }
            };
        }
        let web = blueprint.add("web", WebRelay::new(relay));
        blueprint.place(&web, Placement::process("ui").on_host("laptop"));
        blueprint.autoconnect();
        // Where to point a browser is the relay's to say (`Context::announce`): `run`
        // prints it, whatever the blueprint.
    }
    Ok(blueprint)
}

fn main() -> ExitCode {
    // Built-in blueprints, each by name with its serde config type.
    Cli::new(
        "streamwire",
        "Typed robot dataflow: run, inspect and configure blueprints",
    )
    .blueprint(
        "demo",
        "simulated robot (or --replay DIR): camera, depth, lidar, odometry -> detector, mapper, busy sinks, recorder, web viewer; four processes on three hosts",
        demo,
    )
    .blueprint(
        "demo-split",
        "the demo split further (camera and mapper in processes of their own): six workers",
        |mut config: StockDemo| {
            config.demo.layout = Layout::Split;
            demo(config)
        },
    )
    // The replay benchmark's blueprints (`bench replay --blueprint basic|full|heavy`),
    // named by the modules crate.
    .blueprint(
        BenchBlueprint::Basic.registered_name(),
        "benchmark: the camera (or --replay DIR) and one busy sink; two workers; -o mode=raw|codec|auto, -o hosts=one|split",
        |config: ReplayBenchConfig| bench_blueprint_with(BenchBlueprint::Basic, &config, &REPLAY_FORMATS),
    )
    .blueprint(
        BenchBlueprint::Full.registered_name(),
        "benchmark: camera, depth, lidar, odometry -> detector, mapper, viewer, logger; five workers",
        |config: ReplayBenchConfig| bench_blueprint_with(BenchBlueprint::Full, &config, &REPLAY_FORMATS),
    )
    .blueprint(
        BenchBlueprint::Heavy.registered_name(),
        "benchmark: replay-full plus four busy sinks (-o work_ms=N); six workers",
        |config: ReplayBenchConfig| bench_blueprint_with(BenchBlueprint::Heavy, &config, &REPLAY_FORMATS),
    )
    // A plan of several processes runs as worker processes on zenoh (`worker`, `run`'s
    // placement flags, `topic --connect`).
    .add_plugin(Distributed)
    // `run --record`, `run --replay FILE.mcap`'s flags, `info`.
    .add_plugin(Mcap)
    .add_plugin(LatencyBench)
    // `bench replay` runs the benchmark's blueprints registered above.
    .add_plugin(ReplayBench::new(&BenchBlueprint::REGISTERED_NAMES))
    // `bench soak` runs this binary's own `run` (`demo-split` by default).
    .add_plugin(ScaleBench)
    .main()
}

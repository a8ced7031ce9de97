//! `bench latency` and `bench peer`: the suite on the command line, as a plugin of
//! `streamwire-cli`.

use std::process::{Command, ExitCode};

use anyhow::Context as _;
use clap::{Args as _, FromArgMatches};
use streamwire_cli::{Cli, CommandContext, Plugin, PluginCommand};

use crate::{Options, Route};

/// `bench latency` (and its hidden far side, `bench peer`, which the suite starts as this
/// binary again).
#[derive(Clone, Copy, Debug, Default)]
pub struct LatencyBench;

impl Plugin for LatencyBench {
    fn build(&self, cli: &mut Cli) {
        // The abouts after `augment_args`, which would take the `Args` structs' doc comments.
        let command = LatencyArgs::augment_args(clap::Command::new("latency")).about(
            "Latency and throughput across payload sizes and transports, against bare zenoh, \
             iceoryx2 and a bare channel (`BENCH_CSV=1`: CSV on stdout, the table on stderr)",
        );
        cli.add_bench(PluginCommand::new(command, |_cli, matches, cx| {
            latency(LatencyArgs::from_arg_matches(matches)?, cx)
        }));
        let peer = PeerArgs::augment_args(clap::Command::new("peer"))
            .about("The far side of `bench latency` (started by it)")
            .hide(true);
        cli.add_bench(PluginCommand::new(peer, |_cli, matches, _cx| {
            let args = PeerArgs::from_arg_matches(matches)?;
            crate::serve_peer(&args.args)?;
            Ok(ExitCode::SUCCESS)
        }));
    }
}

/// `bench peer` arguments.
#[derive(clap::Args)]
struct PeerArgs {
    /// The peer's own arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// `bench latency` arguments.
#[derive(clap::Args)]
struct LatencyArgs {
    /// Round trips per size.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    samples: usize,
    /// Payload sizes in bytes, comma-separated (default: 10 sizes from 0 B to 4 MiB).
    #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Payload sizes of the 16-hop chain (default: 0, 4096, 65536).
    #[arg(long, value_name = "BYTES,..", value_delimiter = ',')]
    chain_sizes: Vec<usize>,
    /// What to measure, comma-separated: in-process, loopback, zenoh (a distributed run's
    /// workers, closed and --insecure), zenoh-direct (the transport without the workers),
    /// zenoh-shm, iceoryx2 (the zero-copy IPC baseline, event-driven and busy-waiting),
    /// chain (default: all).
    #[arg(long, value_name = "NAME,..", value_delimiter = ',')]
    transport: Vec<String>,
}

/// `bench latency`: the suite against its peer (this program's `bench peer`).
fn latency(args: LatencyArgs, cx: &mut CommandContext<'_>) -> anyhow::Result<ExitCode> {
    if args.samples == 0 {
        anyhow::bail!("--samples 0: expected at least 1");
    }
    let defaults = Options::default();
    let routes = if args.transport.is_empty() {
        defaults.routes.clone()
    } else {
        args.transport
            .iter()
            .map(|t| t.parse::<Route>().map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    let options = Options {
        samples: args.samples,
        sizes: if args.sizes.is_empty() {
            defaults.sizes
        } else {
            args.sizes
        },
        chain_sizes: if args.chain_sizes.is_empty() {
            defaults.chain_sizes
        } else {
            args.chain_sizes
        },
        routes,
    };
    let exe = std::env::current_exe().context("cannot find this program to start the peer")?;
    let peer = move || {
        let mut c = Command::new(&exe);
        c.arg("bench").arg("peer");
        c
    };
    let suite = crate::run(&options, &peer, &mut |line| eprintln!("bench: {line}"))?;
    let csv = cx
        .env
        .iter()
        .any(|(k, v)| k == "BENCH_CSV" && !v.is_empty());
    if csv {
        // Machine-readable on stdout, the table for people on stderr.
        write!(cx.out, "{}", suite.to_csv())?;
        eprint!("{suite}");
    } else {
        write!(cx.out, "{suite}")?;
    }
    Ok(ExitCode::SUCCESS)
}

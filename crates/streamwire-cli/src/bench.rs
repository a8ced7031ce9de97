//! `bench latency`: the command-line side of [`streamwire_bench`].

use std::io::Write;
use std::process::{Command, ExitCode};

use anyhow::Context as _;
use streamwire_bench::{Options, Transport};

use crate::BenchCommand;

/// Runs `bench latency` (or its hidden peer).
pub(crate) fn run(
    command: BenchCommand,
    env: &[(String, String)],
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Peer { args } => {
            streamwire_bench::serve_peer(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Latency {
            samples,
            sizes,
            chain_sizes,
            transport,
        } => {
            if samples == 0 {
                anyhow::bail!("--samples 0: expected at least 1");
            }
            let defaults = Options::default();
            let transports = if transport.is_empty() {
                defaults.transports.clone()
            } else {
                transport
                    .iter()
                    .map(|t| t.parse::<Transport>().map_err(anyhow::Error::msg))
                    .collect::<anyhow::Result<Vec<_>>>()?
            };
            let options = Options {
                samples,
                sizes: if sizes.is_empty() {
                    defaults.sizes
                } else {
                    sizes
                },
                chain_sizes: if chain_sizes.is_empty() {
                    defaults.chain_sizes
                } else {
                    chain_sizes
                },
                transports,
            };
            let exe =
                std::env::current_exe().context("cannot find this program to start the peer")?;
            let peer = move || {
                let mut c = Command::new(&exe);
                c.arg("bench").arg("peer");
                c
            };
            let suite =
                streamwire_bench::run(&options, &peer, &mut |line| eprintln!("bench: {line}"))?;
            let csv = env.iter().any(|(k, v)| k == "BENCH_CSV" && !v.is_empty());
            if csv {
                // Machine-readable on stdout, the table for people on stderr.
                write!(out, "{}", suite.to_csv())?;
                eprint!("{suite}");
            } else {
                write!(out, "{suite}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

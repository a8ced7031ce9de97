//! `bench latency` and `bench replay`: the command-line side of [`streamwire_bench`] and
//! [`streamwire_replay_bench`].

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::Context as _;
use streamwire_bench::{Options, Transport};

use crate::BenchCommand;

/// Runs `bench latency`, `bench replay` (or their hidden peer and cell).
pub(crate) fn run(
    command: BenchCommand,
    env: &[(String, String)],
    replay_blueprints: bool,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Cell { spec } => {
            let exe =
                std::env::current_exe().context("cannot find this program to run the cell")?;
            streamwire_replay_bench::cell::serve(&spec, &exe)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Replay {
            blueprint,
            mode,
            profile,
            sinks,
            work_ms,
            duration,
            out: out_dir,
            replay,
            sim,
            fps,
            matrix,
            reps,
            no_netns,
        } => {
            if !replay_blueprints {
                anyhow::bail!(
                    "`bench replay` runs the blueprints replay-basic, replay-full and replay-heavy, \
                     which this binary does not register (the stock `streamwire` binary has them)"
                );
            }
            let base = if matrix {
                streamwire_replay_bench::Options::matrix()
            } else {
                streamwire_replay_bench::Options::default()
            };
            let replay = match (replay, sim) {
                (_, true) => None,
                (Some(dir), false) => Some(dir),
                (None, false) => Some(default_frames(env)?),
            };
            let options = streamwire_replay_bench::Options {
                blueprints: if matrix { base.blueprints } else { blueprint },
                variants: if mode.is_empty() {
                    base.variants
                } else {
                    mode.iter()
                        .map(|m| m.parse())
                        .collect::<Result<Vec<_>, _>>()?
                },
                profiles: if profile.is_empty() {
                    base.profiles
                } else {
                    profile
                        .iter()
                        .map(|p| streamwire_replay_bench::cell::Profile::parse(p))
                        .collect::<Result<Vec<_>, _>>()?
                },
                reps: reps.unwrap_or(base.reps),
                sinks,
                work_ms: if work_ms.is_empty() {
                    base.work_ms
                } else {
                    work_ms
                },
                duration_s: duration,
                replay,
                fps,
                netns: !no_netns,
                out: out_dir,
            };
            let exe =
                std::env::current_exe().context("cannot find this program to run the cells")?;
            let outcome = streamwire_replay_bench::run(&options, &exe, &mut |line| {
                eprintln!("bench: {line}");
            })?;
            write!(
                out,
                "{}\n{}\nsummary: {}\n",
                streamwire_replay_bench::summary::table(&outcome.rows),
                streamwire_replay_bench::summary::bars(&outcome.rows),
                outcome.summary.display()
            )?;
            Ok(ExitCode::SUCCESS)
        }
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

/// The recorded frames the benchmark plays by default.
fn default_frames(env: &[(String, String)]) -> anyhow::Result<PathBuf> {
    let from_env = env
        .iter()
        .find(|(k, v)| k == "STREAMWIRE_DATA" && !v.is_empty())
        .map(|(_, v)| PathBuf::from(v).join("cockatoo_720p"));
    let candidates: Vec<PathBuf> = from_env
        .into_iter()
        .chain([PathBuf::from("../shared/data/cockatoo_720p")])
        .collect();
    candidates
        .iter()
        .find(|p| p.is_dir())
        // Absolute, so the summary and every cell's spec say where the frames were.
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .with_context(|| {
            format!(
                "no recorded frames at {}: pass --replay DIR (a folder of numbered frames), or \
                 --sim for the simulated camera",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        })
}

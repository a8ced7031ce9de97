//! `run --record`: an MCAP recorder added to the blueprint, on the coordinator and on each
//! worker alike (the same flags, so that every plan is the same).

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args as _, FromArgMatches};
use streamwire_cli::{Resolved, RunFlags};

use crate::{ChunkCompression, McapRecorder};

/// The recorder's instance name in the run (its counters `recorded:<stream>` and
/// `dropped:<stream>` are that row's).
pub(crate) const INSTANCE: &str = "mcap_recorder";

/// `run`'s recording flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RecordArgs {
    /// Record the run to this MCAP file, which ROS 2 tools and Foxglove read (adds an
    /// `McapRecorder` instance, `mcap_recorder`, to the blueprint).
    #[arg(long, value_name = "FILE.mcap")]
    record: Option<PathBuf>,
    /// The streams to record, comma separated (default: every stream; one that cannot be
    /// recorded is an error when named here).
    #[arg(long, value_name = "A,B", value_delimiter = ',', requires = "record")]
    streams: Vec<String>,
    /// The recording's chunk compression: zstd, lz4 or none.
    #[arg(long, value_name = "zstd|lz4|none", requires = "record")]
    record_compression: Option<String>,
}

/// `run --record` (and `worker`'s, which repeats the coordinator's).
pub(crate) struct Record;

impl RunFlags for Record {
    fn args(&self, command: clap::Command) -> clap::Command {
        RecordArgs::augment_args(command)
    }

    /// Adds the recorder when `--record` is given, with the plan and the resolved
    /// configuration as the recording's metadata. The recorder declares the streams it
    /// taps (every stream, or `--streams`), so a closed run's access control lets its
    /// process subscribe to them in the other processes.
    fn extend(
        &self,
        matches: &clap::ArgMatches,
        target: &str,
        resolved: &mut Resolved,
    ) -> anyhow::Result<()> {
        let args = RecordArgs::from_arg_matches(matches)?;
        let Some(path) = &args.record else {
            return Ok(());
        };
        let plan = resolved.blueprint().build()?;
        let configuration = resolved.configuration(target);
        add(
            &args,
            path,
            target,
            plan.to_string(),
            configuration,
            resolved,
        )
    }

    fn on_workers(&self) -> bool {
        true
    }

    /// The flags as given, for a worker's command line.
    fn repeated(&self, matches: &clap::ArgMatches) -> Vec<String> {
        let Ok(args) = RecordArgs::from_arg_matches(matches) else {
            return Vec::new();
        };
        let mut repeated = Vec::new();
        if let Some(path) = &args.record {
            repeated.push(format!("--record={}", path.display()));
        }
        if !args.streams.is_empty() {
            repeated.push(format!("--streams={}", args.streams.join(",")));
        }
        if let Some(compression) = &args.record_compression {
            repeated.push(format!("--record-compression={compression}"));
        }
        repeated
    }
}

fn add(
    args: &RecordArgs,
    path: &std::path::Path,
    target: &str,
    plan: String,
    configuration: String,
    resolved: &mut Resolved,
) -> anyhow::Result<()> {
    let compression = match &args.record_compression {
        Some(text) => text
            .parse::<ChunkCompression>()
            .context("--record-compression")?,
        None => ChunkCompression::default(),
    };
    let metadata = std::collections::BTreeMap::from([
        ("blueprint".to_owned(), target.to_owned()),
        ("plan".to_owned(), plan),
        ("configuration".to_owned(), configuration),
    ]);
    resolved.blueprint_mut().add(
        INSTANCE,
        McapRecorder {
            path: path.to_owned(),
            streams: args.streams.clone(),
            compression,
            metadata,
            ..McapRecorder::default()
        },
    );
    Ok(())
}

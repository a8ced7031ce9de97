//! `run --record`: an MCAP recorder added to the blueprint (the `mcap` feature).

use std::path::PathBuf;

use crate::resolve::Built;

/// The recorder's instance name in the run (its counters `recorded:<stream>` and
/// `dropped:<stream>` are that row's).
#[cfg(feature = "mcap")]
pub(crate) const INSTANCE: &str = "mcap_recorder";

/// `run`'s recording flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct RecordArgs {
    /// Record the run to this MCAP file, which ROS 2 tools and Foxglove read (adds an
    /// `McapRecorder` instance, `mcap_recorder`, to the blueprint).
    #[arg(long, value_name = "FILE.mcap")]
    record: Option<PathBuf>,
    /// The streams to record, comma separated (default: every stream with a ROS 2 type).
    #[arg(long, value_name = "A,B", value_delimiter = ',', requires = "record")]
    streams: Vec<String>,
    /// The recording's chunk compression: zstd, lz4 or none.
    #[arg(long, value_name = "zstd|lz4|none", requires = "record")]
    record_compression: Option<String>,
}

impl RecordArgs {
    /// Adds the recorder to `built` when `--record` is given, with the plan and the
    /// resolved configuration as the recording's metadata. A distributed run's workers
    /// get the same flags ([`RecordArgs::to_args`]) and add the same recorder, so that
    /// their plans are the coordinator's. The recorder declares the streams it taps
    /// (every stream, or `--streams`), so a closed run's access control lets its process
    /// subscribe to them in the other processes.
    pub(crate) fn add_recorder(&self, target: &str, built: &mut Built) -> anyhow::Result<()> {
        let Some(path) = &self.record else {
            return Ok(());
        };
        let plan = built.blueprint.build()?;
        let configuration =
            crate::commands::config::render_settings(target, &built.settings, &built.accepts);
        add(self, path, target, plan.to_string(), configuration, built)
    }

    /// The flags as given, for a worker's command line.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(path) = &self.record {
            args.push(format!("--record={}", path.display()));
        }
        if !self.streams.is_empty() {
            args.push(format!("--streams={}", self.streams.join(",")));
        }
        if let Some(compression) = &self.record_compression {
            args.push(format!("--record-compression={compression}"));
        }
        args
    }
}

#[cfg(feature = "mcap")]
fn add(
    args: &RecordArgs,
    path: &std::path::Path,
    target: &str,
    plan: String,
    configuration: String,
    built: &mut Built,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use streamwire_mcap::{Compression, McapRecorder};
    let compression = match &args.record_compression {
        Some(text) => text
            .parse::<Compression>()
            .context("--record-compression")?,
        None => Compression::default(),
    };
    let metadata = std::collections::BTreeMap::from([
        ("blueprint".to_owned(), target.to_owned()),
        ("plan".to_owned(), plan),
        ("configuration".to_owned(), configuration),
    ]);
    built.blueprint.add(
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

#[cfg(not(feature = "mcap"))]
fn add(
    _: &RecordArgs,
    _: &std::path::Path,
    _: &str,
    _: String,
    _: String,
    _: &mut Built,
) -> anyhow::Result<()> {
    anyhow::bail!("--record needs a binary built with streamwire-cli's `mcap` feature")
}

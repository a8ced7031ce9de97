//! The end of a distributed run: its workers, and their reports merged into one.

use std::fmt;

use streamwire_runtime::RunReport;

/// One worker of a finished distributed run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerSummary {
    /// Its process, `host/process`.
    pub process: String,
    /// Started by this coordinator (not by hand on another host).
    pub local: bool,
    /// Its last process id.
    pub pid: Option<u32>,
    /// Its exit status as the OS gave it (local workers), e.g. `exit status: 0`.
    pub exit: Option<String>,
    /// How often it was started again.
    pub restarts: u32,
    /// Whether its report arrived.
    pub reported: bool,
}

impl WorkerSummary {
    /// A worker not started yet.
    pub(crate) fn new(process: &str, local: bool) -> WorkerSummary {
        WorkerSummary {
            process: process.to_owned(),
            local,
            pid: None,
            exit: None,
            restarts: 0,
            reported: false,
        }
    }
}

/// A distributed run's end: its workers, and their reports merged into one.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClusterReport {
    /// Who could join the run and what each member could say (`closed: ...`,
    /// `INSECURE: ...`).
    pub access: String,
    /// Every worker.
    pub workers: Vec<WorkerSummary>,
    /// The workers' reports merged: every instance, input, codec and wire row of the run;
    /// the reason is `failed` if a worker failed or died, `finished` if every worker
    /// finished.
    pub report: RunReport,
}

impl fmt::Display for ClusterReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.report)?;
        writeln!(f, "access: {}", self.access)?;
        writeln!(f, "workers:")?;
        let width = self
            .workers
            .iter()
            .map(|w| w.process.len())
            .max()
            .unwrap_or(0);
        for w in &self.workers {
            writeln!(
                f,
                "  {:width$}  {}  {}{}{}",
                w.process,
                if w.local { "started here" } else { "joined" },
                w.exit.as_deref().unwrap_or("-"),
                if w.restarts > 0 {
                    format!(", restarted {}x", w.restarts)
                } else {
                    String::new()
                },
                if w.reported { "" } else { ", no report" },
            )?;
        }
        Ok(())
    }
}

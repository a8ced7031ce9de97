//! The accounting equation of a report (RFC.md section 9): for every consumer, what its
//! stream's producers published is on exactly one of its row's counters.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use streamwire_core::DropReason;

use super::{InputStats, RunReport};

/// Reports [`check_balance`] has checked in this process, balanced or not.
static REPORTS_CHECKED: AtomicU64 = AtomicU64::new(0);

/// How many reports [`check_balance`] has checked in this process so far (a test suite
/// prints it, so that a reader sees the equation was checked, and how often).
pub fn balance_checks() -> u64 {
    REPORTS_CHECKED.load(Ordering::Relaxed)
}

/// What [`check_balance`] found in a balanced report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Balanced {
    /// Input rows whose equation was checked.
    pub rows: usize,
    /// Input rows it could not check, by port: their producer (or the sender their
    /// messages crossed the wire through) reported in another process's report.
    pub elsewhere: Vec<String>,
}

/// One input row whose equation does not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unbalanced {
    /// `instance.port`.
    pub port: String,
    /// Its stream.
    pub stream: String,
    /// What the stream's producers published.
    pub published: u64,
    /// Each term of the row, by its report name, in equation order.
    pub terms: Vec<(&'static str, u64)>,
}

impl Unbalanced {
    /// The sum of the row's terms.
    pub fn accounted(&self) -> u64 {
        self.terms.iter().map(|(_, n)| n).sum()
    }
}

impl fmt::Display for Unbalanced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let accounted = self.accounted();
        let terms = self
            .terms
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>();
        write!(
            f,
            "`{}` on `{}`: published {} but its row accounts for {} ({})",
            self.port,
            self.stream,
            self.published,
            accounted,
            if terms.is_empty() {
                "every counter 0".to_owned()
            } else {
                terms.join(" + ")
            },
        )?;
        if self.published > accounted {
            write!(
                f,
                ": {} messages are on no counter (a missing counter on their path)",
                self.published - accounted
            )
        } else {
            write!(
                f,
                ": {} messages are counted twice",
                accounted - self.published
            )
        }
    }
}

/// A report that does not balance: every row that does not, named.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BalanceError {
    /// Some input rows account for more or fewer messages than their stream's
    /// producers published.
    #[error("the report does not balance:\n{}", list(.0))]
    Unbalanced(Vec<Unbalanced>),
}

fn list(rows: &[Unbalanced]) -> String {
    rows.iter()
        .map(|row| format!("  {row}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks the accounting equation on every input row of a final `report`: what the
/// row's stream was published equals delivered + dropped (by reason, wherever on the
/// way) + not sent + unprocessed at stop + in flight at stop. Rows whose producer or
/// sender reported in another process are listed as not checked (check the merged
/// report of a distributed run). Taps are not consumers of the plan and are not checked.
///
/// ```
/// use streamwire_runtime::{EndReason, RunReport, RunStats, check_balance};
/// let report = RunReport::new(EndReason::Finished, None, Vec::new(), RunStats::default());
/// assert_eq!(check_balance(&report)?.rows, 0);
/// # Ok::<(), streamwire_runtime::BalanceError>(())
/// ```
pub fn check_balance(report: &RunReport) -> Result<Balanced, BalanceError> {
    REPORTS_CHECKED.fetch_add(1, Ordering::Relaxed);
    let stats = &report.stats;
    let mut balanced = Balanced::default();
    let mut unbalanced = Vec::new();
    for input in &stats.inputs {
        let producers: Vec<u64> = stats
            .outputs
            .iter()
            .filter(|o| o.stream == input.stream)
            .map(|o| o.published)
            .collect();
        let sender_elsewhere = input.via_wire.is_some() && !input.wire_terms_added;
        if producers.is_empty() || sender_elsewhere {
            balanced.elsewhere.push(input.port.clone());
            continue;
        }
        balanced.rows += 1;
        let row = Unbalanced {
            port: input.port.clone(),
            stream: input.stream.clone(),
            published: producers.iter().sum(),
            terms: terms(input),
        };
        if row.accounted() != row.published {
            unbalanced.push(row);
        }
    }
    if unbalanced.is_empty() {
        Ok(balanced)
    } else {
        Err(BalanceError::Unbalanced(unbalanced))
    }
}

/// The terms of an input row, named as the report names them.
fn terms(input: &InputStats) -> Vec<(&'static str, u64)> {
    let mut terms = vec![("delivered", input.delivered)];
    terms.extend(
        DropReason::ALL
            .iter()
            .map(|reason| (reason.name(), input.dropped.get(*reason))),
    );
    terms.extend([
        ("not_sent", input.unmatched),
        ("unprocessed_at_stop", input.unprocessed_at_stop),
        ("in_flight_at_stop", input.in_flight_at_stop),
    ]);
    terms
}

//! The failure policy's logging half (ARCHITECTURE.md, "Failure policy"): a failure that can
//! repeat per frame is counted every time and logged once per burst, and an error is logged
//! with its whole chain of causes.

use std::error::Error;
use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long after a line more events of its kind are only counted.
pub const BURST_QUIET: Duration = Duration::from_secs(10);

/// Says something once per burst: the first event of a burst is logged, later ones within
/// [`BURST_QUIET`] of that line only counted, and told in the next line.
///
/// ```
/// use streamwire_core::log::{BurstLog, more_since};
///
/// let log = BurstLog::default();
/// for frame in 0..3 {
///     if let Some(unsaid) = log.note() {
///         eprintln!("frame {frame} refused{}", more_since(unsaid));
///     }
/// }
/// assert_eq!(log.note(), None); // still within the quiet time of the first line
/// ```
#[derive(Debug, Default)]
pub struct BurstLog {
    /// When the last line was written, and the events since that were not.
    state: Mutex<(Option<Instant>, u64)>,
}

impl BurstLog {
    /// `Some(n)` when this event is to be logged, `n` being the events since the last
    /// line that were not.
    pub fn note(&self) -> Option<u64> {
        self.note_at(Instant::now())
    }

    fn note_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock();
        match state.0 {
            Some(at) if now.duration_since(at) < BURST_QUIET => {
                state.1 += 1;
                None
            }
            _ => {
                let unsaid = state.1;
                *state = (Some(now), 0);
                Some(unsaid)
            }
        }
    }
}

/// ` (and N more since the last such line)`, or nothing.
pub fn more_since(unsaid: u64) -> String {
    if unsaid == 0 {
        String::new()
    } else {
        format!(" (and {unsaid} more since the last such line)")
    }
}

/// `error` and its causes, `: `-separated (what `anyhow` prints with `{:#}`), for log lines:
/// errors keep their cause as a `#[source]` and leave it out of their own message.
pub fn chain(error: &dyn Error) -> Chain<'_> {
    Chain(error)
}

/// An error with its causes; see [`chain`].
#[derive(Clone, Copy)]
pub struct Chain<'a>(&'a dyn Error);

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_said_once_then_summed_up() {
        let log = BurstLog::default();
        let start = Instant::now();
        assert_eq!(log.note_at(start), Some(0));
        assert_eq!(log.note_at(start + Duration::from_secs(1)), None);
        assert_eq!(log.note_at(start + Duration::from_secs(2)), None);
        assert_eq!(log.note_at(start + BURST_QUIET * 2), Some(2));
        assert_eq!(more_since(0), "");
        assert_eq!(more_since(2), " (and 2 more since the last such line)");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot open the session")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_chain_names_every_cause() {
        let error = Outer(std::io::Error::other("port 7447 taken"));
        assert_eq!(
            chain(&error).to_string(),
            "cannot open the session: port 7447 taken"
        );
    }
}

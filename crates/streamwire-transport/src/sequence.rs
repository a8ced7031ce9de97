//! Loss on the wire, from the link sequence of received frames.

/// What one received link sequence number means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The first frame seen, or the next one.
    InOrder,
    /// `lost` frames never arrived before this one.
    Gap {
        /// How many numbers were skipped.
        lost: u64,
    },
    /// A number at or below one already seen: a duplicate, a reordered frame, or a
    /// publisher that restarted (its numbering starts again at 0). Delivered, not lost.
    Behind,
}

/// Follows one publisher's link sequence at a subscriber and counts the gaps.
///
/// ```
/// use streamwire_transport::{SequenceTracker, Step};
/// let mut tracker = SequenceTracker::default();
/// assert_eq!(tracker.observe(0), Step::InOrder);
/// assert_eq!(tracker.observe(1), Step::InOrder);
/// assert_eq!(tracker.observe(4), Step::Gap { lost: 2 });
/// assert_eq!(tracker.lost(), 2);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SequenceTracker {
    next: Option<u64>,
    lost: u64,
}

impl SequenceTracker {
    /// A tracker for a subscriber that was there before its publisher's first frame (a
    /// planned link: the run's sources start only once every planned link is matched), so
    /// that a first frame that never arrives is counted lost like any other (a best-effort
    /// stream drops under congestion, the first large frame included).
    ///
    /// ```
    /// use streamwire_transport::{SequenceTracker, Step};
    /// let mut tracker = SequenceTracker::from_first_frame();
    /// assert_eq!(tracker.observe(1), Step::Gap { lost: 1 });
    /// ```
    pub fn from_first_frame() -> SequenceTracker {
        SequenceTracker {
            next: Some(0),
            lost: 0,
        }
    }

    /// Records link sequence `seq`.
    pub fn observe(&mut self, seq: u64) -> Step {
        let step = match self.next {
            // A subscriber that joins late starts wherever the publisher is: frames sent
            // before it subscribed were never its to lose.
            None => Step::InOrder,
            Some(next) if seq == next => Step::InOrder,
            Some(next) if seq > next => Step::Gap { lost: seq - next },
            Some(_) => Step::Behind,
        };
        match step {
            Step::Gap { lost } => self.lost += lost,
            Step::Behind if seq == 0 => {
                // The publisher restarted: follow its new numbering.
                self.next = Some(1);
                return step;
            }
            Step::Behind => return step,
            Step::InOrder => {}
        }
        self.next = Some(seq.saturating_add(1));
        step
    }

    /// Frames lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

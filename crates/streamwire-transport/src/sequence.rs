//! Loss on the wire, from the link sequence of received frames.
//!
//! A gap in a publisher's link sequence is frames lost on the way, but only when it could
//! be: a gap larger than the stream could have sent since the previous frame (a forged or
//! corrupt `link_seq` such as 2^62), or a numbering that starts again (a restarted
//! producer, or a forged 0), is a *reset*: counted as such, the tracker follows the new
//! numbering, and no frame is counted lost for it. One misbehaving frame therefore never
//! puts a huge figure in the report nor hides the real gaps after it.

use std::time::{Duration, Instant};

/// Why a tracker started over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetCause {
    /// A jump forward larger than the stream could have sent since its previous frame.
    Jump,
    /// The numbering went back: to 0 (a producer that restarted), or further back than
    /// any reordering on the way explains.
    Restart,
}

impl ResetCause {
    /// The short name used in logs and reports.
    pub fn name(&self) -> &'static str {
        match self {
            ResetCause::Jump => "jump",
            ResetCause::Restart => "restart",
        }
    }
}

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
    /// A number a little below one already seen: a duplicate or a reordered frame.
    /// Delivered, not lost.
    Behind,
    /// The numbering cannot continue the one followed so far: the tracker starts over
    /// from this frame, and counts nothing lost for it (what a restarted or misbehaving
    /// producer skipped cannot be known).
    Reset {
        /// Why.
        cause: ResetCause,
        /// The number expected instead.
        expected: u64,
    },
}

/// A gap of at most this many frames is always taken for loss.
pub const PLAUSIBLE_GAP: u64 = 256;
/// A number at most this far below the highest seen is a duplicate or a reordered frame;
/// further back, the numbering started over.
pub const REORDER_WINDOW: u64 = 64;
/// Before a stream's rate is known (fewer than two frames seen), the rate it is assumed
/// it may reach, in frames per second.
pub const UNKNOWN_RATE_HZ: f64 = 1000.0;
/// How many times its average rate a stream may send in a burst before a gap stops
/// being taken for loss.
pub const RATE_MARGIN: f64 = 4.0;

/// Follows one publisher's link sequence at a subscriber and counts the gaps and resets.
///
/// ```
/// use streamwire_transport::{ResetCause, SequenceTracker, Step};
/// let mut tracker = SequenceTracker::default();
/// assert_eq!(tracker.observe(0), Step::InOrder);
/// assert_eq!(tracker.observe(1), Step::InOrder);
/// assert_eq!(tracker.observe(4), Step::Gap { lost: 2 });
/// assert_eq!(tracker.lost(), 2);
/// // A frame numbered 2^62 cannot follow 4 a moment later: a reset, nothing lost.
/// assert!(matches!(tracker.observe(1 << 62), Step::Reset { cause: ResetCause::Jump, .. }));
/// // The real numbering goes on: its gaps still count.
/// assert_eq!(tracker.observe(7), Step::Gap { lost: 2 });
/// assert_eq!((tracker.lost(), tracker.resets()), (4, 1));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SequenceTracker {
    next: Option<u64>,
    lost: u64,
    resets: u64,
    /// When the frame that set `next` arrived.
    last_at: Option<Instant>,
    /// The first frame of the current rate estimate, and the frames (by number) since.
    rate_since: Option<Instant>,
    numbered_since: u64,
    /// The numbering followed before the last reset, until a frame confirms the new one:
    /// a single stray frame (a forged number) does not lose the real numbering.
    before_reset: Option<u64>,
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
            ..SequenceTracker::default()
        }
    }

    /// Records link sequence `seq`, received now.
    pub fn observe(&mut self, seq: u64) -> Step {
        self.observe_at(seq, Instant::now())
    }

    /// Records link sequence `seq`, received at `now`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use streamwire_transport::{SequenceTracker, Step};
    /// let start = Instant::now();
    /// let mut tracker = SequenceTracker::from_first_frame();
    /// // A 100 Hz stream...
    /// for seq in 0..100 {
    ///     tracker.observe_at(seq, start + Duration::from_millis(10 * seq));
    /// }
    /// // ...whose subscriber heard nothing for 3 s lost 300 frames: plausible.
    /// let later = start + Duration::from_millis(990 + 3010);
    /// assert_eq!(tracker.observe_at(400, later), Step::Gap { lost: 300 });
    /// ```
    pub fn observe_at(&mut self, seq: u64, now: Instant) -> Step {
        let Some(next) = self.next else {
            // A subscriber that joins late starts wherever the publisher is: frames sent
            // before it subscribed were never its to lose.
            self.follow(seq, now);
            return Step::InOrder;
        };
        // A frame right after a reset that continues the numbering followed before it:
        // the reset was one stray frame; go back to the real numbering.
        if let Some(before) = self.before_reset.take()
            && seq != next
            && seq >= before
            && (seq < next || seq - before < seq - next)
            && self.plausible(seq - before, now)
        {
            let lost = seq - before;
            self.lost += lost;
            self.follow(seq, now);
            return if lost == 0 {
                Step::InOrder
            } else {
                Step::Gap { lost }
            };
        }
        let step = if seq == next {
            Step::InOrder
        } else if seq > next {
            let lost = seq - next;
            if self.plausible(lost, now) {
                Step::Gap { lost }
            } else {
                Step::Reset {
                    cause: ResetCause::Jump,
                    expected: next,
                }
            }
        } else if seq == 0 || next - seq > REORDER_WINDOW {
            Step::Reset {
                cause: ResetCause::Restart,
                expected: next,
            }
        } else {
            return Step::Behind;
        };
        match step {
            Step::Gap { lost } => self.lost += lost,
            Step::Reset { .. } => {
                self.resets += 1;
                self.before_reset = Some(next);
                // The new numbering's rate is learnt anew; the time of the last frame
                // still bounds what the next gap may be.
                self.rate_since = None;
                self.numbered_since = 0;
            }
            _ => {}
        }
        self.follow(seq, now);
        step
    }

    fn follow(&mut self, seq: u64, now: Instant) {
        if let (Some(next), Some(_)) = (self.next, self.rate_since) {
            self.numbered_since += seq.saturating_add(1).saturating_sub(next);
        } else {
            self.rate_since = Some(now);
            self.numbered_since = 0;
        }
        self.next = Some(seq.saturating_add(1));
        self.last_at = Some(now);
    }

    /// Whether `lost` frames may have been sent, and lost, since the previous frame.
    fn plausible(&self, lost: u64, now: Instant) -> bool {
        if lost <= PLAUSIBLE_GAP {
            return true;
        }
        let since_last = self
            .last_at
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
        let rate_hz = match self.rate_since {
            Some(since) if self.numbered_since > 0 => {
                let span = self
                    .last_at
                    .map_or(Duration::ZERO, |at| at.saturating_duration_since(since));
                if span.is_zero() {
                    UNKNOWN_RATE_HZ
                } else {
                    self.numbered_since as f64 / span.as_secs_f64()
                }
            }
            _ => UNKNOWN_RATE_HZ,
        };
        let allowed = PLAUSIBLE_GAP as f64 + RATE_MARGIN * rate_hz * since_last.as_secs_f64();
        (lost as f64) <= allowed
    }

    /// Frames lost so far (gaps in the numbering; a reset loses none it could name).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// How many times the numbering started over.
    pub fn resets(&self) -> u64 {
        self.resets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    /// A 30 Hz stream's tracker that has seen frames 0..=30 over one second.
    fn thirty_hertz(start: Instant) -> SequenceTracker {
        let mut tracker = SequenceTracker::from_first_frame();
        for seq in 0..=30 {
            assert_eq!(tracker.observe_at(seq, at(start, seq * 33)), Step::InOrder);
        }
        tracker
    }

    #[test]
    fn a_forged_huge_number_is_a_reset_and_later_gaps_still_count() {
        let start = Instant::now();
        let mut tracker = thirty_hertz(start);
        assert_eq!(
            tracker.observe_at(1 << 62, at(start, 1000)),
            Step::Reset {
                cause: ResetCause::Jump,
                expected: 31
            }
        );
        assert_eq!(tracker.observe_at(31, at(start, 1023)), Step::InOrder);
        assert_eq!(tracker.observe_at(32, at(start, 1056)), Step::InOrder);
        assert_eq!(
            tracker.observe_at(35, at(start, 1155)),
            Step::Gap { lost: 2 }
        );
        assert_eq!((tracker.lost(), tracker.resets()), (2, 1));
    }

    #[test]
    fn a_forged_zero_is_a_reset_not_158_lost() {
        let start = Instant::now();
        let mut tracker = thirty_hertz(start);
        assert!(matches!(
            tracker.observe_at(0, at(start, 1000)),
            Step::Reset {
                cause: ResetCause::Restart,
                ..
            }
        ));
        // The real producer goes on where it was.
        assert_eq!(tracker.observe_at(31, at(start, 1023)), Step::InOrder);
        assert_eq!(
            tracker.observe_at(33, at(start, 1089)),
            Step::Gap { lost: 1 }
        );
        assert_eq!((tracker.lost(), tracker.resets()), (1, 1));
    }

    #[test]
    fn a_restarted_producer_is_followed_from_zero() {
        let start = Instant::now();
        let mut tracker = thirty_hertz(start);
        assert!(matches!(
            tracker.observe_at(0, at(start, 3000)),
            Step::Reset {
                cause: ResetCause::Restart,
                ..
            }
        ));
        assert_eq!(tracker.observe_at(1, at(start, 3033)), Step::InOrder);
        assert_eq!(
            tracker.observe_at(3, at(start, 3099)),
            Step::Gap { lost: 1 }
        );
        // The old numbering is forgotten once the new one is confirmed.
        assert!(matches!(
            tracker.observe_at(31, at(start, 3132)),
            Step::Gap { lost: 27 }
        ));
        assert_eq!((tracker.lost(), tracker.resets()), (28, 1));
    }

    #[test]
    fn a_restart_whose_first_frames_were_lost_is_a_reset() {
        let start = Instant::now();
        let mut tracker = thirty_hertz(start);
        // 31 expected: 5 is 26 back, within the reorder window, and not 0: a
        // duplicate or a reordered frame...
        assert_eq!(tracker.observe_at(5, at(start, 1000)), Step::Behind);
        // ...but a step back past the window is a new numbering.
        let mut long = SequenceTracker::from_first_frame();
        for seq in 0..200 {
            long.observe_at(seq, at(start, seq * 5));
        }
        assert!(matches!(
            long.observe_at(3, at(start, 1000)),
            Step::Reset {
                cause: ResetCause::Restart,
                expected: 200
            }
        ));
        assert_eq!(long.observe_at(4, at(start, 1005)), Step::InOrder);
        assert_eq!(long.resets(), 1);
    }

    #[test]
    fn a_long_silence_makes_a_large_gap_plausible() {
        let start = Instant::now();
        let mut tracker = thirty_hertz(start);
        // 300 frames in 10 s of a 30 Hz stream: loss.
        assert_eq!(
            tracker.observe_at(331, at(start, 11_000)),
            Step::Gap { lost: 300 }
        );
        // 3000 frames 33 ms later: not.
        assert!(matches!(
            tracker.observe_at(3332, at(start, 11_033)),
            Step::Reset {
                cause: ResetCause::Jump,
                ..
            }
        ));
    }

    #[test]
    fn the_first_frame_is_judged_too() {
        let start = Instant::now();
        let mut tracker = SequenceTracker::from_first_frame();
        assert!(matches!(
            tracker.observe_at(1 << 62, start),
            Step::Reset {
                cause: ResetCause::Jump,
                expected: 0
            }
        ));
        assert_eq!(tracker.observe_at(0, at(start, 10)), Step::InOrder);
        assert_eq!(tracker.observe_at(2, at(start, 20)), Step::Gap { lost: 1 });
        assert_eq!((tracker.lost(), tracker.resets()), (1, 1));
    }

    #[test]
    fn the_largest_number_does_not_overflow() {
        let start = Instant::now();
        let mut tracker = SequenceTracker::default();
        assert_eq!(tracker.observe_at(u64::MAX, start), Step::InOrder);
        assert!(matches!(
            tracker.observe_at(0, at(start, 1)),
            Step::Reset { .. }
        ));
        assert_eq!(tracker.observe_at(1, at(start, 2)), Step::InOrder);
    }
}

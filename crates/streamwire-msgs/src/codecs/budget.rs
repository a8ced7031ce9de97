//! [`BitrateBudget`]: the JPEG codec's `max_bitrate` and `min_quality`, and the
//! controller state an encoder keeps between frames.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use streamwire_codec::budget::{Budget, Controller};
use streamwire_core::bitrate;
pub use streamwire_core::bitrate::{format_bitrate, parse_bitrate};
use streamwire_core::{Adaptation, AdaptationStep, CodecError, Timestamp};

/// A bit-rate budget for a JPEG stream: the encoder picks each frame's quality within
/// `min_quality..=jpeg_quality`, and under that floor narrows the width, to keep the
/// encoded bits over every two-second window (on the frames' stamps) under `max_bitrate`.
/// The rule is `streamwire_codec::budget`'s (RFC.md section 7).
///
/// The controller's state lives here: a codec built from parameters starts fresh, and a
/// clone starts fresh too (two encoders never share one budget). Equality compares the
/// settings only.
///
/// ```
/// use streamwire::msgs::{BitrateBudget, Jpeg};
///
/// let jpeg = Jpeg {
///     budget: Some(BitrateBudget::new(6_400_000, 20)?),
///     ..Jpeg::default()
/// };
/// assert_eq!(jpeg.params().get("max_bitrate"), Some("6.4Mbit/s"));
/// # Ok::<(), streamwire::CodecError>(())
/// ```
pub struct BitrateBudget {
    max_bitrate: u64,
    min_quality: u8,
    controller: Arc<Mutex<Option<Controller>>>,
}

impl BitrateBudget {
    /// The lowest budget accepted: 1 kbit/s.
    pub const MIN_BITRATE: u64 = bitrate::MIN_BUDGET;
    /// The highest budget accepted: 100 Gbit/s.
    pub const MAX_BITRATE: u64 = bitrate::MAX_BUDGET;
    /// The quality floor when none is given.
    pub const DEFAULT_MIN_QUALITY: u8 = 20;

    /// A budget of `max_bitrate` bits per second with the quality floor `min_quality`
    /// (1..=100; at most the codec's `jpeg_quality`, checked by the codec).
    pub fn new(max_bitrate: u64, min_quality: u8) -> Result<BitrateBudget, CodecError> {
        bitrate::check_budget(max_bitrate)?;
        if !(1..=100).contains(&min_quality) {
            return Err(CodecError::InvalidParam {
                key: "min_quality".to_owned(),
                value: min_quality.to_string(),
                reason: "JPEG quality goes from 1 (smallest) to 100 (best)".to_owned(),
            });
        }
        Ok(BitrateBudget {
            max_bitrate,
            min_quality,
            controller: Arc::default(),
        })
    }

    /// The budget in bits per second.
    pub fn max_bitrate(&self) -> u64 {
        self.max_bitrate
    }

    /// The quality floor.
    pub fn min_quality(&self) -> u8 {
        self.min_quality
    }

    /// The quality and width for the frame stamped `stamp`, `full_width` pixels wide after
    /// the codec's own `max_width`, starting from `max_quality`.
    pub(crate) fn setting(
        &self,
        stamp: Timestamp,
        full_width: u32,
        max_quality: u8,
    ) -> (u8, Option<u32>) {
        let mut controller = self.controller.lock();
        let controller = match &mut *controller {
            Some(c) if c.budget().max_quality == max_quality => c,
            slot => slot.insert(Controller::new(Budget {
                max_bitrate: self.max_bitrate,
                min_quality: self.min_quality,
                max_quality,
                window: Budget::DEFAULT_WINDOW,
            })),
        };
        controller.setting(nanos(stamp), full_width)
    }

    /// Records the size of the frame stamped `stamp`.
    pub(crate) fn record(&self, stamp: Timestamp, bytes: usize) {
        if let Some(controller) = &mut *self.controller.lock() {
            controller.record(nanos(stamp), bytes);
        }
    }

    /// Where the controller stands (before the first frame: the top quality, no change).
    pub(crate) fn adaptation(&self, max_quality: u8) -> Adaptation {
        let window = Budget::DEFAULT_WINDOW;
        let guard = self.controller.lock();
        let Some(controller) = &*guard else {
            return Adaptation {
                quality: max_quality,
                budget_bitrate: self.max_bitrate,
                window_ms: millis(window),
                ..Adaptation::default()
            };
        };
        let state = controller.state();
        Adaptation {
            quality: state.quality,
            width: state.width,
            changes: state.changes,
            budget_bitrate: self.max_bitrate,
            window_ms: millis(controller.budget().window),
            window_bitrate: state.window_bitrate,
            worst_window_bitrate: state.worst_window_bitrate,
            history: state
                .history
                .iter()
                .map(|step| AdaptationStep {
                    stamp_nanos: step.stamp_nanos,
                    quality: step.quality,
                    width: step.width,
                })
                .collect(),
        }
    }
}

/// A frame without a stamp is placed at the time it is encoded.
fn nanos(stamp: Timestamp) -> u64 {
    if stamp == Timestamp::ZERO {
        Timestamp::now().as_nanos()
    } else {
        stamp.as_nanos()
    }
}

fn millis(window: Duration) -> u64 {
    u64::try_from(window.as_millis()).unwrap_or(u64::MAX)
}

impl Clone for BitrateBudget {
    /// The same settings, a controller of its own.
    fn clone(&self) -> Self {
        BitrateBudget {
            max_bitrate: self.max_bitrate,
            min_quality: self.min_quality,
            controller: Arc::default(),
        }
    }
}

impl PartialEq for BitrateBudget {
    fn eq(&self, other: &Self) -> bool {
        (self.max_bitrate, self.min_quality) == (other.max_bitrate, other.min_quality)
    }
}

impl Eq for BitrateBudget {}

impl fmt::Debug for BitrateBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BitrateBudget")
            .field("max_bitrate", &format_bitrate(self.max_bitrate))
            .field("min_quality", &self.min_quality)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_rates_read_and_write_alike() {
        for (text, bits) in [
            ("6.4Mbit/s", 6_400_000),
            ("6.4M", 6_400_000),
            ("6400k", 6_400_000),
            ("6400000", 6_400_000),
            ("800 kbps", 800_000),
            ("1G", 1_000_000_000),
        ] {
            assert_eq!(parse_bitrate(text), Ok(bits), "{text}");
        }
        for bits in [6_400_000, 800_000, 1_500, 1_234_567, 2_000_000_000] {
            assert_eq!(parse_bitrate(&format_bitrate(bits)), Ok(bits));
        }
        assert_eq!(format_bitrate(6_400_000), "6.4Mbit/s");
        for bad in [
            "",
            "fast",
            "6.4X",
            "-3M",
            "M",
            "1e30",
            "99999999999999999999999",
        ] {
            assert!(parse_bitrate(bad).is_err(), "{bad}");
        }
        // Out of a budget's range, said without overflowing.
        assert_eq!(format_bitrate(u64::MAX), "18446744073709551.615kbit/s");
        let huge = parse_bitrate("18000000000000000000").unwrap();
        assert!(BitrateBudget::new(huge, 20).is_err());
    }

    #[test]
    fn a_clone_starts_its_own_controller() {
        let budget = BitrateBudget::new(1_000_000, 20).unwrap();
        budget.setting(Timestamp::from_nanos(1), 1280, 75);
        let copy = budget.clone();
        assert!(copy.controller.lock().is_none());
        assert_eq!(copy, budget);
    }
}

//! A bit-rate budget for an image encoder: the controller that picks each frame's JPEG
//! quality, and under the quality floor its width, so that a stream's encoded bit rate
//! over a sliding window stays under a budget.
//!
//! Time is the frames' own stamps (nanoseconds), never a clock read here: a replay, a
//! manual clock in a test and a live camera drive it alike.
//!
//! # The rule
//!
//! The settings form one ladder, smallest output first: at each narrower width of
//! [`WIDTH_STEPS`] the qualities from `min_quality` up to where the next wider width at
//! `min_quality` would be smaller (so the ladder's predicted sizes only rise), then the
//! full width at each quality from `min_quality` to `max_quality`. Quality goes first,
//! width only under the quality floor. A run starts at the top. Before each frame the controller predicts the
//! stream's bit rate at the current setting: the mean size of the last frames encoded with
//! it (an exponential average, a quarter weight to the newest) times the frame rate seen
//! over the window. Then:
//!
//! - **down** when the prediction is over [`HIGH`] of the budget, or when the bits actually
//!   sent over the last full window are: to the highest setting predicted under [`TARGET`]
//!   (the lowest if none is), as soon as one frame has been measured at the current one;
//! - **up** when the prediction is under [`LOW`] of the budget and the current setting has
//!   held for half a window: to the highest setting predicted under [`TARGET`]. A step up
//!   that has to be undone within a window doubles that wait (up to [`MAX_UP_HOLD`]), so a
//!   stream whose sizes the prior misjudges settles instead of going back and forth;
//! - otherwise it holds, so that a stream near its target does not flicker.
//!
//! Another setting's size is predicted from the current one's through a prior measured on
//! real frames (`examples/measure_quality.rs`: how the mean size follows quality, and width
//! at a low quality); after the first frame at the new setting its own sizes take over.

use std::collections::VecDeque;
use std::time::Duration;

/// The width steps under the floor, as fractions of the full width: full, 3/4, 1/2, 3/8
/// and 1/4 (1280 pixels become 960, 640, 480, 320).
pub const WIDTH_STEPS: [(u32, u32); 5] = [(1, 1), (3, 4), (1, 2), (3, 8), (1, 4)];

/// A prediction over this share of the budget lowers the setting.
pub const HIGH: f64 = 0.95;
/// A new setting is the highest predicted under this share of the budget.
pub const TARGET: f64 = 0.85;
/// A prediction under this share of the budget raises the setting.
pub const LOW: f64 = 0.65;

/// The longest wait before a step up (see the module's rule).
pub const MAX_UP_HOLD: Duration = Duration::from_secs(32);

/// The steps of the controller's history kept for a report (the earliest are kept, the
/// later ones counted: a chart of a long run shows its start).
pub const HISTORY_LIMIT: usize = 4096;

/// Mean JPEG size relative to quality 75 at qualities 5, 10, ..., 100 (4:2:0, full width),
/// measured on the 280 real 1280x720 cockatoo frames by `examples/measure_quality.rs`.
const SIZE_BY_QUALITY: [f64; 20] = [
    0.405, 0.456, 0.500, 0.542, 0.590, 0.618, 0.652, 0.687, 0.752, 0.808, 0.854, 0.878, 0.926,
    0.960, 1.000, 1.080, 1.183, 1.336, 1.783, 3.637,
];

/// Mean JPEG size at each of [`WIDTH_STEPS`] relative to the full width, at quality 20
/// (measured as above).
const SIZE_BY_WIDTH_STEP: [f64; 5] = [1.000, 0.640, 0.348, 0.231, 0.142];

/// What the controller keeps a stream under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Bits per second over the window.
    pub max_bitrate: u64,
    /// The quality floor (1..=100), where narrower widths take over.
    pub min_quality: u8,
    /// The quality it starts at and never exceeds (the codec's `jpeg_quality`).
    pub max_quality: u8,
    /// The sliding window the budget holds over.
    pub window: Duration,
}

impl Budget {
    /// The window the budget holds over when none is given: two seconds.
    pub const DEFAULT_WINDOW: Duration = Duration::from_secs(2);
}

/// One setting the controller chose, from the stamp of the first frame encoded with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The stamp of the first frame with this setting, in nanoseconds.
    pub stamp_nanos: u64,
    /// The JPEG quality.
    pub quality: u8,
    /// The width it downscales to (`None`: the full width).
    pub width: Option<u32>,
}

/// Where the controller stands, for statistics and reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetState {
    /// The quality of the next frame.
    pub quality: u8,
    /// The width of the next frame (`None`: the full width).
    pub width: Option<u32>,
    /// Settings changed so far.
    pub changes: u64,
    /// Bits per second over the last window.
    pub window_bitrate: u64,
    /// The highest bit rate over any full window after the first (`None` before one has
    /// ended): what the budget is judged by.
    pub worst_window_bitrate: Option<u64>,
    /// The settings over time, the first [`HISTORY_LIMIT`] of them.
    pub history: Vec<Step>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Level(usize);

/// The settings from smallest to largest, as quality and width-step index: at each
/// narrower width the qualities from `min_quality` up to the last one the prior puts under
/// the next wider width at `min_quality` (so the ladder's sizes only rise), then the full
/// width at every quality up to `max_quality`.
fn ladder(min_quality: u8, max_quality: u8) -> Vec<(u8, usize)> {
    let mut ladder = Vec::new();
    for step in (1..WIDTH_STEPS.len()).rev() {
        let wider = size_at_quality(min_quality) * SIZE_BY_WIDTH_STEP[step - 1];
        ladder.extend(
            (min_quality..=max_quality)
                .take_while(|&q| size_at_quality(q) * SIZE_BY_WIDTH_STEP[step] < wider)
                .map(|q| (q, step)),
        );
    }
    ladder.extend((min_quality..=max_quality).map(|q| (q, 0)));
    ladder
}

/// The controller of one stream. Not thread-safe by itself: an encoder holds it behind a
/// lock, asks [`Controller::setting`] before a frame and tells [`Controller::record`] after.
#[derive(Clone, Debug)]
pub struct Controller {
    budget: Budget,
    level: Level,
    /// Stamps and sizes of the frames in the trailing window.
    frames: VecDeque<(u64, u64)>,
    window_bytes: u64,
    /// The stamp the first full window ends at.
    first_window_end: Option<u64>,
    /// Mean bytes per frame at the current level, once one frame was measured there.
    estimate: Option<f64>,
    frames_at_level: u32,
    level_since: u64,
    /// How long a setting holds before a step up (see [`MAX_UP_HOLD`]).
    up_hold: u64,
    /// The stamp of the last step up.
    last_up: Option<u64>,
    changes: u64,
    worst_window_bitrate: Option<u64>,
    history: Vec<Step>,
    full_width: u32,
    last_stamp: Option<u64>,
    /// Every setting, smallest first ([`ladder`]); a level is an index into it.
    ladder: Vec<(u8, usize)>,
}

impl Controller {
    /// A controller starting at `budget.max_quality`, full width. Quality bounds are
    /// clamped into 1..=100 with `min_quality <= max_quality` (the codec checks them first).
    pub fn new(budget: Budget) -> Controller {
        let max_quality = budget.max_quality.clamp(1, 100);
        let budget = Budget {
            max_quality,
            min_quality: budget.min_quality.clamp(1, max_quality),
            window: budget.window.max(Duration::from_millis(1)),
            ..budget
        };
        let mut controller = Controller {
            budget,
            level: Level(0),
            frames: VecDeque::new(),
            window_bytes: 0,
            first_window_end: None,
            estimate: None,
            frames_at_level: 0,
            level_since: 0,
            up_hold: 0,
            last_up: None,
            changes: 0,
            worst_window_bitrate: None,
            history: Vec::new(),
            full_width: 0,
            last_stamp: None,
            ladder: ladder(budget.min_quality, budget.max_quality),
        };
        controller.level = controller.top();
        controller.up_hold = controller.window_nanos() / 2;
        controller
    }

    /// The budget, after clamping.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// The quality and the width (`None`: unchanged) for the frame stamped `stamp_nanos`,
    /// `full_width` pixels wide once the codec's own `max_width` is applied.
    pub fn setting(&mut self, stamp_nanos: u64, full_width: u32) -> (u8, Option<u32>) {
        self.full_width = full_width;
        self.restart_if_back_in_time(stamp_nanos);
        self.slide(stamp_nanos);
        if let Some(next) = self.decide(stamp_nanos) {
            self.move_to(next, stamp_nanos);
        } else if self.history.is_empty() {
            self.remember(stamp_nanos);
        }
        self.resolve(self.level)
    }

    /// Records that the frame stamped `stamp_nanos` was encoded into `bytes` bytes.
    pub fn record(&mut self, stamp_nanos: u64, bytes: usize) {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        self.restart_if_back_in_time(stamp_nanos);
        self.last_stamp = Some(stamp_nanos);
        self.frames.push_back((stamp_nanos, bytes));
        self.window_bytes = self.window_bytes.saturating_add(bytes);
        self.slide(stamp_nanos);
        let size = bytes as f64;
        self.estimate = Some(match (self.estimate, self.frames_at_level) {
            (Some(mean), n) if n > 0 => 0.75 * mean + 0.25 * size,
            _ => size,
        });
        self.frames_at_level = self.frames_at_level.saturating_add(1);
        let first_end = *self
            .first_window_end
            .get_or_insert(stamp_nanos.saturating_add(self.window_nanos()));
        if stamp_nanos >= first_end {
            let rate = self.window_bitrate();
            self.worst_window_bitrate =
                Some(self.worst_window_bitrate.map_or(rate, |w| w.max(rate)));
        }
    }

    /// Where the controller stands.
    pub fn state(&self) -> BudgetState {
        let (quality, width) = self.resolve(self.level);
        BudgetState {
            quality,
            width,
            changes: self.changes,
            window_bitrate: self.window_bitrate(),
            worst_window_bitrate: self.worst_window_bitrate,
            history: self.history.clone(),
        }
    }

    fn window_nanos(&self) -> u64 {
        u64::try_from(self.budget.window.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Bits per second over the trailing window (the window's bytes over its length).
    fn window_bitrate(&self) -> u64 {
        let bits = u128::from(self.window_bytes) * 8 * 1_000_000_000;
        u64::try_from(bits / u128::from(self.window_nanos().max(1))).unwrap_or(u64::MAX)
    }

    /// A stamp earlier than the last one (a replay looping, a clock reset) starts the
    /// window again; the setting is kept.
    fn restart_if_back_in_time(&mut self, stamp_nanos: u64) {
        if self.last_stamp.is_some_and(|last| stamp_nanos < last) {
            self.frames.clear();
            self.window_bytes = 0;
            self.first_window_end = None;
            self.last_stamp = None;
            self.level_since = stamp_nanos;
        }
    }

    /// Forgets the frames that left the window ending at `now`.
    fn slide(&mut self, now: u64) {
        let start = now.saturating_sub(self.window_nanos());
        while let Some(&(stamp, bytes)) = self.frames.front() {
            if stamp > start {
                break;
            }
            self.frames.pop_front();
            self.window_bytes = self.window_bytes.saturating_sub(bytes);
        }
    }

    /// Frames per second over the window, counting the frame about to be encoded at `now`.
    fn frame_rate(&self, now: u64) -> Option<f64> {
        let oldest = self.frames.front()?.0;
        let span = now.checked_sub(oldest).filter(|&s| s > 0)?;
        Some(self.frames.len() as f64 * 1e9 / span as f64)
    }

    fn decide(&self, now: u64) -> Option<Level> {
        let estimate = self.estimate?;
        let fps = self.frame_rate(now)?;
        let budget = self.budget.max_bitrate as f64;
        let predicted = estimate * 8.0 * fps;
        let window_full = self.first_window_end.is_some_and(|end| now >= end);
        let sent_over = window_full && self.window_bitrate() as f64 > HIGH * budget;
        if (predicted > HIGH * budget || sent_over) && self.level.0 > 0 {
            return Some(match self.highest_under(predicted, TARGET * budget) {
                Some(best) if best.0 < self.level.0 => best,
                // The prediction fits but the window did not: one step down.
                Some(_) => Level(self.level.0 - 1),
                None => Level(0),
            });
        }
        let held = now.saturating_sub(self.level_since) >= self.up_hold;
        if predicted < LOW * budget && self.level != self.top() && held {
            return self
                .highest_under(predicted, TARGET * budget)
                .filter(|b| b.0 > self.level.0);
        }
        None
    }

    /// The highest level whose predicted bit rate is under `limit`, from `predicted` at the
    /// current level.
    fn highest_under(&self, predicted: f64, limit: f64) -> Option<Level> {
        let here = self.relative_size(self.level);
        (0..=self.top().0)
            .rev()
            .map(Level)
            .find(|&level| predicted * self.relative_size(level) / here <= limit)
    }

    fn move_to(&mut self, level: Level, stamp_nanos: u64) {
        if level.0 > self.level.0 {
            self.last_up = Some(stamp_nanos);
        } else if self
            .last_up
            .take()
            .is_some_and(|up| stamp_nanos.saturating_sub(up) < self.window_nanos())
        {
            let longest = u64::try_from(MAX_UP_HOLD.as_nanos()).unwrap_or(u64::MAX);
            self.up_hold = self.up_hold.saturating_mul(2).min(longest);
        }
        let scale = self.relative_size(level) / self.relative_size(self.level);
        self.estimate = self.estimate.map(|mean| mean * scale);
        self.level = level;
        self.frames_at_level = 0;
        self.level_since = stamp_nanos;
        self.changes = self.changes.saturating_add(1);
        self.remember(stamp_nanos);
    }

    fn remember(&mut self, stamp_nanos: u64) {
        if self.history.len() < HISTORY_LIMIT {
            let (quality, width) = self.resolve(self.level);
            self.history.push(Step {
                stamp_nanos,
                quality,
                width,
            });
        }
    }

    fn top(&self) -> Level {
        Level(self.ladder.len().saturating_sub(1))
    }

    /// The quality and width-step index of `level`.
    fn quality_and_step(&self, level: Level) -> (u8, usize) {
        self.ladder
            .get(level.0)
            .copied()
            .unwrap_or((self.budget.max_quality, 0))
    }

    fn resolve(&self, level: Level) -> (u8, Option<u32>) {
        let (quality, step) = self.quality_and_step(level);
        let width = (step > 0).then(|| {
            let (num, den) = WIDTH_STEPS[step];
            (self.full_width.saturating_mul(num) / den).max(1)
        });
        (quality, width)
    }

    fn relative_size(&self, level: Level) -> f64 {
        let (quality, step) = self.quality_and_step(level);
        size_at_quality(quality) * SIZE_BY_WIDTH_STEP[step]
    }
}

/// The prior's relative size at `quality`, interpolated between the measured qualities
/// (under the lowest, the lowest's: the curve is flat there).
fn size_at_quality(quality: u8) -> f64 {
    let q = f64::from(quality.clamp(1, 100));
    if q <= 5.0 {
        return SIZE_BY_QUALITY[0];
    }
    let position = q / 5.0 - 1.0;
    let below = position.floor() as usize;
    let above = (below + 1).min(SIZE_BY_QUALITY.len() - 1);
    let t = position - below as f64;
    SIZE_BY_QUALITY[below] * (1.0 - t) + SIZE_BY_QUALITY[above] * t
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: u64 = 50_000_000;

    fn budget(max_bitrate: u64) -> Budget {
        Budget {
            max_bitrate,
            min_quality: 20,
            max_quality: 75,
            window: Budget::DEFAULT_WINDOW,
        }
    }

    /// A source whose frames are `bytes_at(quality, width)` bytes.
    fn run(controller: &mut Controller, frames: u64, bytes_at: impl Fn(u8, Option<u32>) -> usize) {
        for n in 0..frames {
            let stamp = n * FRAME;
            let (quality, width) = controller.setting(stamp, 1280);
            controller.record(stamp, bytes_at(quality, width));
        }
    }

    fn model(quality: u8, width: Option<u32>) -> usize {
        let scale = width.map_or(1.0, |w| (f64::from(w) / 1280.0).powi(2));
        (40_000.0 * size_at_quality(quality) * scale) as usize
    }

    #[test]
    fn a_generous_budget_keeps_the_top_quality_and_changes_nothing() {
        let mut controller = Controller::new(budget(50_000_000));
        run(&mut controller, 100, model);
        let state = controller.state();
        assert_eq!((state.quality, state.width, state.changes), (75, None, 0));
        assert_eq!(state.history.len(), 1);
    }

    #[test]
    fn a_tight_budget_is_held_after_the_first_window() {
        let mut controller = Controller::new(budget(3_000_000));
        run(&mut controller, 200, model);
        let state = controller.state();
        assert!(state.quality < 75 && state.quality >= 20, "{state:?}");
        assert!(
            state.worst_window_bitrate.is_some_and(|w| w <= 3_000_000),
            "{state:?}"
        );
        assert!(state.changes >= 1 && state.changes < 10, "{state:?}");
    }

    #[test]
    fn under_the_quality_floor_the_width_narrows() {
        let mut controller = Controller::new(budget(500_000));
        run(&mut controller, 200, model);
        let state = controller.state();
        assert!((20..=75).contains(&state.quality), "{state:?}");
        assert!(state.width.is_some_and(|w| w < 1280), "{state:?}");
        assert!(
            state.worst_window_bitrate.is_some_and(|w| w <= 500_000),
            "{state:?}"
        );
    }

    #[test]
    fn a_step_up_that_does_not_hold_waits_longer_next_time() {
        // The model's sizes follow the area at narrow widths, which the prior (measured on
        // real frames) puts higher: each step up from 320 pixels overshoots and is undone.
        let mut controller = Controller::new(budget(500_000));
        run(&mut controller, 1200, model);
        let state = controller.state();
        // Without the back-off: a step up and back every second, about 110 changes in 60 s.
        assert!(state.changes <= 16, "{} changes", state.changes);
        assert!(
            state.worst_window_bitrate.is_some_and(|w| w <= 500_000),
            "{state:?}"
        );
    }

    #[test]
    fn room_again_raises_the_setting() {
        let mut controller = Controller::new(budget(3_000_000));
        run(&mut controller, 100, model);
        let low = controller.state().quality;
        // The scene gets simpler: frames a quarter of the size at every setting.
        for n in 100..300 {
            let stamp = n * FRAME;
            let (quality, width) = controller.setting(stamp, 1280);
            controller.record(stamp, model(quality, width) / 4);
        }
        assert!(controller.state().quality > low, "{:?}", controller.state());
    }

    #[test]
    fn a_stamp_back_in_time_restarts_the_window_not_the_setting() {
        let mut controller = Controller::new(budget(3_000_000));
        run(&mut controller, 100, model);
        let before = controller.state();
        controller.setting(0, 1280);
        let after = controller.state();
        assert_eq!((after.quality, after.width), (before.quality, before.width));
        assert_eq!(after.window_bitrate, 0);
    }

    #[test]
    fn the_ladder_rises_and_ends_at_full_width_from_the_floor_to_the_top() {
        let ladder = ladder(20, 75);
        let sizes: Vec<f64> = ladder
            .iter()
            .map(|&(q, step)| size_at_quality(q) * SIZE_BY_WIDTH_STEP[step])
            .collect();
        assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{ladder:?}");
        assert_eq!(ladder[0], (20, WIDTH_STEPS.len() - 1));
        assert_eq!(
            ladder[ladder.len() - 56..],
            (20..=75).map(|q| (q, 0)).collect::<Vec<_>>()[..]
        );
    }

    #[test]
    fn the_prior_rises_with_quality() {
        let sizes: Vec<f64> = (1..=100).map(size_at_quality).collect();
        assert!(sizes.windows(2).all(|w| w[0] <= w[1]));
        assert!((size_at_quality(75) - 1.0).abs() < 1e-9);
    }
}

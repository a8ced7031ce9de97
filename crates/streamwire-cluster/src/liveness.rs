//! Silent links: a planned link between processes that delivers nothing while its
//! producer publishes. A worker cut off from its peers (a link zenoh did not make again,
//! a process stopped, a subscription gone) shows no error anywhere else: its inputs just
//! stop. The coordinator watches the merged counters it gets about once a second and
//! names every link that received nothing for a whole window while the stream's sender
//! sent frames. A tap's own ingress (a web relay's client, a recorder listening from
//! another process than the producer's: a wire row with `tap` set) is watched the same way
//! while its tap is attached (issue 50): a tap cannot go silent unnoticed either.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use streamwire_runtime::{RunStats, WireDirection};

/// The default window: a link silent this long while its producer published is named.
pub const DEFAULT_SILENT_LINK: Duration = Duration::from_secs(5);

/// One stretch of time during which a link received nothing while its sender sent.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SilentLink {
    /// The receiving process (`host/process`).
    pub partition: String,
    /// The stream's key (`color_image/compressed`).
    pub key: String,
    /// How long it received nothing (so far, for one still silent).
    pub silent_for: Duration,
    /// Frames its sender sent meanwhile.
    pub sent_meanwhile: u64,
    /// Still silent at the last reading.
    pub ongoing: bool,
    /// The tap whose own ingress it is (its number in the receiving process's taps
    /// table), or `None` for a planned link.
    pub tap: Option<u64>,
}

impl fmt::Display for SilentLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` into {}{}: nothing received for {:.1} s{} while its sender sent {} frame{}",
            self.key,
            self.partition,
            match self.tap {
                Some(tap) => format!(" (tap {tap})"),
                None => String::new(),
            },
            self.silent_for.as_secs_f64(),
            if self.ongoing { " (to the end)" } else { "" },
            self.sent_meanwhile,
            if self.sent_meanwhile == 1 { "" } else { "s" },
        )
    }
}

/// What is known of one link.
struct Watch {
    received: u64,
    /// When `received` last grew (or the link was first seen).
    grew_at: Instant,
    /// The sender's frames then.
    sent_then: u64,
    /// The silence going on, once it is long enough to be named.
    silent: Option<SilentLink>,
}

/// Watches the links of a run through successive counters.
///
/// ```
/// use std::time::{Duration, Instant};
/// use streamwire_cluster::SilentLinks;
/// let links = SilentLinks::new(Duration::from_secs(5));
/// assert!(links.episodes().is_empty());
/// ```
pub struct SilentLinks {
    window: Duration,
    /// By receiving process, stream key and tap (`None`: the planned link).
    links: BTreeMap<(String, String, Option<u64>), Watch>,
    /// Silences that ended.
    ended: Vec<SilentLink>,
    /// How many of `ended` [`SilentLinks::recovered`] has given.
    recovered_said: usize,
}

impl SilentLinks {
    /// Names links silent for `window` or longer.
    pub fn new(window: Duration) -> SilentLinks {
        SilentLinks {
            window,
            links: BTreeMap::new(),
            ended: Vec::new(),
            recovered_said: 0,
        }
    }

    /// Reads `stats` (the run's merged counters) taken at `now`; gives the links that
    /// have just become silent (to warn about once each).
    pub fn observe(&mut self, stats: &RunStats, now: Instant) -> Vec<SilentLink> {
        let mut sent: BTreeMap<&str, u64> = BTreeMap::new();
        for w in stats
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::Out)
        {
            *sent.entry(w.key.as_str()).or_default() += w.frames;
        }
        let mut newly = Vec::new();
        for w in stats
            .wire
            .iter()
            .filter(|w| w.direction == WireDirection::In)
        {
            let id = (w.partition.clone(), w.key.clone(), w.tap.map(|t| t.id));
            // A tap nobody listens to any more: its ingress is gone, and so is any
            // silence of it.
            if w.tap.is_some_and(|t| !t.attached) {
                if let Some(mut silence) = self.links.remove(&id).and_then(|w| w.silent) {
                    silence.ongoing = false;
                    self.ended.push(silence);
                }
                continue;
            }
            // A stream whose sender does not report here (a hand-started remote worker
            // not reporting yet) cannot be judged.
            let Some(&sent_now) = sent.get(w.key.as_str()) else {
                continue;
            };
            let watch = self.links.entry(id).or_insert(Watch {
                received: w.frames,
                grew_at: now,
                sent_then: sent_now,
                silent: None,
            });
            if w.frames > watch.received {
                watch.received = w.frames;
                watch.grew_at = now;
                watch.sent_then = sent_now;
                if let Some(mut silence) = watch.silent.take() {
                    silence.ongoing = false;
                    self.ended.push(silence);
                }
                continue;
            }
            let silent_for = now.saturating_duration_since(watch.grew_at);
            let sent_meanwhile = sent_now.saturating_sub(watch.sent_then);
            if silent_for < self.window || sent_meanwhile == 0 {
                continue;
            }
            let silence = SilentLink {
                partition: w.partition.clone(),
                key: w.key.clone(),
                silent_for,
                sent_meanwhile,
                ongoing: true,
                tap: w.tap.map(|t| t.id),
            };
            if watch.silent.is_none() {
                newly.push(silence.clone());
            }
            watch.silent = Some(silence);
        }
        newly
    }

    /// The silences that ended since the last call (the link receives again, or the
    /// tap detached), to say so once each.
    pub fn recovered(&mut self) -> Vec<SilentLink> {
        let new = self
            .ended
            .get(self.recovered_said..)
            // infallible: `recovered_said` is only ever set to `ended.len()`, which grows.
            .unwrap_or_default()
            .to_vec();
        self.recovered_said = self.ended.len();
        new
    }

    /// How many links are silent now.
    pub fn ongoing(&self) -> usize {
        self.links.values().filter(|w| w.silent.is_some()).count()
    }

    /// Every silence seen: those that ended, then those still going on.
    pub fn episodes(&self) -> Vec<SilentLink> {
        self.ended
            .iter()
            .cloned()
            .chain(self.links.values().filter_map(|w| w.silent.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_runtime::WireStats;

    fn stats(sent: u64, received: u64) -> RunStats {
        let mut out = WireStats::default();
        out.partition = "robot/camera".to_owned();
        out.key = "color_image/compressed".to_owned();
        out.direction = WireDirection::Out;
        out.frames = sent;
        let mut inbound = out.clone();
        inbound.partition = "robot/perception".to_owned();
        inbound.direction = WireDirection::In;
        inbound.frames = received;
        let mut stats = RunStats::default();
        stats.wire = vec![out, inbound];
        stats
    }

    #[test]
    fn a_link_that_stops_receiving_while_its_sender_sends_is_named_once_then_ends() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut links = SilentLinks::new(Duration::from_secs(5));
        assert!(links.observe(&stats(10, 10), at(0)).is_empty());
        assert!(links.observe(&stats(40, 10), at(3)).is_empty());
        let newly = links.observe(&stats(60, 10), at(5));
        assert_eq!(newly.len(), 1, "{newly:?}");
        assert_eq!(newly[0].sent_meanwhile, 50);
        assert_eq!(
            newly[0].to_string(),
            "`color_image/compressed` into robot/perception: nothing received for 5.0 s \
             (to the end) while its sender sent 50 frames"
        );
        // Named once.
        assert!(links.observe(&stats(70, 10), at(6)).is_empty());
        // It receives again: the silence ended, 6 s long.
        assert!(links.observe(&stats(80, 15), at(7)).is_empty());
        let episodes = links.episodes();
        assert_eq!(episodes.len(), 1);
        assert!(!episodes[0].ongoing);
        assert_eq!(episodes[0].silent_for, Duration::from_secs(6));
    }

    /// `stats` with the receiving row a tap's own ingress (`attached` or not) in
    /// robot/web.
    fn tapped(sent: u64, received: u64, attached: bool) -> RunStats {
        let mut stats = stats(sent, received);
        let mut tap = streamwire_runtime::TapWire::default();
        tap.id = 2;
        tap.attached = attached;
        stats.wire[1].partition = "robot/web".to_owned();
        stats.wire[1].tap = Some(tap);
        stats
    }

    #[test]
    fn an_attached_tap_that_stops_receiving_is_named_and_said_when_it_receives_again() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut links = SilentLinks::new(Duration::from_secs(5));
        assert!(links.observe(&tapped(10, 10, true), at(0)).is_empty());
        let newly = links.observe(&tapped(60, 10, true), at(5));
        assert_eq!(newly.len(), 1, "{newly:?}");
        assert_eq!(
            newly[0].to_string(),
            "`color_image/compressed` into robot/web (tap 2): nothing received for 5.0 s \
             (to the end) while its sender sent 50 frames"
        );
        assert_eq!(links.ongoing(), 1);
        assert!(links.recovered().is_empty());
        // Re-subscribed, it receives again: said once.
        assert!(links.observe(&tapped(70, 12, true), at(6)).is_empty());
        let recovered = links.recovered();
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        assert_eq!(recovered[0].tap, Some(2));
        assert!(links.recovered().is_empty());
        assert_eq!((links.ongoing(), links.episodes().len()), (0, 1));
    }

    #[test]
    fn a_detached_tap_is_not_watched() {
        let start = Instant::now();
        let mut links = SilentLinks::new(Duration::from_secs(5));
        links.observe(&tapped(10, 10, false), start);
        let later = start + Duration::from_secs(30);
        assert!(links.observe(&tapped(500, 10, false), later).is_empty());
        assert!(links.episodes().is_empty());
    }

    #[test]
    fn a_quiet_sender_makes_no_silent_link() {
        let start = Instant::now();
        let mut links = SilentLinks::new(Duration::from_secs(5));
        links.observe(&stats(10, 10), start);
        assert!(
            links
                .observe(&stats(10, 10), start + Duration::from_secs(30))
                .is_empty()
        );
        assert!(links.episodes().is_empty());
    }
}

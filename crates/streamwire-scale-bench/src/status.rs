//! The run's counters while it runs, read from the status line its coordinator prints
//! once a second (`streamwire_cli::status_line`: `12.3 s | color_image 19.5/s 215.8 MB/s
//! drops 3 | ...`).

/// What one status line says, summed over the streams.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counters {
    /// The run's own clock, s.
    pub run_s: f64,
    /// Messages per second published, every stream together.
    pub messages_per_s: f64,
    /// Messages the inputs dropped so far, every stream together.
    pub drops: u64,
    /// Streams on the line.
    pub streams: usize,
}

/// The counters of `line`, or `None` when it is not a status line with streams.
pub fn parse(line: &str) -> Option<Counters> {
    let mut parts = line.split(" | ");
    let run_s = parts.next()?.strip_suffix(" s")?.parse().ok()?;
    let mut counters = Counters {
        run_s,
        ..Counters::default()
    };
    for part in parts {
        let words: Vec<&str> = part.split_whitespace().collect();
        let rate: f64 = words.get(1)?.strip_suffix("/s")?.parse().ok()?;
        let drops_at = words.iter().position(|w| *w == "drops")?;
        let drops: u64 = words.get(drops_at + 1)?.parse().ok()?;
        counters.messages_per_s += rate;
        counters.drops += drops;
        counters.streams += 1;
    }
    (counters.streams > 0).then_some(counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_line_is_summed_over_its_streams() {
        let line = "504.9 s | cloud 10.8/s 3.3 MB/s drops 168 | cmd_vel 0.0/s 0 B/s drops 0 \
                    | color_image 20.6/s 209.1 MB/s drops 198 q28@960px";
        let counters = parse(line).expect("a status line");
        assert_eq!(counters.run_s, 504.9);
        assert_eq!(counters.drops, 366);
        assert_eq!(counters.streams, 3);
        assert!((counters.messages_per_s - 31.4).abs() < 1e-9);
    }

    #[test]
    fn other_lines_are_not_status_lines() {
        assert_eq!(parse("0.0 s | no streams yet"), None);
        assert_eq!(
            parse("coordinator: every worker is ready (6): the sources start"),
            None
        );
        assert_eq!(parse("[robot/sensors] 1.0 s | x"), None);
    }
}

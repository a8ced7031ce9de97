//! `replay.dir=FILE.mcap` in the demo and the benchmark's blueprints: the built-in modules
//! read no recording format themselves, so the stock binary, which links both them and
//! streamwire-mcap, hands their blueprints this one.

use std::path::Path;

use streamwire::prelude::*;
use streamwire_mcap::{McapSource, Output, ReplayError, TopicStats, parse_topic_map};
use streamwire_modules::demo::{DemoError, ReplayConfig, ReplayFormat, is_mcap};

/// MCAP files (ours, and rosbag2's `.mcap`), played by [`McapSource`].
pub(crate) struct McapReplay;

/// An MCAP replay's failure, as the blueprint's error.
fn refused(error: ReplayError) -> DemoError {
    DemoError::Format {
        format: "MCAP",
        source: Box::new(error),
    }
}

impl ReplayFormat for McapReplay {
    fn reads(&self, path: &Path) -> bool {
        is_mcap(path)
    }

    fn camera_hz(&self, replay: &ReplayConfig, path: &Path) -> Result<f64, DemoError> {
        let source = McapSource {
            path: path.to_owned(),
            topic_map: parse_topic_map(&replay.map).map_err(refused)?,
            ..McapSource::default()
        };
        let (inventory, map) = source.prepare().map_err(refused)?;
        inventory
            .topics
            .iter()
            .filter(|t| map.mapped.get(&t.topic) == Some(&Output::ColorImage))
            .find_map(TopicStats::rate_hz)
            .ok_or_else(|| DemoError::BadValue {
                key: "replay.dir".to_owned(),
                value: path.display().to_string(),
                reason: "no topic of the file plays on `color_image` with two frames or more"
                    .to_owned(),
            })
    }

    /// The topics not played keep their streams renamed `mcap/<output>`, out of the
    /// blueprint's way.
    fn add(
        &self,
        bp: &mut Blueprint,
        replay: &ReplayConfig,
        name: &str,
        path: &Path,
        outputs: &[&'static str],
    ) -> Result<Vec<&'static str>, DemoError> {
        let mut source = McapSource {
            path: path.to_owned(),
            topic_map: parse_topic_map(&replay.map).map_err(refused)?,
            rate: replay.rate,
            looping: replay.looping,
            start_s: replay.start_s,
            duration_s: replay.duration_s,
            outputs: outputs.iter().map(|o| (*o).to_owned()).collect(),
            ..McapSource::default()
        };
        let (_, map) = source.prepare().map_err(refused)?;
        let played: Vec<&'static str> = outputs
            .iter()
            .copied()
            .filter(|o| map.mapped.values().any(|m| m.name() == *o))
            .collect();
        if !played.contains(&"color_image") {
            return Err(DemoError::BadValue {
                key: "replay.dir".to_owned(),
                value: path.display().to_string(),
                reason: "no topic of the file plays on `color_image` (`streamwire info` \
                         lists them; map one with `--replay-map TOPIC=color_image`)"
                    .to_owned(),
            });
        }
        source.outputs = played.iter().map(|o| (*o).to_owned()).collect();
        bp.add(name, source);
        for output in Output::ALL {
            if !played.contains(&output.name()) {
                bp.remap_stream(name, output.name(), &format!("mcap/{}", output.name()));
            }
        }
        Ok(played)
    }
}

//! The process's warnings and errors as log records for `/rosout`: a `tracing` layer
//! (zenoh's and `log`'s records come through `tracing` too) that offers each to the
//! process's [`log_hub`](streamwire_msgs::log_hub), which bounds, counts and hands them on.

use std::fmt::Write as _;

use streamwire_core::Timestamp;
use streamwire_msgs::log_hub;
use streamwire_msgs::{LogLevel, LogRecord};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// What the layer takes: warnings and above, less what the CLI never prints either
/// (`quiet` are `init_logging`'s directives after its level).
pub(crate) fn filter(quiet: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new(format!("warn{quiet}"))
}

/// The layer: each event it sees becomes a [`LogRecord`] offered to the hub.
pub(crate) struct ToHub;

impl<S: Subscriber> Layer<S> for ToHub {
    fn on_event(&self, event: &Event<'_>, _cx: Context<'_, S>) {
        let meta = event.metadata();
        let level = match *meta.level() {
            Level::ERROR => LogLevel::Error,
            Level::WARN => LogLevel::Warn,
            Level::INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        };
        let mut text = Text::default();
        event.record(&mut text);
        let record = LogRecord::new(level, meta.target(), text.0)
            .with_stamp(Timestamp::now())
            .with_location(
                meta.file().unwrap_or_default(), // infallible: optional metadata, absent is empty
                meta.module_path().unwrap_or_default(), // infallible: as above
                meta.line().unwrap_or_default(), // infallible: as above, 0 for none
            );
        log_hub::hub().offer(record);
    }
}

/// An event's message, then its other fields as ` name=value`.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // infallible: writing to a String
        let _ = match field.name() {
            "message" if self.0.is_empty() => write!(self.0, "{value:?}"),
            "message" => write!(self.0, " {value:?}"),
            name => write!(self.0, " {name}={value:?}"),
        };
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        // infallible: writing to a String
        let _ = match field.name() {
            "message" if self.0.is_empty() => write!(self.0, "{value}"),
            name => write!(self.0, " {name}={value}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use streamwire_msgs::log_hub::Origin;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn a_warning_becomes_a_record_with_its_target_and_place_and_info_does_not() {
        let reader = log_hub::hub().subscribe(&[Origin::Local]);
        let subscriber = tracing_subscriber::registry().with(ToHub.with_filter(filter("")));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("not for rosout");
            tracing::warn!(frames = 3, "lossy pixels");
        });
        let record = std::iter::from_fn(|| reader.recv_timeout(Duration::ZERO))
            .find(|r| r.msg.contains("lossy"))
            .expect("the warning reached the hub");
        assert_eq!(&*record.msg, "lossy pixels frames=3");
        assert_eq!(record.level, LogLevel::Warn);
        assert_eq!(&*record.name, module_path!());
        assert!(record.file.ends_with("rosout.rs") && record.line > 0);
        assert!(record.stamp > Timestamp::ZERO);
    }
}

//! Log records, as a robot's nodes publish them on `/rosout`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// How severe a [`LogRecord`] is; the numbers are ROS 2's (`rcl_interfaces/msg/Log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LogLevel {
    /// Detail for whoever debugs the node (10).
    Debug,
    /// Normal operation (20).
    Info,
    /// Something may be wrong (30).
    Warn,
    /// Something is wrong; the node goes on (40).
    Error,
    /// The node cannot go on (50).
    Fatal,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 5] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
        LogLevel::Fatal,
    ];

    /// ROS 2's number for the level: 10, 20, 30, 40 or 50.
    pub const fn ros_level(self) -> u8 {
        match self {
            LogLevel::Debug => 10,
            LogLevel::Info => 20,
            LogLevel::Warn => 30,
            LogLevel::Error => 40,
            LogLevel::Fatal => 50,
        }
    }

    /// The level of ROS 2's number, or `None` for a number ROS 2 does not define.
    ///
    /// ```
    /// # use streamwire_msgs::LogLevel;
    /// assert_eq!(LogLevel::from_ros_level(30), Some(LogLevel::Warn));
    /// assert_eq!(LogLevel::from_ros_level(25), None);
    /// ```
    pub fn from_ros_level(level: u8) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.ros_level() == level)
    }
}

/// One log line of a node, as `rcl_interfaces/msg/Log`: when, how severe, who, what, and
/// where in the source.
///
/// ```
/// use streamwire::Timestamp;
/// use streamwire::msgs::{LogLevel, LogRecord};
///
/// let record = LogRecord::new(LogLevel::Warn, "camera", "frame dropped")
///     .with_stamp(Timestamp::from_nanos(9))
///     .with_location("camera.rs", "step", 42);
/// assert_eq!(record.level, LogLevel::Warn);
/// assert_eq!(record.line, 42);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/LogRecord", crate = streamwire_core)]
pub struct LogRecord {
    /// When the line was logged.
    pub stamp: Timestamp,
    /// How severe it is.
    pub level: LogLevel,
    /// Who logged it: the logger's (node's) name.
    pub name: Arc<str>,
    /// The text.
    pub msg: Arc<str>,
    /// The source file it was logged from (empty when unknown).
    pub file: Arc<str>,
    /// The function it was logged from (empty when unknown).
    pub function: Arc<str>,
    /// The source line (0 when unknown).
    pub line: u32,
}

impl LogRecord {
    /// A record of `msg` by `name` at `level`, stamped [`Timestamp::ZERO`], with no source
    /// location until [`with_location`](LogRecord::with_location).
    pub fn new(level: LogLevel, name: impl Into<Arc<str>>, msg: impl Into<Arc<str>>) -> LogRecord {
        LogRecord {
            stamp: Timestamp::ZERO,
            level,
            name: name.into(),
            msg: msg.into(),
            file: Arc::from(""),
            function: Arc::from(""),
            line: 0,
        }
    }

    /// This record stamped `stamp`.
    pub fn with_stamp(mut self, stamp: Timestamp) -> LogRecord {
        self.stamp = stamp;
        self
    }

    /// This record logged from `function` at `file`:`line`.
    pub fn with_location(
        mut self,
        file: impl Into<Arc<str>>,
        function: impl Into<Arc<str>>,
        line: u32,
    ) -> LogRecord {
        self.file = file.into();
        self.function = function.into();
        self.line = line;
        self
    }
}

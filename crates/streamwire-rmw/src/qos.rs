//! A ROS 2 QoS profile and its text in a liveliness token, both ways.
//!
//! Source: ros2/rmw_zenoh (Jazzy) `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp`
//! (`qos_to_keyexpr`, `keyexpr_to_qos`) and `rmw_zenoh_cpp/src/detail/qos.cpp` (the
//! defaults: keep last 42, reliable, volatile, infinite durations, automatic liveliness).
//! The text is
//! `<reliability>:<durability>:<history>,<depth>:<deadline s>,<ns>:<lifespan s>,<ns>:<liveliness>,<lease s>,<ns>`,
//! each field written only where it differs from the default (empty otherwise).

use std::fmt::Write as _;

use crate::ContractError;

/// `RMW_DURATION_INFINITE`'s seconds (`rmw/types.h`): `INT64_MAX / 10^9`.
pub const INFINITE_SECONDS: u64 = 9_223_372_036;
/// `RMW_DURATION_INFINITE`'s nanoseconds: `INT64_MAX % 10^9`.
pub const INFINITE_NANOSECONDS: u64 = 854_775_807;

/// rmw_zenoh's default depth (`RMW_ZENOH_DEFAULT_HISTORY_DEPTH`).
pub const DEFAULT_DEPTH: u64 = 42;

macro_rules! policy {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $code:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            /// The value of rmw's enum (`rmw/types.h`), as the token writes it.
            pub fn code(self) -> u8 {
                match self {
                    $($name::$variant => $code),*
                }
            }

            /// The policy of a code, `None` for one rmw_zenoh's parser does not know.
            pub fn from_code(code: u8) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

policy!(
    /// `rmw_qos_reliability_policy_e`.
    Reliability {
        /// `SYSTEM_DEFAULT`.
        SystemDefault = 0,
        /// `RELIABLE` (rmw_zenoh's default).
        Reliable = 1,
        /// `BEST_EFFORT`.
        BestEffort = 2,
        /// `UNKNOWN`.
        Unknown = 3,
    }
);

policy!(
    /// `rmw_qos_durability_policy_e`.
    Durability {
        /// `SYSTEM_DEFAULT`.
        SystemDefault = 0,
        /// `TRANSIENT_LOCAL`: late joiners get the last messages (`/tf_static`).
        TransientLocal = 1,
        /// `VOLATILE` (rmw_zenoh's default).
        Volatile = 2,
        /// `UNKNOWN`.
        Unknown = 3,
    }
);

policy!(
    /// `rmw_qos_history_policy_e`.
    History {
        /// `SYSTEM_DEFAULT`.
        SystemDefault = 0,
        /// `KEEP_LAST` (rmw_zenoh's default).
        KeepLast = 1,
        /// `KEEP_ALL`.
        KeepAll = 2,
        /// `UNKNOWN`.
        Unknown = 3,
    }
);

policy!(
    /// `rmw_qos_liveliness_policy_e`.
    Liveliness {
        /// `SYSTEM_DEFAULT`.
        SystemDefault = 0,
        /// `AUTOMATIC` (rmw_zenoh's default).
        Automatic = 1,
        /// `MANUAL_BY_TOPIC`.
        ManualByTopic = 3,
        /// `UNKNOWN`.
        Unknown = 4,
        /// `BEST_AVAILABLE`.
        BestAvailable = 5,
    }
);

/// An `rmw_time_t`: seconds and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Duration {
    /// Seconds.
    pub sec: u64,
    /// Nanoseconds.
    pub nsec: u64,
}

impl Duration {
    /// `RMW_DURATION_INFINITE`.
    pub const INFINITE: Duration = Duration {
        sec: INFINITE_SECONDS,
        nsec: INFINITE_NANOSECONDS,
    };
}

/// A ROS 2 QoS profile as rmw_zenoh's tokens carry it. [`Default`] is rmw_zenoh's
/// default profile (`qos.cpp`), the one whose text is all empty fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RosQos {
    /// Reliable or best effort.
    pub reliability: Reliability,
    /// Volatile or transient local.
    pub durability: Durability,
    /// Keep last or keep all.
    pub history: History,
    /// How many messages keep-last keeps.
    pub depth: u64,
    /// Deadline.
    pub deadline: Duration,
    /// Lifespan.
    pub lifespan: Duration,
    /// Liveliness.
    pub liveliness: Liveliness,
    /// Liveliness lease.
    pub liveliness_lease: Duration,
}

impl Default for RosQos {
    fn default() -> RosQos {
        RosQos {
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            history: History::KeepLast,
            depth: DEFAULT_DEPTH,
            deadline: Duration::INFINITE,
            lifespan: Duration::INFINITE,
            liveliness: Liveliness::Automatic,
            liveliness_lease: Duration::INFINITE,
        }
    }
}

/// Writes `value` when it differs from `default`, then `delimiter` (if any).
fn field<T: PartialEq + std::fmt::Display>(
    out: &mut String,
    value: T,
    default: T,
    delimiter: Option<char>,
) {
    if value != default {
        // Writing to a String cannot fail.
        let _ = write!(out, "{value}");
    }
    if let Some(delimiter) = delimiter {
        out.push(delimiter);
    }
}

impl RosQos {
    /// The profile's text in a liveliness token (`qos_to_keyexpr`).
    ///
    /// ```
    /// use streamwire_rmw::qos::RosQos;
    /// // rmw_zenoh docs/design.md: the talker's publisher on `chatter` (depth 7).
    /// let talker = RosQos { depth: 7, ..RosQos::default() };
    /// assert_eq!(talker.to_keyexpr(), "::,7:,:,:,,");
    /// assert_eq!(RosQos::parse("::,7:,:,:,,")?, talker);
    /// assert_eq!(RosQos::default().to_keyexpr(), "::,:,:,:,,");
    /// # Ok::<(), streamwire_rmw::ContractError>(())
    /// ```
    pub fn to_keyexpr(&self) -> String {
        let d = RosQos::default();
        let mut out = String::new();
        field(
            &mut out,
            self.reliability.code(),
            d.reliability.code(),
            Some(':'),
        );
        field(
            &mut out,
            self.durability.code(),
            d.durability.code(),
            Some(':'),
        );
        field(&mut out, self.history.code(), d.history.code(), Some(','));
        field(&mut out, self.depth, d.depth, Some(':'));
        field(&mut out, self.deadline.sec, d.deadline.sec, Some(','));
        field(&mut out, self.deadline.nsec, d.deadline.nsec, Some(':'));
        field(&mut out, self.lifespan.sec, d.lifespan.sec, Some(','));
        field(&mut out, self.lifespan.nsec, d.lifespan.nsec, Some(':'));
        field(
            &mut out,
            self.liveliness.code(),
            d.liveliness.code(),
            Some(','),
        );
        let lease = self.liveliness_lease;
        field(&mut out, lease.sec, d.liveliness_lease.sec, Some(','));
        field(&mut out, lease.nsec, d.liveliness_lease.nsec, None);
        out
    }

    /// A profile read from its token text (`keyexpr_to_qos`): an empty field is the
    /// default; a missing group, an unknown policy code or a number that is not plain
    /// decimal digits is refused.
    pub fn parse(text: &str) -> Result<RosQos, ContractError> {
        let refuse = |why: &'static str| ContractError::Qos {
            text: text.to_owned(),
            why,
        };
        let groups: Vec<&str> = text.split(':').collect();
        let [
            reliability,
            durability,
            history,
            deadline,
            lifespan,
            liveliness,
        ] = groups.as_slice()
        else {
            return Err(refuse("not six groups separated by ':'"));
        };
        let pair = |group: &str| -> Result<(String, String), ContractError> {
            match group.split(',').collect::<Vec<_>>().as_slice() {
                [a, b] => Ok(((*a).to_owned(), (*b).to_owned())),
                _ => Err(refuse("a group without its two ',' parts")),
            }
        };
        let (history, depth) = pair(history)?;
        let (deadline_s, deadline_ns) = pair(deadline)?;
        let (lifespan_s, lifespan_ns) = pair(lifespan)?;
        let [liveliness, lease_s, lease_ns] = liveliness.split(',').collect::<Vec<_>>()[..] else {
            return Err(refuse("the liveliness group is not three ',' parts"));
        };
        let d = RosQos::default();
        let number = |field: &str, default: u64| -> Result<u64, ContractError> {
            if field.is_empty() {
                return Ok(default);
            }
            if !field.chars().all(|c| c.is_ascii_digit()) {
                return Err(refuse("a number that is not decimal digits"));
            }
            field.parse().map_err(|_| refuse("a number out of range"))
        };
        let code = |field: &str, default: u8| -> Result<u8, ContractError> {
            let value = number(field, u64::from(default))?;
            u8::try_from(value).map_err(|_| refuse("a policy code out of range"))
        };
        let unknown = || refuse("a policy code rmw_zenoh does not know");
        Ok(RosQos {
            reliability: Reliability::from_code(code(reliability, d.reliability.code())?)
                .ok_or_else(unknown)?,
            durability: Durability::from_code(code(durability, d.durability.code())?)
                .ok_or_else(unknown)?,
            history: History::from_code(code(&history, d.history.code())?).ok_or_else(unknown)?,
            depth: number(&depth, d.depth)?,
            deadline: Duration {
                sec: number(&deadline_s, d.deadline.sec)?,
                nsec: number(&deadline_ns, d.deadline.nsec)?,
            },
            lifespan: Duration {
                sec: number(&lifespan_s, d.lifespan.sec)?,
                nsec: number(&lifespan_ns, d.lifespan.nsec)?,
            },
            liveliness: Liveliness::from_code(code(liveliness, d.liveliness.code())?)
                .ok_or_else(unknown)?,
            liveliness_lease: Duration {
                sec: number(lease_s, d.liveliness_lease.sec)?,
                nsec: number(lease_ns, d.liveliness_lease.nsec)?,
            },
        })
    }
}

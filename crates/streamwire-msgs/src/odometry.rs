//! Odometry.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

/// A 6x6 covariance, row-major, over (x, y, z, rotation about x, about y, about z).
pub type Covariance6 = [[f64; 6]; 6];

/// A 3-vector (a position in metres, or a velocity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Vector3 {
    /// X component.
    pub x: f64,
    /// Y component.
    pub y: f64,
    /// Z component.
    pub z: f64,
}

impl Vector3 {
    /// The vector `(x, y, z)`.
    pub const fn new(x: f64, y: f64, z: f64) -> Vector3 {
        Vector3 { x, y, z }
    }

    fn is_finite(&self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

/// A rotation as a unit quaternion `(x, y, z, w)`. The default is the identity.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    /// X component.
    pub x: f64,
    /// Y component.
    pub y: f64,
    /// Z component.
    pub z: f64,
    /// W (scalar) component.
    pub w: f64,
}

impl Quaternion {
    /// No rotation.
    pub const IDENTITY: Quaternion = Quaternion {
        x: 0.0,
        y: 0.0,
        z: 0.0,
        w: 1.0,
    };

    /// The quaternion `(x, y, z, w)`.
    pub const fn new(x: f64, y: f64, z: f64, w: f64) -> Quaternion {
        Quaternion { x, y, z, w }
    }

    /// The rotation by `yaw` radians about z (a ground robot's heading).
    pub fn from_yaw(yaw: f64) -> Quaternion {
        let half = yaw / 2.0;
        Quaternion::new(0.0, 0.0, half.sin(), half.cos())
    }

    /// The length; 1 for a rotation.
    pub fn norm(&self) -> f64 {
        (self.x * self.x + self.y * self.y + self.z * self.z + self.w * self.w).sqrt()
    }
}

impl Default for Quaternion {
    fn default() -> Self {
        Quaternion::IDENTITY
    }
}

/// A position and an orientation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pose {
    /// Position in metres.
    pub position: Vector3,
    /// Orientation.
    pub orientation: Quaternion,
}

/// Linear velocity (m/s) and angular velocity (rad/s), as ROS `geometry_msgs/Twist`.
///
/// Part of [`Odometry`], and a message of its own: a velocity command (`cmd_vel`), e.g.
/// from a browser through the web relay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Twist", crate = streamwire_core)]
pub struct Twist {
    /// Linear velocity in metres per second.
    pub linear: Vector3,
    /// Angular velocity in radians per second.
    pub angular: Vector3,
}

/// Why an odometry value was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OdometryError {
    /// A value is NaN or infinite.
    #[error("odometry {what} holds a NaN or infinite value")]
    NotFinite {
        /// `pose`, `twist`, `pose covariance` or `twist covariance`.
        what: &'static str,
    },
    /// The orientation is not a unit quaternion.
    #[error(
        "odometry orientation has norm {norm}, not 1 (within {QUATERNION_TOLERANCE}): normalize it"
    )]
    NotUnitQuaternion {
        /// The quaternion's norm.
        norm: f64,
    },
}

/// How far from 1 an orientation's norm may be: loose enough for quaternions written
/// with a few decimals or integrated in `f32`, tight enough to catch a bug.
pub const QUATERNION_TOLERANCE: f64 = 1e-3;

/// A pose and velocity estimate, as `nav_msgs/Odometry`.
///
/// The pose is of `child_frame_id` in `frame_id` (e.g. `base_link` in `odom`); the twist
/// is in `child_frame_id`. Covariances are 6x6 row-major (ROS's 36 numbers); zero until
/// set. Every value is finite and the orientation a unit quaternion (checked at
/// construction and when deserializing).
///
/// ```
/// use streamwire::Timestamp;
/// use streamwire::msgs::{Odometry, Pose, Quaternion, Twist, Vector3};
///
/// let pose = Pose { position: Vector3::new(1.0, 2.0, 0.0), orientation: Quaternion::from_yaw(0.5) };
/// let twist = Twist { linear: Vector3::new(0.3, 0.0, 0.0), ..Twist::default() };
/// let mut covariance = [[0.0; 6]; 6];
/// covariance[0][0] = 0.01;
/// let odom = Odometry::new("odom", "base_link", pose, twist)?
///     .with_stamp(Timestamp::from_nanos(1))
///     .with_pose_covariance(covariance)?;
/// assert_eq!(odom.pose().position.x, 1.0);
/// assert_eq!(odom.pose_covariance()[0][0], 0.01);
/// # Ok::<(), streamwire_msgs::OdometryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Odometry", crate = streamwire_core)]
#[serde(try_from = "OdometryRepr")]
pub struct Odometry {
    stamp: Timestamp,
    frame_id: Arc<str>,
    child_frame_id: Arc<str>,
    pose: Pose,
    pose_covariance: Covariance6,
    twist: Twist,
    twist_covariance: Covariance6,
}

/// The unchecked wire form of an [`Odometry`].
#[derive(Deserialize)]
struct OdometryRepr {
    stamp: Timestamp,
    frame_id: Arc<str>,
    child_frame_id: Arc<str>,
    pose: Pose,
    pose_covariance: Covariance6,
    twist: Twist,
    twist_covariance: Covariance6,
}

impl TryFrom<OdometryRepr> for Odometry {
    type Error = OdometryError;

    fn try_from(repr: OdometryRepr) -> Result<Odometry, OdometryError> {
        Odometry::new(repr.frame_id, repr.child_frame_id, repr.pose, repr.twist)?
            .with_stamp(repr.stamp)
            .with_pose_covariance(repr.pose_covariance)?
            .with_twist_covariance(repr.twist_covariance)
    }
}

impl Odometry {
    /// The pose of `child_frame_id` in `frame_id` and its velocity; the stamp is
    /// [`Timestamp::ZERO`] and the covariances zero until set.
    pub fn new(
        frame_id: impl Into<Arc<str>>,
        child_frame_id: impl Into<Arc<str>>,
        pose: Pose,
        twist: Twist,
    ) -> Result<Odometry, OdometryError> {
        if !(pose.position.is_finite()
            && [
                pose.orientation.x,
                pose.orientation.y,
                pose.orientation.z,
                pose.orientation.w,
            ]
            .iter()
            .all(|v| v.is_finite()))
        {
            return Err(OdometryError::NotFinite { what: "pose" });
        }
        let norm = pose.orientation.norm();
        if (norm - 1.0).abs() > QUATERNION_TOLERANCE {
            return Err(OdometryError::NotUnitQuaternion { norm });
        }
        if !(twist.linear.is_finite() && twist.angular.is_finite()) {
            return Err(OdometryError::NotFinite { what: "twist" });
        }
        Ok(Odometry {
            stamp: Timestamp::ZERO,
            frame_id: frame_id.into(),
            child_frame_id: child_frame_id.into(),
            pose,
            pose_covariance: [[0.0; 6]; 6],
            twist,
            twist_covariance: [[0.0; 6]; 6],
        })
    }

    /// This estimate with the sensor time `stamp`.
    pub fn with_stamp(mut self, stamp: Timestamp) -> Odometry {
        self.stamp = stamp;
        self
    }

    /// This estimate with the pose covariance (finite values).
    pub fn with_pose_covariance(
        mut self,
        covariance: Covariance6,
    ) -> Result<Odometry, OdometryError> {
        check_covariance(&covariance, "pose covariance")?;
        self.pose_covariance = covariance;
        Ok(self)
    }

    /// This estimate with the twist covariance (finite values).
    pub fn with_twist_covariance(
        mut self,
        covariance: Covariance6,
    ) -> Result<Odometry, OdometryError> {
        check_covariance(&covariance, "twist covariance")?;
        self.twist_covariance = covariance;
        Ok(self)
    }

    /// The sensor time of the estimate.
    pub fn stamp(&self) -> Timestamp {
        self.stamp
    }

    /// The frame the pose is given in (e.g. `odom`).
    pub fn frame_id(&self) -> &str {
        &self.frame_id
    }

    /// The frame whose pose this is, and in which the twist is given (e.g. `base_link`).
    pub fn child_frame_id(&self) -> &str {
        &self.child_frame_id
    }

    /// The pose of `child_frame_id` in `frame_id`.
    pub fn pose(&self) -> &Pose {
        &self.pose
    }

    /// The pose's covariance, row-major.
    pub fn pose_covariance(&self) -> &Covariance6 {
        &self.pose_covariance
    }

    /// The velocity, in `child_frame_id`.
    pub fn twist(&self) -> &Twist {
        &self.twist
    }

    /// The twist's covariance, row-major.
    pub fn twist_covariance(&self) -> &Covariance6 {
        &self.twist_covariance
    }
}

fn check_covariance(covariance: &Covariance6, what: &'static str) -> Result<(), OdometryError> {
    // ROS marks an unknown covariance with -1 on the diagonal: finite, so allowed.
    if covariance.iter().flatten().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(OdometryError::NotFinite { what })
    }
}

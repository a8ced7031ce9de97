//! Coordinate frame transforms (what ROS's tf2 broadcasts).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use streamwire_core::Timestamp;
use streamwire_macros::Message;

use crate::{QUATERNION_TOLERANCE, Quaternion, Vector3};

/// Why a transform was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TransformError {
    /// The translation or rotation of transform `index` holds a NaN or infinite value.
    #[error("transform {index} holds a NaN or infinite value")]
    NotFinite {
        /// Position of the transform in the message.
        index: usize,
    },
    /// The rotation of transform `index` is not a unit quaternion.
    #[error(
        "transform {index} has a rotation of norm {norm}, not 1 (within {QUATERNION_TOLERANCE})"
    )]
    NotUnitQuaternion {
        /// Position of the transform in the message.
        index: usize,
        /// The quaternion's norm.
        norm: f64,
    },
}

/// Where frame `child_frame_id` is in frame `parent_frame_id` at `stamp`, as
/// `geometry_msgs/TransformStamped`: a point `p` in the child frame is `rotation * p +
/// translation` in the parent frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransformStamped {
    /// When the transform holds.
    pub stamp: Timestamp,
    /// The frame the transform maps into (ROS's `header.frame_id`).
    pub parent_frame_id: Arc<str>,
    /// The frame the transform maps from.
    pub child_frame_id: Arc<str>,
    /// The child's origin in the parent frame, metres.
    pub translation: Vector3,
    /// The child's orientation in the parent frame.
    pub rotation: Quaternion,
}

/// Several frame transforms published together, as `tf2_msgs/TFMessage` (the `/tf` and
/// `/tf_static` topics). Every value is finite and every rotation a unit quaternion
/// (checked at construction and when deserializing); the list may be empty.
///
/// ```
/// use streamwire::Timestamp;
/// use streamwire::msgs::{Quaternion, TransformStamped, Transforms, Vector3};
///
/// let camera = TransformStamped {
///     stamp: Timestamp::from_nanos(5),
///     parent_frame_id: "base_link".into(),
///     child_frame_id: "camera".into(),
///     translation: Vector3::new(0.1, 0.0, 0.3),
///     rotation: Quaternion::from_yaw(0.2),
/// };
/// let tf = Transforms::new(vec![camera])?;
/// assert_eq!(tf.transforms()[0].child_frame_id.as_ref(), "camera");
/// # Ok::<(), streamwire::msgs::TransformError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Message)]
#[message(name = "streamwire/Transforms", crate = streamwire_core)]
#[serde(try_from = "TransformsRepr")]
pub struct Transforms {
    transforms: Arc<[TransformStamped]>,
}

/// The unchecked wire form of [`Transforms`].
#[derive(Deserialize)]
struct TransformsRepr {
    transforms: Vec<TransformStamped>,
}

impl TryFrom<TransformsRepr> for Transforms {
    type Error = TransformError;

    fn try_from(repr: TransformsRepr) -> Result<Transforms, TransformError> {
        Transforms::new(repr.transforms)
    }
}

impl Transforms {
    /// The transforms, each checked: finite values, unit rotation.
    pub fn new(transforms: Vec<TransformStamped>) -> Result<Transforms, TransformError> {
        for (index, t) in transforms.iter().enumerate() {
            let (v, q) = (t.translation, t.rotation);
            if ![v.x, v.y, v.z, q.x, q.y, q.z, q.w]
                .iter()
                .all(|c| c.is_finite())
            {
                return Err(TransformError::NotFinite { index });
            }
            let norm = q.norm();
            if (norm - 1.0).abs() > QUATERNION_TOLERANCE {
                return Err(TransformError::NotUnitQuaternion { index, norm });
            }
        }
        Ok(Transforms {
            transforms: transforms.into(),
        })
    }

    /// The transforms in the order given.
    pub fn transforms(&self) -> &[TransformStamped] {
        &self.transforms
    }
}

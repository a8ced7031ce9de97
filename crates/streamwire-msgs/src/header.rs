//! The sensor stamp and coordinate frame that the sensor messages carry as fields
//! `stamp: Timestamp` and `frame_id: Arc<str>` (a ROS `std_msgs/Header`), with their
//! accessors written once. They stay two fields of each message, not a nested header
//! struct, because the messages' serde form (JSON, CBOR, wire frames) has them flat.

/// `stamp`, `frame_id`, `with_stamp` and `with_frame_id` for a type with the fields
/// `stamp: Timestamp` and `frame_id: Arc<str>`:
/// `stamp_and_frame_id!(impl PointCloud)` or `stamp_and_frame_id!(impl<E: Bound> Raster<E>)`.
macro_rules! stamp_and_frame_id {
    (impl<$param:ident: $bound:path> $type:ty) => {
        impl<$param: $bound> $type {
            $crate::header::stamp_and_frame_id!(@methods);
        }
    };
    (impl $type:ty) => {
        impl $type {
            $crate::header::stamp_and_frame_id!(@methods);
        }
    };
    (@methods) => {
        /// With the sensor time `stamp` (when the data was captured).
        pub fn with_stamp(mut self, stamp: streamwire_core::Timestamp) -> Self {
            self.stamp = stamp;
            self
        }

        /// With the coordinate frame `frame_id` (the sensor's frame).
        pub fn with_frame_id(mut self, frame_id: impl Into<std::sync::Arc<str>>) -> Self {
            self.frame_id = frame_id.into();
            self
        }

        /// The sensor time: when the data was captured.
        pub fn stamp(&self) -> streamwire_core::Timestamp {
            self.stamp
        }

        /// The coordinate frame of the sensor (empty when not set).
        pub fn frame_id(&self) -> &str {
            &self.frame_id
        }
    };
}

pub(crate) use stamp_and_frame_id;

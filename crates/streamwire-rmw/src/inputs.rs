//! The `Ros2*In` modules: one per kind of output port, since a module's ports are typed
//! at compile time. Each subscribes to one topic ([`Subscribed`]) and publishes the
//! message its ROS 2 type maps to on its one output; remap the output's stream
//! (`blueprint.remap(ports.image, "color_image")`) to feed the run's inputs.

use bytes::Bytes;
use streamwire_core::{Compressed, Context, Node, NodeResult, Out, Trigger};
use streamwire_macros::Module;
use streamwire_msgs::{Image, Odometry, PointCloud, Twist};
use streamwire_ros2::{RosMessage as _, SensorImage};

use crate::DEFAULT_CONNECT;
use crate::source::{
    DEFAULT_MAX_BYTES, DEFAULT_QUEUE, InSettings, Refusal, Subscribed, compressed_jpeg,
};

const COMPRESSED_IMAGE: &str = "sensor_msgs/msg/CompressedImage";
const IMAGE: &str = "sensor_msgs/msg/Image";

/// Defines a `Ros2*In` module: its settings (the same for all), its one output port, the
/// ROS 2 types it reads, and how a sample becomes a message on the port.
macro_rules! ros2_in {
    (
        $(#[$doc:meta])*
        $name:ident {
            $port:ident: $port_type:ty = $port_name:literal,
            default_type: $default_type:expr,
            reads: [$($ros_type:expr),+ $(,)?],
            deliver: $deliver:expr $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Module)]
        #[module(crate = streamwire_core)]
        pub struct $name {
            /// The topic's messages (remap its stream to feed an input of another name).
            #[port(name = $port_name)]
            pub $port: Out<$port_type>,
            /// The ROS 2 topic, fully qualified (`/odom`).
            #[config]
            pub topic: String,
            /// Its ROS 2 type, one of those the module reads.
            #[config]
            pub ros_type: String,
            /// The ROS domain (default: `ROS_DOMAIN_ID`, else 0).
            #[config]
            pub domain: Option<u32>,
            /// The zenoh router (default rmw_zenoh's `tcp/127.0.0.1:7447`).
            #[config]
            pub connect: String,
            /// The ROS 2 node's name (empty: the instance's name).
            #[config]
            pub node: String,
            /// The ROS 2 node's namespace (empty: the root).
            #[config]
            pub namespace: String,
            /// The subscription's reliability: `reliable` or `best_effort`.
            #[config]
            pub reliability: String,
            /// The subscription's durability: `volatile`.
            #[config]
            pub durability: String,
            /// Samples kept between zenoh and the module (keep-last; what it replaces is
            /// counted in `dropped`).
            #[config]
            pub queue: u32,
            /// The largest sample taken, in bytes (larger: counted in `refused:size`).
            #[config]
            pub max_bytes: u64,
            /// The subscription while running.
            #[state]
            pub running: Option<Subscribed>,
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $port: Out::default(),
                    topic: String::new(),
                    ros_type: $default_type.to_owned(),
                    domain: None,
                    connect: DEFAULT_CONNECT.to_owned(),
                    node: String::new(),
                    namespace: String::new(),
                    reliability: "reliable".to_owned(),
                    durability: "volatile".to_owned(),
                    queue: DEFAULT_QUEUE,
                    max_bytes: DEFAULT_MAX_BYTES,
                    running: None,
                }
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("topic", &self.topic)
                    .field("ros_type", &self.ros_type)
                    .field("connect", &self.connect)
                    .finish_non_exhaustive()
            }
        }

        impl $name {
            /// The ROS 2 types it reads.
            pub const READS: &'static [&'static str] = &[$($ros_type),+];

            fn settings(&self) -> InSettings {
                InSettings {
                    topic: self.topic.clone(),
                    ros_type: self.ros_type.clone(),
                    domain: self.domain,
                    connect: self.connect.clone(),
                    node: self.node.clone(),
                    namespace: self.namespace.clone(),
                    reliability: self.reliability.clone(),
                    durability: self.durability.clone(),
                    queue: self.queue,
                    max_bytes: self.max_bytes,
                }
            }
        }

        impl Node for $name {
            fn trigger(&self) -> Trigger {
                // Each step waits for a sample (up to 100 ms).
                Trigger::FreeRunning
            }

            fn start(&mut self, cx: &mut Context<'_>) -> NodeResult {
                let _span = tracing::info_span!("ros2_in", instance = %cx.instance_name()).entered();
                self.running = Some(Subscribed::start(cx, &self.settings(), Self::READS)?);
                Ok(())
            }

            fn step(&mut self, _cx: &mut Context<'_>) -> NodeResult {
                let port = &self.$port;
                if let Some(running) = &self.running {
                    running.step(|ros_type, sample| ($deliver)(port, ros_type, sample))?;
                }
                Ok(())
            }

            fn stop(&mut self, _cx: &mut Context<'_>) -> NodeResult {
                if let Some(running) = self.running.take() {
                    running.finish();
                }
                Ok(())
            }
        }
    };
}

ros2_in!(
    /// A ROS 2 image topic into the run: `sensor_msgs/msg/CompressedImage` (JPEG, published
    /// as the encoded bytes, never decoded here) or `sensor_msgs/msg/Image` (colour or
    /// grey pixels), on an `Out<Compressed<Image>>`: consumers wanting pixels get a decode
    /// node from the planner, consumers of the bytes get them as they came. A PNG or a
    /// depth image is refused (`refused:content`).
    ///
    /// Counters on its row: `received`, `published`, `dropped` (replaced in its queue),
    /// `refused:size|attachment|cdr|content`, `incompatible_publishers` (a publisher of
    /// the topic with another type, or a QoS the subscription does not accept).
    Ros2ImageIn {
        image: Compressed<Image> = "image",
        default_type: COMPRESSED_IMAGE,
        reads: [COMPRESSED_IMAGE, IMAGE],
        deliver: deliver_image,
    }
);

ros2_in!(
    /// A ROS 2 `nav_msgs/msg/Odometry` topic into the run (counters as [`Ros2ImageIn`]'s).
    Ros2OdometryIn {
        odometry: Odometry = "odometry",
        default_type: "nav_msgs/msg/Odometry",
        reads: ["nav_msgs/msg/Odometry"],
        deliver: |port: &Out<Odometry>, _, sample| -> Result<(), Refusal> {
            port.publish(Odometry::from_cdr(sample)?)?;
            Ok(())
        },
    }
);

ros2_in!(
    /// A ROS 2 `geometry_msgs/msg/Twist` topic (`/cmd_vel`) into the run (counters as
    /// [`Ros2ImageIn`]'s).
    Ros2TwistIn {
        twist: Twist = "cmd_vel",
        default_type: "geometry_msgs/msg/Twist",
        reads: ["geometry_msgs/msg/Twist"],
        deliver: |port: &Out<Twist>, _, sample| -> Result<(), Refusal> {
            port.publish(Twist::from_cdr(sample)?)?;
            Ok(())
        },
    }
);

ros2_in!(
    /// A ROS 2 `sensor_msgs/msg/PointCloud2` topic into the run (counters as
    /// [`Ros2ImageIn`]'s).
    Ros2PointCloudIn {
        cloud: PointCloud = "point_cloud",
        default_type: "sensor_msgs/msg/PointCloud2",
        reads: ["sensor_msgs/msg/PointCloud2"],
        deliver: |port: &Out<PointCloud>, _, sample| -> Result<(), Refusal> {
            port.publish(PointCloud::from_cdr(sample)?)?;
            Ok(())
        },
    }
);

fn deliver_image(
    port: &Out<Compressed<Image>>,
    ros_type: &'static str,
    sample: Bytes,
) -> Result<(), Refusal> {
    if ros_type == COMPRESSED_IMAGE {
        port.publish_encoded(compressed_jpeg(sample)?)?;
        return Ok(());
    }
    match SensorImage::from_cdr(sample)? {
        SensorImage::Color(image) => {
            port.publish(image)?;
            Ok(())
        }
        SensorImage::Depth(_) => Err(Refusal::Content(
            "a depth image on an image topic (its encoding is 16UC1 or 32FC1)".to_owned(),
        )),
    }
}

//! The rmw_zenoh contract against rmw_zenoh's own examples.
//!
//! Golden strings verbatim from ros2/rmw_zenoh (Jazzy) `docs/design.md`: "Topic and Service
//! name mapping to Zenoh key expressions" (data keys) and "Graph Cache" (liveliness
//! tokens); the QoS text as `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp`
//! (`qos_to_keyexpr`) writes it with the defaults of `rmw_zenoh_cpp/src/detail/qos.cpp`;
//! the attachment's layout from design.md ("Publishers") and `attachment_helpers.cpp`.

use streamwire_rmw::liveliness::{Entity, EntityKind, NodeInfo, TopicInfo};
use streamwire_rmw::qos::{Durability, History, Reliability, RosQos};
use streamwire_rmw::{Attachment, ContractError, dds_type_name, mangle, topic_key};

const STRING_HASH: &str = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";
const ADD_TWO_INTS_HASH: &str =
    "RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a";

// docs/design.md, "Graph Cache", verbatim.
const LISTENER_NODE: &str = "@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/0/NN/%/%/listener";
const LISTENER_SUB: &str = "@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/10/MS/%/%/listener/%chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18/::,10:,:,:,,";
const TALKER_PUB: &str = "@ros2_lv/2/8b20917502ee955ac4476e0266340d5c/0/10/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18/::,7:,:,:,,";
const SERVER: &str = "@ros2_lv/2/f9980ee0495eaafb3e38f0d19e2eae12/0/10/SS/%/%/add_two_ints_server/%add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a/::,10:,:,:,,";

fn demo_node(zid: &str, name: &str) -> NodeInfo {
    NodeInfo {
        domain: 2,
        zid: zid.into(),
        node_id: 0,
        enclave: "/".into(),
        namespace: "/".into(),
        name: name.into(),
    }
}

fn chatter(kind: EntityKind, zid: &str, node: &str, depth: u64) -> Entity {
    Entity {
        node: demo_node(zid, node),
        entity_id: 10,
        kind,
        topic: Some(TopicInfo {
            name: "/chatter".into(),
            ros_type: "std_msgs/msg/String".into(),
            type_hash: STRING_HASH.into(),
            qos: RosQos {
                depth,
                ..RosQos::default()
            },
        }),
    }
}

#[test]
fn data_keys_equal_design_md() {
    // docs/design.md: `chatter`, then `chatter` in the `/robot1` namespace, ROS_DOMAIN_ID=0.
    assert_eq!(
        topic_key(0, "/chatter", "std_msgs/msg/String", STRING_HASH).unwrap(),
        "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    );
    assert_eq!(
        topic_key(0, "/robot1/chatter", "std_msgs/msg/String", STRING_HASH).unwrap(),
        "0/robot1/chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    );
    // The service key (`add_two_ints`, domain 2) has the same form with `srv`.
    assert_eq!(
        topic_key(
            2,
            "/add_two_ints",
            "example_interfaces/srv/AddTwoInts",
            ADD_TWO_INTS_HASH
        )
        .unwrap(),
        "2/add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/RIHS01_e118de6bf5eeb66a2491b5bda11202e7b68f198d6f67922cf30364858239c81a"
    );
}

#[test]
fn tokens_equal_design_md() {
    let listener = Entity::node(demo_node("aac3178e146ba6f1fc6e6a4085e77f21", "listener"));
    assert_eq!(listener.to_keyexpr().unwrap(), LISTENER_NODE);
    let sub = chatter(
        EntityKind::Subscription,
        "aac3178e146ba6f1fc6e6a4085e77f21",
        "listener",
        10,
    );
    assert_eq!(sub.to_keyexpr().unwrap(), LISTENER_SUB);
    let publisher = chatter(
        EntityKind::Publisher,
        "8b20917502ee955ac4476e0266340d5c",
        "talker",
        7,
    );
    assert_eq!(publisher.to_keyexpr().unwrap(), TALKER_PUB);
}

#[test]
fn design_md_tokens_read_back_to_the_same_text() {
    for token in [LISTENER_NODE, LISTENER_SUB, TALKER_PUB, SERVER] {
        let entity = Entity::parse(token).unwrap_or_else(|e| panic!("{token}: {e}"));
        assert_eq!(entity.to_keyexpr().unwrap(), token);
    }
    let talker = Entity::parse(TALKER_PUB).unwrap();
    assert_eq!(talker.kind, EntityKind::Publisher);
    assert_eq!(talker.node.namespace, "/");
    assert_eq!(talker.node.name, "talker");
    let topic = talker.topic.unwrap();
    assert_eq!(topic.name, "/chatter");
    assert_eq!(topic.ros_type, "std_msgs/msg/String");
    assert_eq!(topic.qos.depth, 7);
    let server = Entity::parse(SERVER).unwrap();
    assert_eq!(server.kind, EntityKind::Service);
    assert_eq!(
        server.topic.unwrap().ros_type,
        "example_interfaces/srv/AddTwoInts"
    );
}

#[test]
fn names_are_mangled_as_rmw_zenoh_does() {
    let mut node = demo_node("0123abcd", "imu_node");
    node.namespace = "/veh/front".into();
    node.enclave = "/secure".into();
    let mut entity = Entity::node(node);
    entity.entity_id = 0;
    assert_eq!(
        entity.to_keyexpr().unwrap(),
        "@ros2_lv/2/0123abcd/0/0/NN/%secure/%veh%front/imu_node"
    );
    // An empty namespace or enclave is `%` as rcl's `/` is.
    entity.node.namespace = String::new();
    entity.node.enclave = String::new();
    assert_eq!(
        entity.to_keyexpr().unwrap(),
        "@ros2_lv/2/0123abcd/0/0/NN/%/%/imu_node"
    );
    assert_eq!(mangle("/robot1/cmd_vel"), "%robot1%cmd_vel");
    assert_eq!(
        dds_type_name("sensor_msgs/msg/CompressedImage").unwrap(),
        "sensor_msgs::msg::dds_::CompressedImage_"
    );
}

#[test]
fn qos_fields_are_written_only_where_they_differ() {
    assert_eq!(RosQos::default().to_keyexpr(), "::,:,:,:,,");
    // The sensor-data profile: best effort, depth 5.
    let sensor = RosQos {
        reliability: Reliability::BestEffort,
        depth: 5,
        ..RosQos::default()
    };
    assert_eq!(sensor.to_keyexpr(), "2::,5:,:,:,,");
    // A latched topic (`/tf_static`): transient local, keep last 1.
    let latched = RosQos {
        durability: Durability::TransientLocal,
        depth: 1,
        ..RosQos::default()
    };
    assert_eq!(latched.to_keyexpr(), ":1:,1:,:,:,,");
    let everything = RosQos {
        history: History::KeepAll,
        deadline: streamwire_rmw::qos::Duration { sec: 1, nsec: 5 },
        lifespan: streamwire_rmw::qos::Duration { sec: 0, nsec: 100 },
        liveliness: streamwire_rmw::qos::Liveliness::ManualByTopic,
        liveliness_lease: streamwire_rmw::qos::Duration { sec: 3, nsec: 0 },
        ..sensor
    };
    assert_eq!(everything.to_keyexpr(), "2::2,5:1,5:0,100:3,3,0");
    for profile in [RosQos::default(), sensor, latched, everything] {
        assert_eq!(RosQos::parse(&profile.to_keyexpr()).unwrap(), profile);
    }
}

#[test]
fn malformed_qos_and_tokens_are_refused() {
    for text in [
        "",
        "::,:,:,",
        "::,:,:,:,,:",
        "9::,:,:,:,,",
        "::,-1:,:,:,,",
        "::,x:,:,:,,",
        "::,99999999999999999999:,:,:,,",
    ] {
        assert!(RosQos::parse(text).is_err(), "{text:?} parsed");
    }
    let bad = [
        "@ros2_lv/0/zid/0/0/NN/%/%",
        "@other/0/zid/0/0/NN/%/%/node",
        "@ros2_lv/0/zid/0/0/XX/%/%/node",
        "@ros2_lv/0/zid/0/0/NN/%/%/node/%chatter/std_msgs::msg::dds_::String_/h/::,:,:,:,,",
        "@ros2_lv/0/zid/0/1/MP/%/%/node",
        "@ros2_lv/0/zid/0/1/MP/%/%/node/%chatter/std_msgs::msg::dds_::String_/h/bad",
        "@ros2_lv/x/zid/0/0/NN/%/%/node",
        "@ros2_lv/0//0/0/NN/%/%/node",
    ];
    for token in bad {
        assert!(Entity::parse(token).is_err(), "{token:?} parsed");
    }
    // Names that would change what a key matches are refused on the way out.
    assert!(matches!(
        topic_key(0, "/a/*", "std_msgs/msg/String", STRING_HASH),
        Err(ContractError::TopicName(_))
    ));
    assert!(topic_key(0, "chatter", "std_msgs/msg/String", STRING_HASH).is_err());
    assert!(topic_key(0, "/chatter", "std_msgs/String", STRING_HASH).is_err());
    assert!(topic_key(0, "/chatter", "std_msgs/msg/String", "RIHS01_00").is_err());
}

#[test]
fn attachment_is_33_bytes_little_endian() {
    let attachment = Attachment {
        sequence_number: 0x0102_0304_0506_0708,
        source_timestamp: 1_700_000_000_123_456_789,
        gid: *b"0123456789abcdef",
    };
    let bytes = attachment.encode();
    assert_eq!(bytes.len(), 33);
    assert_eq!(&bytes[..8], &[8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(&bytes[8..16], &1_700_000_000_123_456_789_i64.to_le_bytes());
    assert_eq!(bytes[16], 16);
    assert_eq!(&bytes[17..], b"0123456789abcdef");
    assert_eq!(Attachment::decode(&bytes).unwrap(), attachment);
}

#[test]
fn short_or_malformed_attachments_are_refused() {
    let good = Attachment {
        sequence_number: 1,
        source_timestamp: 2,
        gid: [9; 16],
    }
    .encode();
    for len in 0..good.len() {
        assert!(
            Attachment::decode(&good[..len]).is_err(),
            "{len} bytes read"
        );
    }
    let mut longer = good.to_vec();
    longer.push(0);
    assert!(Attachment::decode(&longer).is_err());
    let mut wrong_len = good;
    wrong_len[16] = 15;
    assert!(matches!(
        Attachment::decode(&wrong_len),
        Err(ContractError::Attachment { len: 33, .. })
    ));
}

#[test]
fn no_corruption_of_a_token_or_qos_text_panics() {
    for token in [LISTENER_NODE, LISTENER_SUB, TALKER_PUB, SERVER] {
        for at in 0..token.len() {
            let _ = Entity::parse(&token[..at]);
            for replacement in ["/", "%", ":", ",", "", "x", "9", "é"] {
                let corrupted = format!("{}{replacement}{}", &token[..at], &token[at + 1..]);
                if let Ok(entity) = Entity::parse(&corrupted) {
                    let _ = entity.to_keyexpr();
                }
                if let Some(qos) = corrupted.rsplit('/').next() {
                    let _ = RosQos::parse(qos);
                }
            }
        }
    }
    // Every length of arbitrary bytes.
    let bytes: Vec<u8> = (0..64u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for len in 0..bytes.len() {
        let _ = Attachment::decode(&bytes[..len]);
    }
}

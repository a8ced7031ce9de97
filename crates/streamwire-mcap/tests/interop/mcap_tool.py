"""The Python side of streamwire-mcap's interop tests (tests/interop.rs drives it).

Reads one JSON request on stdin, writes one JSON answer on stdout. Requests:
  {"op": "read", "path": P}
      Reads the MCAP file P with the `mcap` library (profile, each channel's topic, schema
      name and encoding, message encoding, messages) and decodes every message's CDR with
      rosbags' ROS 2 Jazzy type store. Then opens P as a rosbag2 bag with rosbags' Reader,
      its metadata.yaml being the file's own `rosbag2` metadata record (what rosbag2 writes
      at close), and counts the messages per topic. Answers
      {"profile", "topics": {topic: {"schema", "schema_encoding", "encoding", "messages": [..]}},
       "rosbag2_counts": {topic: n}, "rosbag2_read": {topic: n}}
      where each message is a summary of its fields (bytes as hex).
  {"op": "write_bag", "dir": D, "jpegs": [hex, ...]}
      Writes a rosbag2 bag with rosbags' Writer (storage plugin MCAP) in the new folder D:
      as many messages as JPEG files given (the compressed images' data) on each of /camera/color/image_raw/compressed (CompressedImage),
      /camera/depth/image_rect_raw (Image 16UC1), /points (PointCloud2), /odom (Odometry),
      /tf (TFMessage) and /chatter (std_msgs/String, a type streamwire does not map),
      interleaved. Answers {"path": the .mcap file, "order": [[topic, stamp_ns], ...]}.
  {"op": "read_json", "path": P}
      Reads the MCAP file P with the `mcap` library and answers, per channel whose
      message encoding is `json`: {topic: {"schema", "schema_encoding", "schema_data" (the
      JSON Schema, parsed), "metadata", "messages": [..]}} where each message is its JSON,
      parsed, with every field the schema marks `"contentEncoding": "base64"` decoded and
      written as hex (what a reader following the schema gets).
"""
import base64
import json
import pathlib
import shutil
import struct
import sys
import tempfile

import numpy as np
from mcap.reader import make_reader
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

TS = get_typestore(Stores.ROS2_JAZZY)
T = TS.types


def bits(value):
    """A double's IEEE 754 bits, as an integer."""
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def stamp_ns(header):
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def summary(msgtype, msg):
    """The fields a test compares, per type."""
    if msgtype == "sensor_msgs/msg/CompressedImage":
        return {"stamp": stamp_ns(msg.header), "frame_id": msg.header.frame_id,
                "format": msg.format, "data": bytes(msg.data).hex()}
    if msgtype == "sensor_msgs/msg/Image":
        return {"stamp": stamp_ns(msg.header), "frame_id": msg.header.frame_id,
                "encoding": msg.encoding, "width": msg.width, "height": msg.height,
                "step": msg.step, "data": bytes(msg.data).hex()}
    if msgtype == "nav_msgs/msg/Odometry":
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        t = msg.twist.twist
        # Doubles as their bits: JSON readers need not round-trip floats exactly.
        return {"stamp": stamp_ns(msg.header), "frame_id": msg.header.frame_id,
                "child_frame_id": msg.child_frame_id,
                "bits": [bits(v) for v in (p.x, p.y, p.z, q.x, q.y, q.z, q.w,
                                           t.linear.x, t.linear.y, t.linear.z,
                                           t.angular.x, t.angular.y, t.angular.z)]}
    if msgtype == "sensor_msgs/msg/PointCloud2":
        return {"stamp": stamp_ns(msg.header), "width": msg.width, "height": msg.height,
                "data": bytes(msg.data).hex()}
    if msgtype == "tf2_msgs/msg/TFMessage":
        return {"stamp": stamp_ns(msg.transforms[0].header) if msg.transforms else 0,
                "child_frame_ids": [t.child_frame_id for t in msg.transforms]}
    return {}


def read(path):
    path = pathlib.Path(path)
    answer = {"topics": {}}
    with open(path, "rb") as f:
        reader = make_reader(f)
        answer["profile"] = reader.get_header().profile
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            topic = answer["topics"].setdefault(channel.topic, {
                "schema": schema.name, "schema_encoding": schema.encoding,
                "encoding": channel.message_encoding, "messages": []})
            msg = TS.deserialize_cdr(message.data, schema.name)
            topic["messages"].append(summary(schema.name, msg))
        records = {m.name: m.metadata for m in reader.iter_metadata()}
    meta = json.loads(records["rosbag2"]["serialized_metadata"])
    info = meta["rosbag2_bagfile_information"]
    answer["rosbag2_counts"] = {t["topic_metadata"]["name"]: t["message_count"]
                                for t in info["topics_with_message_count"]}
    with tempfile.TemporaryDirectory() as tmp:
        bag = pathlib.Path(tmp, "bag")
        bag.mkdir()
        (bag / "metadata.yaml").write_text(json.dumps(meta))
        shutil.copy(path, bag / info["relative_file_paths"][0])
        counts = {}
        with Reader(bag) as reader:
            for connection, _, raw in reader.messages():
                TS.deserialize_cdr(raw, connection.msgtype)
                counts[connection.topic] = counts.get(connection.topic, 0) + 1
    answer["rosbag2_read"] = counts
    return answer


def header(i, frame_id):
    ns = 1_700_000_000_000_000_000 + i * 50_000_000
    time = T["builtin_interfaces/msg/Time"](sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
    return T["std_msgs/msg/Header"](stamp=time, frame_id=frame_id), ns


def messages(i, jpegs):
    """The i-th message of each topic: (topic, type, message, stamp)."""
    out = []
    h, ns = header(i, "camera")
    jpeg = np.frombuffer(bytes.fromhex(jpegs[i]), dtype=np.uint8)
    out.append(("/camera/color/image_raw/compressed", "sensor_msgs/msg/CompressedImage",
                T["sensor_msgs/msg/CompressedImage"](header=h, format="jpeg", data=jpeg), ns))
    h, ns = header(i, "depth")
    depth = np.array([1000 + i, 0, 2000, 7], dtype="<u2").view(np.uint8)
    out.append(("/camera/depth/image_rect_raw", "sensor_msgs/msg/Image",
                T["sensor_msgs/msg/Image"](header=h, height=2, width=2, encoding="16UC1",
                                           is_bigendian=0, step=4, data=depth), ns))
    h, ns = header(i, "lidar")
    fields = [T["sensor_msgs/msg/PointField"](name=n, offset=4 * k, datatype=7, count=1)
              for k, n in enumerate("xyz")]
    points = np.array([float(i), 1.0, 2.0, 3.0, 4.0, 5.0], dtype="<f4").view(np.uint8)
    out.append(("/points", "sensor_msgs/msg/PointCloud2",
                T["sensor_msgs/msg/PointCloud2"](header=h, height=1, width=2, fields=fields,
                                                 is_bigendian=False, point_step=12, row_step=24,
                                                 data=points, is_dense=True), ns))
    h, ns = header(i, "odom")
    Vector3, Quaternion = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    pose = T["geometry_msgs/msg/PoseWithCovariance"](
        pose=T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=float(i), y=0.0, z=0.0),
                                         orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0)),
        covariance=np.zeros(36))
    twist = T["geometry_msgs/msg/TwistWithCovariance"](
        twist=T["geometry_msgs/msg/Twist"](linear=Vector3(x=1.0, y=0.0, z=0.0),
                                           angular=Vector3(x=0.0, y=0.0, z=0.0)),
        covariance=np.zeros(36))
    out.append(("/odom", "nav_msgs/msg/Odometry",
                T["nav_msgs/msg/Odometry"](header=h, child_frame_id="base_link", pose=pose, twist=twist), ns))
    h, ns = header(i, "odom")
    transform = T["geometry_msgs/msg/Transform"](translation=Vector3(x=float(i), y=0.0, z=0.0),
                                                 rotation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))
    out.append(("/tf", "tf2_msgs/msg/TFMessage", T["tf2_msgs/msg/TFMessage"](transforms=[
        T["geometry_msgs/msg/TransformStamped"](header=h, child_frame_id="base_link", transform=transform)]), ns))
    out.append(("/chatter", "std_msgs/msg/String", T["std_msgs/msg/String"](data=f"hello {i}"), ns))
    return out


def write_bag(directory, jpegs):
    directory = pathlib.Path(directory)
    order = []
    with Writer(directory, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for i in range(len(jpegs)):
            for k, (topic, msgtype, msg, ns) in enumerate(messages(i, jpegs)):
                if topic not in connections:
                    connections[topic] = writer.add_connection(topic, msgtype, typestore=TS)
                # Log times rise by 1 ms per message: the order a replay must keep.
                log_time = ns + k * 1_000_000
                writer.write(connections[topic], log_time, TS.serialize_cdr(msg, msgtype))
                order.append([topic, ns])
    path = next(directory.glob("*.mcap"))
    return {"path": str(path), "order": order}


def decode_with(schema, value):
    """`value` with its base64 fields (per `schema`) decoded, as hex."""
    if schema.get("contentEncoding") == "base64" and isinstance(value, str):
        return base64.b64decode(value, validate=True).hex()
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: decode_with(props.get(k, schema.get("additionalProperties", {})), v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [decode_with(schema.get("items", {}), v) for v in value]
    return value


def read_json(path):
    topics = {}
    with open(path, "rb") as f:
        reader = make_reader(f)
        for schema, channel, message in reader.iter_messages(log_time_order=False):
            if channel.message_encoding != "json":
                continue
            parsed = json.loads(schema.data)
            topic = topics.setdefault(channel.topic, {
                "schema": schema.name, "schema_encoding": schema.encoding,
                "schema_data": parsed, "metadata": dict(channel.metadata), "messages": [],
            })
            topic["messages"].append(decode_with(parsed, json.loads(message.data)))
    return {"topics": topics}


def main():
    request = json.load(sys.stdin)
    op = request["op"]
    try:
        if op == "read":
            answer = read(request["path"])
        elif op == "read_json":
            answer = read_json(request["path"])
        elif op == "write_bag":
            answer = write_bag(request["dir"], request["jpegs"])
        else:
            raise ValueError(f"unknown op {op}")
    except Exception as error:  # the test prints it
        answer = {"error": f"{type(error).__name__}: {error}"}
    json.dump(answer, sys.stdout)


main()

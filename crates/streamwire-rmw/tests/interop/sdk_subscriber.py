"""A ROS 2 subscriber from zenoh-ros2-sdk (not streamwire's code) for tests/sdk.rs.

Subscribes to a CompressedImage topic and an Odometry topic through a zenoh router, and
prints one JSON line per message received (the JPEG decoded with Pillow), then the SDK's
view of the graph's topics, then exits. Definitions come from streamwire-ros2's `.msg`
files (offline: no git).

usage: sdk_subscriber.py PORT MESSAGES_DIR CAMERA_TOPIC ODOM_TOPIC COUNT TIMEOUT_S [RAW_TOPIC]
(with RAW_TOPIC, a sensor_msgs/msg/Image subscriber too, `raw` lines)
"""

import io
import json
import os
import sys
import threading
import time

os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

from PIL import Image  # noqa: E402
from zenoh_ros2_sdk import ROS2Subscriber, get_registry, get_topic_names_and_types  # noqa: E402


_EMITTING = threading.Lock()


def emit(record):
    # The SDK calls back from several threads, and `print` writes the text and its newline
    # separately: unlocked, two records could share a line and neither would parse.
    line = json.dumps(record) + "\n"
    with _EMITTING:
        sys.stdout.write(line)
        sys.stdout.flush()


def stamp(header):
    return [int(header.stamp.sec), int(header.stamp.nanosec)]


def main():
    port, messages_dir, camera, odom = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    count, timeout = int(sys.argv[5]), float(sys.argv[6])
    raw_topic = sys.argv[7] if len(sys.argv) > 7 else None
    get_registry(messages_dir=messages_dir)
    seen = {"image": 0, "odom": 0, "raw": 0 if raw_topic else count}
    lock = threading.Lock()
    done = threading.Event()

    def counted(kind):
        with lock:
            seen[kind] += 1
            if all(n >= count for n in seen.values()):
                done.set()

    def on_image(msg):
        data = bytes(msg.data)
        try:
            with Image.open(io.BytesIO(data)) as picture:
                picture.load()
                size, decoded = list(picture.size), picture.format
        except Exception as error:  # reported, the test fails on it
            size, decoded = None, f"error: {error}"
        emit({"kind": "image", "format": msg.format, "bytes": len(data), "decoded": decoded,
              "size": size, "frame_id": msg.header.frame_id, "stamp": stamp(msg.header)})
        counted("image")

    def on_odom(msg):
        pose, twist = msg.pose.pose, msg.twist.twist
        emit({"kind": "odom", "frame_id": msg.header.frame_id, "child_frame_id": msg.child_frame_id,
              "stamp": stamp(msg.header),
              "position": [pose.position.x, pose.position.y, pose.position.z],
              "orientation": [pose.orientation.x, pose.orientation.y, pose.orientation.z,
                              pose.orientation.w],
              "linear": [twist.linear.x, twist.linear.y, twist.linear.z],
              "angular": [twist.angular.x, twist.angular.y, twist.angular.z]})
        counted("odom")

    def on_raw(msg):
        emit({"kind": "raw", "size": [int(msg.width), int(msg.height)], "encoding": msg.encoding,
              "bytes": len(bytes(msg.data)), "stamp": stamp(msg.header)})
        counted("raw")

    subscribers = [
        ROS2Subscriber(camera, "sensor_msgs/msg/CompressedImage", on_image,
                       router_port=port, node_name="sdk_listener"),
        ROS2Subscriber(odom, "nav_msgs/msg/Odometry", on_odom, router_port=port,
                       node_name="sdk_listener"),
    ]
    if raw_topic:
        subscribers.append(ROS2Subscriber(raw_topic, "sensor_msgs/msg/Image", on_raw,
                                          router_port=port, node_name="sdk_listener"))
    emit({"kind": "ready"})
    done.wait(timeout)
    topics = get_topic_names_and_types(router_port=port, timeout=2.0)
    emit({"kind": "topics", "topics": [[name, types] for name, types in topics]})
    for subscriber in subscribers:
        subscriber.close()
    emit({"kind": "end", "seen": seen})


if __name__ == "__main__":
    started = time.monotonic()
    main()
    # The SDK's session threads may linger; the test bounds the process anyway.
    os._exit(0)

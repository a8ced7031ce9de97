"""ROS 2 publishers from zenoh-ros2-sdk (not streamwire's code) for tests/sdk_in.rs and
the topic tools' tests.

Publishes, through a zenoh router, a `sensor_msgs/msg/CompressedImage` (a JPEG made by
Pillow), a raw `sensor_msgs/msg/Image` (rgb8) and a `nav_msgs/msg/Odometry`, every
PERIOD_S seconds, printing one JSON line per message published (what the test compares
the run's messages with), until TIMEOUT_S has passed or stdin closes. Definitions come
from streamwire-ros2's `.msg` files (offline: no git).

usage: sdk_publisher.py PORT MESSAGES_DIR PREFIX PERIOD_S TIMEOUT_S
(topics PREFIX/compressed, PREFIX/image_raw, /odom)
"""

import hashlib
import io
import json
import os
import select
import sys
import time

os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

import numpy  # noqa: E402
from PIL import Image  # noqa: E402
from zenoh_ros2_sdk import ROS2Publisher, get_registry  # noqa: E402

WIDTH, HEIGHT = 64, 48


def emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def pixels(index):
    """An rgb8 picture that changes with `index`: a gradient and a moving bar."""
    x = numpy.arange(WIDTH, dtype=numpy.uint16)
    y = numpy.arange(HEIGHT, dtype=numpy.uint16)[:, None]
    picture = numpy.zeros((HEIGHT, WIDTH, 3), dtype=numpy.uint8)
    picture[:, :, 0] = (x * 4) % 256
    picture[:, :, 1] = (y * 5) % 256
    picture[:, :, 2] = (index * 16) % 256
    return picture


def jpeg(picture):
    out = io.BytesIO()
    Image.fromarray(picture, "RGB").save(out, format="JPEG", quality=90)
    return out.getvalue()


def stdin_closed():
    readable, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(readable) and sys.stdin.read(1) == ""


def main():
    port, messages_dir, prefix = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    period, timeout = float(sys.argv[4]), float(sys.argv[5])
    get_registry(messages_dir=messages_dir)
    compressed = ROS2Publisher(prefix + "/compressed", "sensor_msgs/msg/CompressedImage",
                               router_port=port, node_name="sdk_camera")
    raw = ROS2Publisher(prefix + "/image_raw", "sensor_msgs/msg/Image", router_port=port,
                        node_name="sdk_camera")
    odom = ROS2Publisher("/odom", "nav_msgs/msg/Odometry", router_port=port,
                         node_name="sdk_odometry")
    types = compressed.session_mgr.store.types
    Header, Time = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    Pose, PoseCov = types["geometry_msgs/msg/Pose"], types["geometry_msgs/msg/PoseWithCovariance"]
    Point, Quaternion = types["geometry_msgs/msg/Point"], types["geometry_msgs/msg/Quaternion"]
    Twist, TwistCov = types["geometry_msgs/msg/Twist"], types["geometry_msgs/msg/TwistWithCovariance"]
    Vector3 = types["geometry_msgs/msg/Vector3"]
    emit({"kind": "ready"})
    started = time.monotonic()
    index = 0
    while time.monotonic() - started < timeout and not stdin_closed():
        now = time.time_ns()
        sec, nanosec = now // 1_000_000_000, now % 1_000_000_000
        header = Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id="sdk_camera")
        picture = pixels(index)
        data = jpeg(picture)
        compressed.publish(header=header, format="rgb8; jpeg compressed bgr8",
                           data=numpy.frombuffer(data, dtype=numpy.uint8))
        emit({"kind": "compressed", "stamp": [sec, nanosec], "bytes": len(data),
              "sha256": hashlib.sha256(data).hexdigest()})
        raw.publish(header=header, height=HEIGHT, width=WIDTH, encoding="rgb8", is_bigendian=0,
                    step=WIDTH * 3, data=picture.reshape(-1))
        emit({"kind": "raw", "stamp": [sec, nanosec],
              "sha256": hashlib.sha256(picture.tobytes()).hexdigest()})
        position = [1.0 + index, -2.5, 0.25]
        orientation = [0.0, 0.0, 0.6, 0.8]
        linear, angular = [0.5, 0.0, 0.0], [0.0, 0.0, 0.125 * index]
        covariance = numpy.zeros(36, dtype=numpy.float64)
        odom.publish(
            header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id="odom"),
            child_frame_id="base_link",
            pose=PoseCov(pose=Pose(position=Point(x=position[0], y=position[1], z=position[2]),
                                   orientation=Quaternion(x=orientation[0], y=orientation[1],
                                                          z=orientation[2], w=orientation[3])),
                         covariance=covariance),
            twist=TwistCov(twist=Twist(linear=Vector3(x=linear[0], y=linear[1], z=linear[2]),
                                       angular=Vector3(x=angular[0], y=angular[1],
                                                       z=angular[2])),
                           covariance=covariance),
        )
        emit({"kind": "odom", "stamp": [sec, nanosec], "position": position,
              "orientation": orientation, "linear": linear, "angular": angular})
        index += 1
        time.sleep(period)
    for publisher in (compressed, raw, odom):
        publisher.close()
    emit({"kind": "end", "published": index})


if __name__ == "__main__":
    main()
    # The SDK's session threads may linger; the test bounds the process anyway.
    os._exit(0)

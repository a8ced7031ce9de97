"""The rosbags side of streamwire-ros2's interop tests (tests/interop.rs drives it).

Reads one JSON request on stdin, writes one JSON answer on stdout:
  {"msg_dir": "<crate>/msg", "ops": [op, ...]}  ->  [answer, ...]
vision_msgs and point_cloud_interfaces are not in rosbags' ROS 2 Jazzy store: their .msg texts
are registered from msg_dir.
Ops:
  {"op": "hash", "type": T}               -> {"hash": "RIHS01_..."}
  {"op": "msgdef", "type": T}             -> {"text": ros2msg text with dependencies}
  {"op": "roundtrip", "type": T, "cdr": hex}
      -> {"cdr": hex of rosbags' serialization of what it read, "value": the message as JSON}
  {"op": "make", "case": name}            -> {"type": T, "cdr": hex} of a message built here
Bytes travel as hex. An op that fails answers {"error": text}.
"""
import json
import pathlib
import sys

import numpy as np
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.msg import get_types_from_msg


def store(msg_dir):
    typestore = get_typestore(Stores.ROS2_JAZZY)
    types = {}
    for package in ("vision_msgs", "point_cloud_interfaces"):
        for path in sorted(pathlib.Path(msg_dir, package, "msg").glob("*.msg")):
            types.update(get_types_from_msg(path.read_text(), f"{package}/msg/{path.stem}"))
    typestore.register(types)
    return typestore


def to_json(ts, value):
    """A message as plain JSON: its fields only (rosbags' dataclasses also hold constants)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "__msgtype__"):
        fields = ts.fielddefs[value.__msgtype__][1]
        return {name: to_json(ts, getattr(value, name)) for name, _ in fields}
    if isinstance(value, list):
        return [to_json(ts, v) for v in value]
    return value


def make(ts, case):
    """Messages built by hand here, for bytes not derived from streamwire's."""
    T = ts.types
    time = T["builtin_interfaces/msg/Time"](sec=12, nanosec=345)
    header = T["std_msgs/msg/Header"](stamp=time, frame_id="cam")
    if case == "image_padded":
        data = np.array([1, 2, 3, 0, 4, 5, 6, 0], dtype=np.uint8)
        msg = T["sensor_msgs/msg/Image"](header=header, height=2, width=1, encoding="rgb8",
                                         is_bigendian=0, step=4, data=data)
    elif case == "depth_16uc1":
        data = np.array([1000, 0, 65535, 7], dtype="<u2").view(np.uint8)
        msg = T["sensor_msgs/msg/Image"](header=header, height=2, width=2, encoding="16UC1",
                                         is_bigendian=0, step=4, data=data)
    elif case == "depth_32fc1":
        data = np.array([1.5, float("nan"), 0.25], dtype="<f4").view(np.uint8)
        msg = T["sensor_msgs/msg/Image"](header=header, height=1, width=3, encoding="32FC1",
                                         is_bigendian=0, step=12, data=data)
    elif case == "tf":
        Vector3, Quaternion = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
        transform = T["geometry_msgs/msg/Transform"](
            translation=Vector3(x=1.0, y=2.0, z=3.0), rotation=Quaternion(x=0.0, y=0.0, z=0.0, w=1.0))
        msg = T["tf2_msgs/msg/TFMessage"](transforms=[
            T["geometry_msgs/msg/TransformStamped"](header=header, child_frame_id="arm", transform=transform)])
    elif case == "log":
        msg = T["rcl_interfaces/msg/Log"](stamp=time, level=40, name="node", msg="broken",
                                          file="a.py", function="f", line=7)
    else:
        raise ValueError(f"unknown case {case}")
    return {"type": msg.__msgtype__, "cdr": bytes(ts.serialize_cdr(msg, msg.__msgtype__)).hex()}


def run(ts, op):
    kind = op["op"]
    if kind == "hash":
        return {"hash": ts.hash_rihs01(op["type"])}
    if kind == "msgdef":
        return {"text": ts.generate_msgdef(op["type"], ros_version=2)[0]}
    if kind == "roundtrip":
        msg = ts.deserialize_cdr(bytes.fromhex(op["cdr"]), op["type"])
        again = bytes(ts.serialize_cdr(msg, op["type"]))
        return {"cdr": again.hex(), "value": to_json(ts, msg)}
    if kind == "make":
        return make(ts, op["case"])
    raise ValueError(f"unknown op {kind}")


def main():
    request = json.load(sys.stdin)
    ts = store(request["msg_dir"])
    answers = []
    for op in request["ops"]:
        try:
            answers.append(run(ts, op))
        except Exception as e:  # every failure is an answer the test shows
            answers.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(answers, sys.stdout, allow_nan=True)


main()

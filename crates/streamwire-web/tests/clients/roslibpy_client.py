"""The relay as roslibpy 2.1.0 (unmodified, from PyPI) sees it. tests/clients.rs drives it:
    .venv/bin/python roslibpy_client.py <host> <port> <token>
and reads one JSON report on stdout. The token goes in an `Authorization: Bearer` header,
as a program without a browser sends it.
"""

import json
import sys
import threading
import time

import roslibpy

host, port, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
WAIT = 20

ros = roslibpy.Ros(host=host, port=port, headers={"Authorization": "Bearer " + token})
ros.run(timeout=WAIT)
report = {}

report["topics"] = ros.get_topics()
report["topic_type"] = ros.get_topic_type("/odometry")
report["topics_for_type"] = ros.get_topics_for_type("sensor_msgs/msg/Image")
report["nodes"] = ros.get_nodes()
report["node_details"] = ros.get_node_details(report["nodes"][0])
report["services"] = ros.get_services()
report["service_type"] = ros.get_service_type("/rosapi/get_param")
report["message_details"] = ros.get_message_details("nav_msgs/msg/Odometry")
report["params"] = ros.get_params()
report["param"] = ros.get_param("cmd_vel_topic")
# rosapi's ROS 2 GetTime answers builtin_interfaces/Time (`sec`, `nanosec`); roslibpy's
# get_time reads ROS 1's `secs`, so it is called as a plain service.
report["time"] = dict(
    roslibpy.Service(ros, "/rosapi/get_time", "rosapi_msgs/srv/GetTime").call(
        roslibpy.ServiceRequest(), timeout=WAIT
    )
)
try:
    ros.set_param("cmd_vel_topic", "elsewhere")
    report["set_param"] = "accepted"
except Exception as error:  # roslibpy raises the service's refusal
    report["set_param"] = "refused: " + str(error)

# JSON subscription: the first odometry message, with a throttle and a queue length.
got = []
done = threading.Event()


def on_odom(message):
    got.append(message)
    done.set()


odom = roslibpy.Topic(ros, "/odometry", "nav_msgs/msg/Odometry", throttle_rate=100, queue_length=2)
odom.subscribe(on_odom)
done.wait(WAIT)
odom.unsubscribe()
report["odom"] = got[0] if got else None

# `png`: roslibpy asks for it but has no decoder of its own; the `png` frames it is sent
# are caught with a handler of its protocol and counted.
pngs = []
png_done = threading.Event()


def on_png(message):
    pngs.append(len(message["data"]))
    png_done.set()


ros.factory._proto.register_message_handlers("png", on_png)
tf = roslibpy.Topic(ros, "/tf", "tf2_msgs/msg/TFMessage", compression="png")
tf.subscribe(lambda message: None)
png_done.wait(WAIT)
tf.unsubscribe()
report["png_frames"] = len(pngs)

# A subscription of the wrong type is refused (a status; nothing arrives).
wrong = []
bad = roslibpy.Topic(ros, "/odometry", "sensor_msgs/msg/Image")
bad.subscribe(lambda message: wrong.append(message))
time.sleep(1.0)
bad.unsubscribe()
report["wrong_type_messages"] = len(wrong)

# Driving: one Twist on /cmd_vel.
cmd = roslibpy.Topic(ros, "/cmd_vel", "geometry_msgs/msg/Twist")
cmd.advertise()
cmd.publish(roslibpy.Message({"linear": {"x": 0.25, "y": 0.0, "z": 0.0}, "angular": {"x": 0.0, "y": 0.0, "z": 0.5}}))
time.sleep(0.5)
cmd.unadvertise()

ros.close()
# roslibpy answers some calls with its own dict-like types.
print(json.dumps(report, default=dict))
sys.stdout.flush()
ros.terminate()

// The relay as roslib 2.1.0 (unmodified, from the npm registry) sees it in Node, with
// Foxglove's ROS 2 libraries decoding `cbor-raw`. tests/clients.rs drives it:
//   node roslib_node.mjs <ws url with token> <topic,...>
// and reads one JSON report on stdout. Large arrays and byte strings are summed up as
// {"$len": n, "$kind": "..."} so that the report stays small; everything else is as
// roslib delivered it.
import { Ros, Topic, Service, Param } from "roslib";
import { parse } from "@foxglove/rosmsg";
import { MessageReader } from "@foxglove/rosmsg2-serialization";

const [url, topicList] = process.argv.slice(2);
const wanted = topicList.split(",").filter((t) => t);
const WAIT_MS = 20000;

function within(ms, what, promise) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms)),
  ]);
}

async function connect() {
  const ros = new Ros({});
  await within(WAIT_MS, "connect", ros.connect(url));
  return ros;
}

/// A value as JSON can carry it: long arrays and bytes summed up, BigInt as text.
function summary(value) {
  if (typeof value === "bigint") return { $bigint: value.toString() };
  if (value instanceof Uint8Array) return { $len: value.length, $kind: "bytes" };
  if (ArrayBuffer.isView(value)) return { $len: value.length, $kind: value.constructor.name };
  if (Array.isArray(value)) {
    if (value.length > 16) return { $len: value.length, $kind: "array", first: summary(value[0]) };
    return value.map(summary);
  }
  if (typeof value === "string" && value.length > 256) return { $len: value.length, $kind: "string" };
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = summary(v);
    return out;
  }
  return value;
}

/// A decoded CDR message in the form the relay's JSON has: bytes as base64, typed arrays
/// and BigInts as numbers.
function asJson(value) {
  if (typeof value === "bigint") return Number(value);
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (ArrayBuffer.isView(value)) return Array.from(value);
  if (Array.isArray(value)) return value.map(asJson);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = asJson(v);
    return out;
  }
  return value;
}

function call(ros, name, request) {
  return within(WAIT_MS, `call ${name}`, new Promise((resolve) => {
    const service = new Service({ ros, name, serviceType: "" });
    service.callService(
      request,
      (response) => resolve({ ok: true, response }),
      (error) => resolve({ ok: false, error: String(error) }),
    );
  }));
}

/// The first `count` messages of `name` in `compression`.
function messages(ros, name, compression, count, options = {}) {
  return within(WAIT_MS, `${count} of ${name} (${compression})`, new Promise((resolve) => {
    const got = [];
    const topic = new Topic({ ros, name, messageType: "", compression, ...options });
    topic.subscribe((message) => {
      got.push(message);
      if (got.length === count) {
        topic.unsubscribe();
        resolve(got);
      }
    });
  }));
}

function stampOf(message) {
  const header = message.header ?? message.transforms?.[0]?.header ?? message;
  const stamp = header.stamp;
  return stamp ? `${stamp.sec}.${stamp.nanosec}` : undefined;
}

const report = { services: {}, topics: {}, cbor_raw: {}, throttle: {} };
const ros = await connect();

// rosapi through roslib's own helpers, then the rest as plain service calls.
report.services.getTopics = await within(WAIT_MS, "getTopics", new Promise((r, e) => ros.getTopics(r, e)));
const raw = await within(WAIT_MS, "getTopicsAndRawTypes", new Promise((r, e) => ros.getTopicsAndRawTypes(r, e)));
report.services.getTopicsAndRawTypes = { topics: raw.topics, types: raw.types, typedefs: raw.typedefs_full_text.length };
report.services.getTopicType = await within(WAIT_MS, "getTopicType", new Promise((r, e) => ros.getTopicType("/odometry", r, e)));
report.services.getTopicsForType = await within(WAIT_MS, "getTopicsForType", new Promise((r, e) => ros.getTopicsForType("nav_msgs/msg/Odometry", r, e)));
report.services.getNodes = await within(WAIT_MS, "getNodes", new Promise((r, e) => ros.getNodes(r, e)));
report.services.getNodeDetails = await within(WAIT_MS, "getNodeDetails", new Promise((r, e) => ros.getNodeDetails("/odometry", r, e)));
report.services.getServices = await within(WAIT_MS, "getServices", new Promise((r, e) => ros.getServices(r, e)));
report.services.getServiceType = await within(WAIT_MS, "getServiceType", new Promise((r, e) => ros.getServiceType("/rosapi/topics", r, e)));
report.services.getActionServers = await within(WAIT_MS, "getActionServers", new Promise((r, e) => ros.getActionServers(r, e)));
report.services.getServicesForType = await within(WAIT_MS, "getServicesForType", new Promise((r, e) => ros.getServicesForType("rosapi/GetParam", r, e)));
report.services.getServiceRequestDetails = await within(WAIT_MS, "getServiceRequestDetails", new Promise((r, e) => ros.getServiceRequestDetails("rosapi/GetParam", r, e)));
report.services.getMessageDetails = await within(WAIT_MS, "getMessageDetails", new Promise((r, e) => ros.getMessageDetails("geometry_msgs/msg/Twist", r, e)));
report.services.decodeTypeDefs = ros.decodeTypeDefs(report.services.getMessageDetails);
report.services.getParams = await within(WAIT_MS, "getParams", new Promise((r, e) => ros.getParams(r, e)));
report.services.paramGet = await within(WAIT_MS, "Param.get", new Promise((r) => new Param({ ros, name: "cmd_vel_topic" }).get(r)));
report.services.paramSet = await within(WAIT_MS, "Param.set", new Promise((r) => new Param({ ros, name: "cmd_vel_topic" }).set("x", (v) => r({ ok: true, v }), (e) => r({ ok: false, error: String(e) }))));
report.services.get_time = await call(ros, "/rosapi/get_time", {});
report.services.publishers = await call(ros, "/rosapi/publishers", { topic: "/odometry" });
report.services.subscribers = await call(ros, "/rosapi/subscribers", { topic: "/cmd_vel" });
report.services.unknown = await call(ros, "/rosapi/delete_everything", {});
ros.setStatusLevel("error");

// Every topic in JSON and CBOR, one message each.
for (const name of wanted) {
  report.topics[name] = {};
  for (const compression of ["none", "cbor"]) {
    const [message] = await messages(ros, name, compression, 1);
    report.topics[name][compression] = summary(message);
    if (name === "/depth") {
      // JSON carries `uint8[]` as base64 text, CBOR as a byte string.
      report.topics[name][compression].data_length =
        typeof message.data === "string" ? Buffer.from(message.data, "base64").length : message.data.length;
    }
  }
}

// `png` (roslib decodes it with fast-png) on the smaller topics.
report.png = {};
for (const name of wanted.filter((n) => !["/color_image", "/depth", "/cloud"].includes(n))) {
  const [message] = await messages(ros, name, "png", 1);
  report.png[name] = summary(message);
}

// `cbor-raw` decoded by Foxglove's libraries over the definitions rosapi gave, against
// the JSON form of the same message (matched by stamp; two connections, since one
// connection's subscriptions to a topic share one compression).
const json = await connect();
for (const name of wanted) {
  const index = raw.topics.indexOf(name);
  const text = raw.typedefs_full_text[index];
  if (!text) continue;
  const reader = new MessageReader(parse(text, { ros2: true }));
  const [raws, jsons] = await Promise.all([
    messages(ros, name, "cbor-raw", 4),
    messages(json, name, "none", 4),
  ]);
  let compared = 0;
  let equal = 0;
  let firstDifference;
  for (const r of raws) {
    const decoded = asJson(reader.readMessage(r.bytes));
    const twin = jsons.find((j) => stampOf(j) === stampOf(decoded));
    if (!twin) continue;
    compared += 1;
    if (JSON.stringify(decoded) === JSON.stringify(twin)) {
      equal += 1;
    } else if (!firstDifference) {
      firstDifference = { decoded: summary(decoded), json: summary(twin) };
    }
  }
  report.cbor_raw[name] = { compared, equal, secs: raws[0].secs, firstDifference };
}

// Two subscriptions to /odom on one connection, different throttles and ids: while both
// are there the topic comes at the lower throttle; unsubscribing one (by its id) leaves
// the other.
{
  const fast = new Topic({ ros: json, name: "/odometry", messageType: "", throttle_rate: 0 });
  const slow = new Topic({ ros: json, name: "/odometry", messageType: "", throttle_rate: 1000 });
  const both = [];
  const slowOnly = [];
  let phase = both;
  slow.subscribe((m) => phase.push(stampOf(m)));
  fast.subscribe(() => {});
  // roslib forgets a subscription's id when it unsubscribes.
  const ids = [fast.subscribeId, slow.subscribeId];
  await within(WAIT_MS, "both", new Promise((resolve) => {
    const timer = setInterval(() => both.length >= 10 && (clearInterval(timer), resolve()), 20);
  }));
  fast.unsubscribe();
  await new Promise((resolve) => setTimeout(resolve, 300));
  phase = slowOnly;
  await within(WAIT_MS, "slow alone", new Promise((resolve) => {
    const timer = setInterval(() => slowOnly.length >= 3 && (clearInterval(timer), resolve()), 20);
  }));
  slow.unsubscribe();
  report.throttle = { both, slowOnly, ids };
}

ros.close();
json.close();
process.stdout.write(JSON.stringify(report));
process.exit(0);

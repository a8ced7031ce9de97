// `/rosout` as roslib 2.1.0 (unmodified) sees it in Node: streamwire-bin's tests/rosout.rs
// drives it:
//   node rosout_roslib.mjs <ws url with token> <text>
// subscribes to `/rosout` (rcl_interfaces/msg/Log) and writes, as one JSON line on stdout,
// the first record whose `msg` contains <text> and the count of records before it, or
// {"error": text} when none came within 30 s.
import { Ros, Topic } from "roslib";

const [url, wanted] = process.argv.slice(2);
const WAIT_MS = 30000;

const timer = setTimeout(() => {
  console.log(JSON.stringify({ error: `no record with "${wanted}" within ${WAIT_MS} ms` }));
  process.exit(0);
}, WAIT_MS);

const ros = new Ros({});
ros.on("error", (error) => {
  console.log(JSON.stringify({ error: `connection: ${error?.message ?? error}` }));
  process.exit(0);
});
await ros.connect(url);
// A long queue, as a ROS tool reading `/rosout` asks (the relay caps `queue_length` at 16,
// but holds 256 `/rosout` frames per client whatever is asked: a burst of history arrives
// whole).
const topic = new Topic({
  ros,
  name: "/rosout",
  messageType: "rcl_interfaces/msg/Log",
  queue_length: 256,
});
let before = 0;
topic.subscribe((record) => {
  if (typeof record.msg === "string" && record.msg.includes(wanted)) {
    clearTimeout(timer);
    console.log(JSON.stringify({ record, before }));
    process.exit(0);
  }
  before += 1;
});

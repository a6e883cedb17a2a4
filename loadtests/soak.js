// Soak: a steady RATE of single enqueues, each consumed and acked, for DURATION_MINUTES. The first and the last
// WINDOW_MINUTES are compared in the summary (throughput and latency within 10%); loadtests/run.py records the
// server's memory and the tables' sizes and dead tuples at the start and the end.
//   RATE=500  DURATION_MINUTES=30  WINDOW_MINUTES=5  CONSUMERS=4  COUNT=50  PAYLOAD_BYTES=256  MAX_DRIFT=0.10
import { number } from "./lib/config.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds, latencyThresholds } from "./lib/slo.js";
import { textReport } from "./lib/summary.js";
import { tagWindow } from "./lib/windows.js";
import { consume, produceOne } from "./lib/workload.js";

const RATE = number("RATE", 500);
const MINUTES = number("DURATION_MINUTES", 30);
const WINDOW = number("WINDOW_MINUTES", 5);
const CONSUMERS = number("CONSUMERS", 4);
const COUNT = number("COUNT", 50);
const BYTES = number("PAYLOAD_BYTES", 256);
const MAX_DRIFT = number("MAX_DRIFT", 0.1);
const TOPIC = "soak";
const WINDOWS = [
  ["first", 0, WINDOW * 60],
  ["last", (MINUTES - WINDOW) * 60, MINUTES * 60],
];

export const options = {
  scenarios: {
    produce: arrivalScenario("produce", RATE, `${MINUTES}m`),
    consume: { executor: "constant-vus", exec: "consumeLoop", vus: CONSUMERS, duration: `${MINUTES}m` },
    drain: drainScenario(`${MINUTES}m`, "120s"),
  },
  thresholds: {
    ...baseThresholds(),
    ...latencyThresholds({ enqueue: number("P99_ENQUEUE_MS", 20) }),
    "delivery_latency{scenario:consume}": [`p(99)<${number("P99_DELIVERY_MS", 50)}`],
    "messages_enqueued{window:first}": ["count>0"],
    "messages_enqueued{window:last}": ["count>0"],
    "delivery_latency{window:first}": ["p(99)>=0"],
    "delivery_latency{window:last}": ["p(99)>=0"],
    "http_req_duration{endpoint:enqueue,window:first}": ["p(99)>=0"],
    "http_req_duration{endpoint:enqueue,window:last}": ["p(99)>=0"],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  tagWindow(data.t0, WINDOWS);
  produceOne(data.tenant, TOPIC, BYTES);
}

export function consumeLoop(data) {
  tagWindow(data.t0, WINDOWS);
  consume(data.tenant, TOPIC, COUNT, 2);
}

export const { setup, finish, teardown } = oneTenant(TOPIC);

/** First window against last: throughput, p50 and p99 of enqueue and delivery, each within MAX_DRIFT. */
export function handleSummary(data) {
  const v = (name, stat) => data.metrics[name]?.values?.[stat];
  const compare = [
    ["enqueued msg/s", "messages_enqueued{window:%}", "count", true],
    ["p50 enqueue ms", "http_req_duration{endpoint:enqueue,window:%}", "med", false],
    ["p99 enqueue ms", "http_req_duration{endpoint:enqueue,window:%}", "p(99)", false],
    ["p50 delivery ms", "delivery_latency{window:%}", "med", false],
    ["p99 delivery ms", "delivery_latency{window:%}", "p(99)", false],
  ];
  const drift = {};
  const lines = [];
  let steady = true;
  for (const [label, pattern, stat, perSecond] of compare) {
    const scale = perSecond ? WINDOW * 60 : 1;
    const first = (v(pattern.replace("%", "first"), stat) ?? 0) / scale;
    const last = (v(pattern.replace("%", "last"), stat) ?? 0) / scale;
    // Throughput must not fall by more than MAX_DRIFT; latency must not rise by more (or by 1 ms, below noise).
    const change = first === 0 ? 0 : (last - first) / first;
    const held = perSecond ? change >= -MAX_DRIFT : change <= MAX_DRIFT || last - first <= 1;
    steady = steady && held;
    drift[label] = { first, last, change, held };
    lines.push(
      `  ${label.padEnd(18)} first ${first.toFixed(2)}  last ${last.toFixed(2)}  change ${(change * 100).toFixed(1)}% ${held ? "✓" : "✗"}`,
    );
  }
  lines.push(steady ? `steady: the last ${WINDOW} minutes within ${MAX_DRIFT * 100}% of the first` : "DECAYED");
  const dir = __ENV.SUMMARY_DIR || "loadtests/out";
  return {
    stdout: `${textReport(data, "soak")}${lines.join("\n")}\n`,
    [`${dir}/soak-summary.json`]: JSON.stringify({ steady, drift, k6: data }, null, 2),
  };
}

// Spike: a steady RATE, then FACTOR times it for SPIKE_SECONDS, then RATE again. The p99 latency from
// RECOVERY_SECONDS after the spike on must be back to the pre-spike one (within 1.5x or 5 ms); the drain proves
// nothing enqueued was lost, and every delivered message was acked.
//   RATE=200  FACTOR=10  BEFORE_SECONDS=30  SPIKE_SECONDS=20  AFTER_SECONDS=60  RECOVERY_SECONDS=30
//   CONSUMERS=6  COUNT=100
import { number } from "./lib/config.js";
import { COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds } from "./lib/slo.js";
import { textReport } from "./lib/summary.js";
import { tagWindow } from "./lib/windows.js";
import { consume, produceOne } from "./lib/workload.js";

const RATE = number("RATE", 200);
const FACTOR = number("FACTOR", 10);
const BEFORE = number("BEFORE_SECONDS", 30);
const SPIKE = number("SPIKE_SECONDS", 20);
const AFTER = number("AFTER_SECONDS", 60);
const RECOVERY = number("RECOVERY_SECONDS", 30);
const CONSUMERS = number("CONSUMERS", 6);
const COUNT = number("COUNT", 100);
const TOPIC = "spike";
const RAMP = 2;
const TOTAL = BEFORE + RAMP + SPIKE + RAMP + AFTER;
const spikeEnd = BEFORE + RAMP + SPIKE + RAMP;
const WINDOWS = [
  ["before", 5, BEFORE],
  ["spike", BEFORE, spikeEnd],
  ["recovering", spikeEnd, spikeEnd + RECOVERY],
  ["recovered", spikeEnd + RECOVERY, TOTAL],
];

export const options = {
  scenarios: {
    produce: {
      executor: "ramping-arrival-rate",
      exec: "produce",
      startRate: RATE,
      timeUnit: "1s",
      preAllocatedVUs: Math.ceil((RATE * FACTOR) / 10),
      maxVUs: Math.ceil((RATE * FACTOR) / 4),
      stages: [
        { target: RATE, duration: `${BEFORE}s` },
        { target: RATE * FACTOR, duration: `${RAMP}s` },
        { target: RATE * FACTOR, duration: `${SPIKE}s` },
        { target: RATE, duration: `${RAMP}s` },
        { target: RATE, duration: `${AFTER}s` },
      ],
    },
    consume: { executor: "constant-vus", exec: "consumeLoop", vus: CONSUMERS, duration: `${TOTAL}s` },
    drain: drainScenario(`${TOTAL}s`, "180s"),
  },
  thresholds: {
    ...baseThresholds(),
    // Deliveries acked: what consumers were given, they acknowledged (counted in the summary too).
    "delivery_latency{window:before}": ["p(99)>=0"],
    "delivery_latency{window:spike}": ["p(99)>=0"],
    "http_req_duration{endpoint:enqueue,window:spike}": ["p(99)>=0"],
    "delivery_latency{window:recovered}": ["p(99)>=0"],
    "http_req_duration{endpoint:enqueue,window:before}": ["p(99)>=0"],
    "http_req_duration{endpoint:enqueue,window:recovered}": ["p(99)>=0"],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  tagWindow(data.t0, WINDOWS);
  produceOne(data.tenant, TOPIC, 256);
}

export function consumeLoop(data) {
  tagWindow(data.t0, WINDOWS);
  consume(data.tenant, TOPIC, COUNT, 1);
}

export const { setup, finish, teardown } = oneTenant(TOPIC, { drainSeconds: 120 });

export function handleSummary(data) {
  const v = (name, stat) => data.metrics[name]?.values?.[stat];
  const lines = [];
  let recovered = true;
  for (const [label, pattern] of [
    ["p99 delivery ms", "delivery_latency{window:%}"],
    ["p99 enqueue ms", "http_req_duration{endpoint:enqueue,window:%}"],
  ]) {
    const before = v(pattern.replace("%", "before"), "p(99)") ?? 0;
    const spike = v(pattern.replace("%", "spike"), "p(99)") ?? 0;
    const after = v(pattern.replace("%", "recovered"), "p(99)") ?? 0;
    const held = after <= before * 1.5 || after - before <= 5;
    recovered = recovered && held;
    lines.push(
      `  ${label.padEnd(16)} before ${before.toFixed(1)}  spike ${spike.toFixed(1)}  ${RECOVERY}s after ${after.toFixed(1)} ${held ? "✓" : "✗"}`,
    );
  }
  const enq = v("messages_enqueued", "count");
  const del = v("messages_delivered", "count");
  const ack = v("messages_acked", "count");
  lines.push(`  enqueued ${enq}, delivered ${del}, acked ${ack}${enq === ack ? " ✓" : " ✗"}`);
  recovered = recovered && enq === ack;
  lines.push(recovered ? `recovered within ${RECOVERY}s, nothing lost` : "NOT RECOVERED (or messages unaccounted for)");
  const dir = __ENV.SUMMARY_DIR || "loadtests/out";
  return {
    stdout: `${textReport(data, "spike")}${lines.join("\n")}\n`,
    [`${dir}/spike-summary.json`]: JSON.stringify({ recovered, k6: data }, null, 2),
  };
}

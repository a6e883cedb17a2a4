// Fairness (a noisy neighbour): tenant B runs a light steady workload (B_RATE messages/s, consumed as they come)
// alone, then again while tenant A floods with batch enqueues and greedy consumers as fast as it can. B's p99
// enqueue-to-delivery latency and error rate under the flood must stay within 2x of B alone, measured in this run.
//   B_RATE=50  PHASE_SECONDS=30  A_PRODUCERS=8  A_CONSUMERS=4  A_BATCH=100  PAYLOAD_BYTES=256  MAX_RATIO=2
import exec from "k6/execution";
import { number, runId } from "./lib/config.js";
import { drain } from "./lib/drain.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario } from "./lib/lifecycle.js";
import { baseThresholds } from "./lib/slo.js";
import { textReport } from "./lib/summary.js";
import { createTenant, deleteTenant, tenantCaller, waitReady } from "./lib/tenants.js";
import { consume, produceBatch, produceOne } from "./lib/workload.js";

const B_RATE = number("B_RATE", 50);
const PHASE = number("PHASE_SECONDS", 30);
const A_PRODUCERS = number("A_PRODUCERS", 8);
const A_CONSUMERS = number("A_CONSUMERS", 4);
const A_BATCH = number("A_BATCH", 100);
const BYTES = number("PAYLOAD_BYTES", 256);
const MAX_RATIO = number("MAX_RATIO", 2);
const GAP = 5;

function light(phase, start) {
  const window = { startTime: `${start}s`, tags: { phase } };
  return {
    [`b_produce_${phase}`]: arrivalScenario("bProduce", B_RATE, `${PHASE}s`, window),
    [`b_consume_${phase}`]: {
      executor: "constant-vus",
      exec: "bConsume",
      vus: 2,
      duration: `${PHASE}s`,
      gracefulStop: "5s",
      ...window,
    },
  };
}

const contended = PHASE + GAP;
export const options = {
  scenarios: {
    ...light("alone", 0),
    ...light("contended", contended),
    a_flood: {
      executor: "constant-vus",
      exec: "aFlood",
      vus: A_PRODUCERS,
      duration: `${PHASE + GAP}s`,
      startTime: `${contended - GAP}s`,
      gracefulStop: "5s",
      tags: { phase: "flood" },
    },
    a_greedy: {
      executor: "constant-vus",
      exec: "aGreedy",
      vus: A_CONSUMERS,
      duration: `${PHASE + GAP}s`,
      startTime: `${contended - GAP}s`,
      gracefulStop: "5s",
      tags: { phase: "flood" },
    },
    drain: drainScenario(`${contended + PHASE + GAP}s`, "300s"),
  },
  thresholds: {
    ...baseThresholds(),
    "http_req_failed{tenant:B}": ["rate<0.001"],
    "delivery_latency{tenant:B,phase:alone}": ["p(99)<1000"],
    "delivery_latency{tenant:B,phase:contended}": ["p(99)<1000"],
    "http_req_duration{tenant:B,endpoint:enqueue,phase:alone}": ["p(99)<1000"],
    "http_req_duration{tenant:B,endpoint:enqueue,phase:contended}": ["p(99)<1000"],
    "http_req_failed{tenant:B,phase:alone}": ["rate<1"],
    "http_req_failed{tenant:B,phase:contended}": ["rate<1"],
    "messages_enqueued{tenant:A}": ["count>0"],
    "messages_delivered{tenant:A}": ["count>0"],
    "messages_enqueued{tenant:B}": ["count>0"],
  },
  ...COMMON_OPTIONS,
};

export function setup() {
  waitReady();
  const id = runId();
  return { a: createTenant(`${id}-a`, null, { tenant: "A" }), b: createTenant(`${id}-b`, null, { tenant: "B" }) };
}

export function bProduce(data) {
  produceOne(data.b, "steady", BYTES);
}

export function bConsume(data) {
  consume(data.b, "steady", 10, 1);
}

export function aFlood(data) {
  // 429s are back-pressure here (a queue_full or rate limit is the server protecting everyone), not failures.
  produceBatch(data.a, `flood-${exec.vu.idInTest % 4}`, A_BATCH, BYTES, { allow429: true });
}

export function aGreedy(data) {
  consume(data.a, `flood-${exec.vu.idInTest % 4}`, 1000, 0);
}

export function finish(data) {
  drain(tenantCaller(data.b), "steady");
  const a = tenantCaller(data.a);
  for (let i = 0; i < 4; i += 1) drain(a, `flood-${i}`, 60, 1000);
}

export function teardown(data) {
  deleteTenant(data.a.slug);
  deleteTenant(data.b.slug);
}

/** B's latency and errors with A flooding, against B alone: the ratios, and whether they stay within MAX_RATIO. */
export function handleSummary(data) {
  const value = (name, stat) => data.metrics[name]?.values?.[stat];
  const rows = [
    ["p99 enqueue-to-delivery", "delivery_latency{tenant:B,phase:%}", "p(99)"],
    ["p99 enqueue", "http_req_duration{tenant:B,endpoint:enqueue,phase:%}", "p(99)"],
    ["error rate", "http_req_failed{tenant:B,phase:%}", "rate"],
  ];
  const fairness = {};
  const lines = [];
  let fair = true;
  for (const [label, pattern, stat] of rows) {
    const alone = value(pattern.replace("%", "alone"), stat) ?? 0;
    const flooded = value(pattern.replace("%", "contended"), stat) ?? 0;
    // Error rates of zero compare as equal; a latency ratio is taken as it is.
    const ratio = stat === "rate" ? (flooded === 0 ? 1 : alone === 0 ? Infinity : flooded / alone) : flooded / alone;
    const held = ratio <= MAX_RATIO;
    fair = fair && held;
    fairness[label] = { alone, contended: flooded, ratio, held };
    lines.push(
      `  B ${label.padEnd(24)} alone ${alone.toFixed(3)}  with A flooding ${flooded.toFixed(3)}  ratio ${ratio.toFixed(2)} ${held ? "✓" : "✗"}`,
    );
  }
  const aRate = (value("messages_enqueued{tenant:A}", "count") ?? 0) / (PHASE + GAP);
  lines.push(`  A enqueued ${Math.round(aRate)} msg/s on average while flooding`);
  lines.push(fair ? `fair: B stays within ${MAX_RATIO}x of alone` : `NOT FAIR: B degrades beyond ${MAX_RATIO}x`);
  const dir = __ENV.SUMMARY_DIR || "loadtests/out";
  return {
    stdout: `${textReport(data, "fairness")}${lines.join("\n")}\n`,
    [`${dir}/fairness-summary.json`]: JSON.stringify({ fair, fairness, k6: data }, null, 2),
  };
}

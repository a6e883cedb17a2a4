// Fairness (a noisy neighbour): tenant B runs a light steady workload (B_RATE messages/s, consumed as they come)
// alone, then while tenant A floods with batch enqueues and greedy consumers as fast as the server lets it, then
// alone again. B's p99 enqueue-to-delivery latency and error rate under the flood must stay within MAX_RATIO of B
// alone (both alone phases together: before and after, so a drift of the box over the run counts on both sides),
// measured in this run. A and B are two k6 processes (ROLE=A, ROLE=B; `run.py fairness` starts both at once):
// in one process, A's VUs decoding thousands of payloads would hold the Go scheduler and delay the reading of B's
// responses, which k6 would then count against the server.
//   B_RATE=50  PHASE_SECONDS=60  A_PRODUCERS=8  A_CONSUMERS=4  A_BATCH=100  A_DEQUEUE_LIMIT=1000
//   A_WAIT_SECONDS=1  A_BACK_OFF=1  A_ENQUEUE_RATE=0  PAYLOAD_BYTES=256  MAX_RATIO=2
import exec from "k6/execution";
import { Counter } from "k6/metrics";
import { number, runId } from "./lib/config.js";
import { drain } from "./lib/drain.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario } from "./lib/lifecycle.js";
import { baseThresholds } from "./lib/slo.js";
import { textReport } from "./lib/summary.js";
import { createTenant, deleteTenant, tenantCaller, waitReady } from "./lib/tenants.js";
import { consume, produceBatch, produceOne } from "./lib/workload.js";

const ROLE = __ENV.ROLE || "B";
if (ROLE !== "A" && ROLE !== "B") throw new Error(`ROLE=${ROLE}: A (the flood) or B (the light tenant)`);
const B_RATE = number("B_RATE", 50);
const PHASE = number("PHASE_SECONDS", 60);
const A_PRODUCERS = number("A_PRODUCERS", 8);
const A_CONSUMERS = number("A_CONSUMERS", 4);
const A_BATCH = number("A_BATCH", 100);
const BYTES = number("PAYLOAD_BYTES", 256);
const MAX_RATIO = number("MAX_RATIO", 2);
const A_BACK_OFF = number("A_BACK_OFF", 1) === 1; // A's producers wait a 429's Retry-After (0: they spin)
const A_DEQUEUE_LIMIT = number("A_DEQUEUE_LIMIT", 1000); // messages per greedy dequeue
const A_WAIT = number("A_WAIT_SECONDS", 1); // A's greedy consumers long-poll this long (0: they spin on empty)
const A_ENQUEUE_RATE = number("A_ENQUEUE_RATE", 0); // A's enqueue_rate quota (msg/s); 0: the server's default
const GAP = 5;
// A's messages enqueued while B ran beside it (A floods alone for the GAP seconds before B comes back).
const aBesideB = new Counter("a_enqueued_beside_b");

function light(phase, start, name = phase) {
  const window = { startTime: `${start}s`, tags: { phase } };
  return {
    [`b_produce_${name}`]: arrivalScenario("bProduce", B_RATE, `${PHASE}s`, window),
    [`b_consume_${name}`]: {
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
const after = contended + PHASE + GAP;
const end = after + PHASE + GAP;
const B_SCENARIOS = {
  ...light("alone", 0),
  ...light("contended", contended),
  ...light("alone", after, "alone_after"),
  drain: drainScenario(`${end}s`, "300s"),
};
/** A's VUs running `exec` back to back through the contended phase (and GAP seconds before it). */
function flood(exec, vus) {
  return {
    executor: "constant-vus",
    exec,
    vus,
    duration: `${PHASE + GAP}s`,
    startTime: `${contended - GAP}s`,
    gracefulStop: "5s",
    tags: { phase: "flood" },
  };
}
// A_PRODUCERS=0 or A_CONSUMERS=0 leaves that half of the flood out (to see which half costs B what).
const A_SCENARIOS = {
  ...(A_PRODUCERS > 0 ? { a_flood: flood("aFlood", A_PRODUCERS) } : {}),
  ...(A_CONSUMERS > 0 ? { a_greedy: flood("aGreedy", A_CONSUMERS) } : {}),
  drain: drainScenario(`${end}s`, "300s"),
};
const B_THRESHOLDS = {
  "http_req_failed{tenant:B}": ["rate<0.001"],
  "delivery_latency{tenant:B,phase:alone}": ["p(99)<1000"],
  "delivery_latency{tenant:B,phase:contended}": ["p(99)<1000"],
  "http_req_duration{tenant:B,endpoint:enqueue,phase:alone}": ["p(99)<1000"],
  "http_req_duration{tenant:B,endpoint:enqueue,phase:contended}": ["p(99)<1000"],
  "http_req_failed{tenant:B,phase:alone}": ["rate<1"],
  "http_req_failed{tenant:B,phase:contended}": ["rate<1"],
  "messages_enqueued{tenant:B}": ["count>0"],
};
const A_THRESHOLDS = {
  ...(A_PRODUCERS > 0 ? { "messages_enqueued{tenant:A}": ["count>0"] } : {}),
  ...(A_CONSUMERS > 0 && A_PRODUCERS > 0 ? { "messages_delivered{tenant:A}": ["count>0"] } : {}),
};

export const options = {
  scenarios: ROLE === "A" ? A_SCENARIOS : B_SCENARIOS,
  thresholds: { ...baseThresholds(), ...(ROLE === "A" ? A_THRESHOLDS : B_THRESHOLDS) },
  ...COMMON_OPTIONS,
};

export function setup() {
  waitReady();
  const slug = `${runId()}-${ROLE.toLowerCase()}`;
  const quotas = ROLE === "A" && A_ENQUEUE_RATE ? { enqueue_rate: A_ENQUEUE_RATE } : null;
  return { tenant: createTenant(slug, quotas, { tenant: ROLE }) };
}

export function bProduce(data) {
  produceOne(data.tenant, "steady", BYTES);
}

export function bConsume(data) {
  consume(data.tenant, "steady", 10, 1);
}

/** A's four topics, each VU going round them: k6 numbers VUs across scenarios in no set order, so a topic fixed
 * per VU (id % 4) could leave one topic without a consumer, its messages waiting for the final drain. */
function floodTopic() {
  return `flood-${(exec.vu.idInTest + exec.vu.iterationInScenario) % 4}`;
}

export function aFlood(data) {
  // 429s are back-pressure here (a queue_full or rate limit is the server protecting everyone), not failures.
  const sent = produceBatch(data.tenant, floodTopic(), A_BATCH, BYTES, { allow429: true, backOff: A_BACK_OFF });
  if (Date.now() - exec.scenario.startTime >= GAP * 1000) aBesideB.add(sent);
}

export function aGreedy(data) {
  consume(data.tenant, floodTopic(), A_DEQUEUE_LIMIT, A_WAIT);
}

export function finish(data) {
  const who = tenantCaller(data.tenant);
  if (ROLE === "B") drain(who, "steady");
  else for (let i = 0; i < 4; i += 1) drain(who, `flood-${i}`, 60, 1000);
}

export function teardown(data) {
  deleteTenant(data.tenant.slug);
}

/** B: its latency and errors with A flooding, against B alone (the ratios, and whether they stay within
 * MAX_RATIO). A: what it reached. */
export function handleSummary(data) {
  const dir = __ENV.SUMMARY_DIR || "loadtests/out";
  const value = (name, stat) => data.metrics[name]?.values?.[stat];
  if (ROLE === "A") {
    const alone =
      ((value("messages_enqueued{tenant:A}", "count") ?? 0) - (value("a_enqueued_beside_b", "count") ?? 0)) / GAP;
    const rate = (value("a_enqueued_beside_b", "count") ?? 0) / PHASE;
    const refused = value("enqueue_back_pressure", "count") ?? 0;
    const line =
      `  A enqueued ${Math.round(rate)} msg/s while B ran (${Math.round(alone)} msg/s in the ${GAP} s alone before it;` +
      ` ${refused} messages refused with 429)`;
    return {
      stdout: `${textReport(data, "fairness, tenant A")}${line}\n`,
      [`${dir}/fairness-A-summary.json`]: JSON.stringify(
        { enqueue_rate: rate, enqueue_rate_alone: alone, k6: data },
        null,
        2,
      ),
    };
  }
  // The verdict is the issue's: B's end-to-end latency and error rate. The p99 of B's enqueue requests is shown
  // beside them, for where the time goes.
  const rows = [
    ["p99 enqueue-to-delivery", "delivery_latency{tenant:B,phase:%}", "p(99)", true],
    ["p99 enqueue", "http_req_duration{tenant:B,endpoint:enqueue,phase:%}", "p(99)", false],
    ["error rate", "http_req_failed{tenant:B,phase:%}", "rate", true],
  ];
  const fairness = {};
  const lines = [];
  let fair = true;
  for (const [label, pattern, stat, judged] of rows) {
    const alone = value(pattern.replace("%", "alone"), stat) ?? 0;
    const flooded = value(pattern.replace("%", "contended"), stat) ?? 0;
    // Error rates of zero compare as equal; a latency ratio is taken as it is.
    const ratio = stat === "rate" ? (flooded === 0 ? 1 : alone === 0 ? Infinity : flooded / alone) : flooded / alone;
    const held = ratio <= MAX_RATIO;
    if (judged) fair = fair && held;
    fairness[label] = { alone, contended: flooded, ratio, held, judged };
    const mark = judged ? (held ? "✓" : "✗") : "(shown, not judged)";
    lines.push(
      `  B ${label.padEnd(24)} alone ${alone.toFixed(3)}  with A flooding ${flooded.toFixed(3)}  ratio ${ratio.toFixed(2)} ${mark}`,
    );
  }
  lines.push(fair ? `fair: B stays within ${MAX_RATIO}x of alone` : `NOT FAIR: B degrades beyond ${MAX_RATIO}x`);
  return {
    stdout: `${textReport(data, "fairness, tenant B")}${lines.join("\n")}\n`,
    [`${dir}/fairness-B-summary.json`]: JSON.stringify({ fair, fairness, k6: data }, null, 2),
  };
}

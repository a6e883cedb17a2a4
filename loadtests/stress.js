// Stress: the arrival rate steps up (STEPS steps of STEP_DURATION, from START by STEP messages/s) with consumers
// beside; each step's SLOs are thresholds of their own, and the summary names the highest rate at which every SLO
// held. Later steps inherit what earlier ones left behind, so the answer errs low, never high.
//   MODE=single|batch  START=250  STEP=250  STEPS=8  STEP_DURATION=20s  BATCH=100  CONSUMERS=4  COUNT=100
//   P99_ENQUEUE_MS=20 (P99_BATCH_MS=100 in batch mode)  P99_DELIVERY_MS=50
import { number, text } from "./lib/config.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds } from "./lib/slo.js";
import { textReport } from "./lib/summary.js";
import { consume, produceBatch, produceOne } from "./lib/workload.js";

const MODE = text("MODE", "single");
const START = number("START", 250);
const STEP = number("STEP", 250);
const STEPS = number("STEPS", 8);
const STEP_SECONDS = number("STEP_SECONDS", 20);
const BATCH = number("BATCH", 100);
const CONSUMERS = number("CONSUMERS", 4);
const COUNT = number("COUNT", 100);
const BYTES = number("PAYLOAD_BYTES", 256);
const ENDPOINT = MODE === "batch" ? "enqueue_batch" : "enqueue";
const P99_ENQUEUE = MODE === "batch" ? number("P99_BATCH_MS", 100) : number("P99_ENQUEUE_MS", 20);
const P99_DELIVERY = number("P99_DELIVERY_MS", 50);
const TOPIC = "stress";
const rates = Array.from({ length: STEPS }, (_, i) => START + i * STEP);

const scenarios = {};
const thresholds = { ...baseThresholds() };
delete thresholds.dropped_iterations; // per step below
delete thresholds.http_req_failed;
rates.forEach((rate, i) => {
  const window = { startTime: `${i * STEP_SECONDS}s`, tags: { step: String(rate) } };
  const iterations = MODE === "batch" ? rate / BATCH : rate;
  scenarios[`produce_${rate}`] = arrivalScenario("produce", iterations, `${STEP_SECONDS}s`, {
    gracefulStop: "0s",
    ...window,
  });
  scenarios[`consume_${rate}`] = {
    executor: "constant-vus",
    exec: "consumeLoop",
    vus: CONSUMERS,
    duration: `${STEP_SECONDS}s`,
    gracefulStop: "5s",
    ...window,
  };
  thresholds[`http_req_duration{endpoint:${ENDPOINT},step:${rate}}`] = [`p(99)<${P99_ENQUEUE}`];
  thresholds[`delivery_latency{step:${rate}}`] = [`p(99)<${P99_DELIVERY}`];
  thresholds[`http_req_failed{step:${rate}}`] = ["rate<0.001"];
  thresholds[`dropped_iterations{step:${rate}}`] = ["count==0"];
});
scenarios.drain = drainScenario(`${STEPS * STEP_SECONDS + 5}s`, "200s");

export const options = {
  scenarios,
  thresholds,
  ...COMMON_OPTIONS,
};

export function produce(data) {
  if (MODE === "batch") produceBatch(data.tenant, TOPIC, BATCH, BYTES);
  else produceOne(data.tenant, TOPIC, BYTES);
}

export function consumeLoop(data) {
  consume(data.tenant, TOPIC, COUNT, 1);
}

export const { setup, finish, teardown } = oneTenant(TOPIC, { drainSeconds: 170, drainCount: 1000 });

/** The highest step whose every threshold held (and every step below it). */
export function handleSummary(data) {
  let highest = null;
  let broken = false;
  const lines = [];
  for (const rate of rates) {
    const own = Object.entries(data.metrics).filter(([name]) => name.includes(`step:${rate}}`));
    const held = own.length > 0 && own.every(([, m]) => Object.values(m.thresholds || {}).every((t) => t.ok));
    const p99 = (name) => data.metrics[name]?.values?.["p(99)"];
    const e = p99(`http_req_duration{endpoint:${ENDPOINT},step:${rate}}`);
    const d = p99(`delivery_latency{step:${rate}}`);
    lines.push(
      `  ${String(rate).padStart(6)} msg/s: p99 ${ENDPOINT} ${e?.toFixed(1)} ms, p99 delivery ${d?.toFixed(1)} ms ${held ? "✓" : "✗"}`,
    );
    broken = broken || !held;
    if (!broken) highest = rate;
  }
  const verdict = highest === null ? "no step held every SLO" : `highest rate holding every SLO: ${highest} msg/s`;
  const dir = __ENV.SUMMARY_DIR || "loadtests/out";
  const report = `${textReport(data, `stress-${MODE}`)}${lines.join("\n")}\n${verdict}\n`;
  return {
    stdout: report,
    [`${dir}/stress-${MODE}-summary.json`]: JSON.stringify({ highest, rates, k6: data }, null, 2),
  };
}

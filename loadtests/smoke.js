// Smoke: seconds of every path at a low rate (single and batch enqueues, long-polling consumers, single and batch
// acks), with the SLOs as thresholds. CI runs it against a real server; `make loadtest` against `make run`.
//   RATE=20 (single enqueues/s)  DURATION=10s
import { number, text } from "./lib/config.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds, latencyThresholds } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
import { consume, produceBatch, produceOne } from "./lib/workload.js";

const RATE = number("RATE", 20);
const DURATION = text("DURATION", "10s");
const TOPIC = "smoke";

export const options = {
  scenarios: {
    produce: arrivalScenario("produce", RATE, DURATION),
    produce_batch: arrivalScenario("produceTen", 2, DURATION),
    consume: { executor: "constant-vus", exec: "consumeSome", vus: 2, duration: DURATION },
    drain: drainScenario(DURATION, "60s"),
  },
  thresholds: {
    ...baseThresholds(),
    ...latencyThresholds({ enqueue: 100, enqueue_batch: 250, dequeue_wait: 1500, ack: 100, ack_batch: 250 }),
    delivery_latency: ["p(99)<2000"],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  produceOne(data.tenant, TOPIC, 256);
}

export function produceTen(data) {
  produceBatch(data.tenant, TOPIC, 10, 256);
}

export function consumeSome(data) {
  consume(data.tenant, TOPIC, 10, 1);
}

export const { setup, finish, teardown } = oneTenant(TOPIC);

export const handleSummary = summaryHandler("smoke");

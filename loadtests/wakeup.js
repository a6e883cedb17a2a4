// Long-poll wake-up: one consumer long-polls a topic while messages arrive one at a time (RATE/s), so each is
// delivered by waking a waiting dequeue; `delivery_latency` is then the wake-up latency. Meanwhile WAITERS other
// consumers each long-poll a topic of their own that never gets a message: the wake-up latency must not grow with
// the number of topics being waited on (nor, run with PREFILL, with the messages and topics waiting elsewhere).
//   RATE=10  DURATION=30s  WAITERS=0 (idle long polls, one topic each)  WAIT_SECONDS=20  P99_WAKEUP_MS=50
import { sleep } from "k6";
import exec from "k6/execution";
import { dequeue } from "./lib/api.js";
import { number, text } from "./lib/config.js";
import { arrivalScenario, COMMON_OPTIONS, drainScenario, oneTenant } from "./lib/lifecycle.js";
import { baseThresholds } from "./lib/slo.js";
import { summaryHandler } from "./lib/summary.js";
import { tenantCaller } from "./lib/tenants.js";
import { consume, produceOne } from "./lib/workload.js";

const RATE = number("RATE", 10);
const DURATION = text("DURATION", "30s");
const WAITERS = number("WAITERS", 0);
const WAIT = number("WAIT_SECONDS", 20); // how long each long poll waits
const TOPIC = "wakeup";

const scenarios = {
  produce: arrivalScenario("produce", RATE, DURATION, { startTime: "2s" }),
  consume: { executor: "constant-vus", exec: "consumeOne", vus: 1, duration: `${2 + parseInt(DURATION, 10)}s` },
  drain: drainScenario(`${4 + parseInt(DURATION, 10)}s`, "60s"),
};
if (WAITERS > 0) {
  scenarios.idle = {
    executor: "constant-vus",
    exec: "waitIdle",
    vus: WAITERS,
    duration: `${2 + parseInt(DURATION, 10)}s`,
    gracefulStop: `${WAIT + 5}s`,
  };
}

export const options = {
  scenarios,
  thresholds: {
    ...baseThresholds(),
    "delivery_latency{scenario:consume}": [`p(99)<${number("P99_WAKEUP_MS", 50)}`],
  },
  ...COMMON_OPTIONS,
};

export function produce(data) {
  produceOne(data.tenant, TOPIC, 256);
}

export function consumeOne(data) {
  consume(data.tenant, TOPIC, 1, WAIT);
}

export function waitIdle(data) {
  // A fleet's polls are spread over the wait, not renewed in one instant: each waiter starts at a random moment.
  if (exec.vu.iterationInScenario === 0) sleep(Math.random() * WAIT);
  dequeue(tenantCaller(data.tenant), `idle-${exec.vu.idInTest}`, 1, WAIT);
}

export const { setup, finish, teardown } = oneTenant(TOPIC);

export const handleSummary = summaryHandler("wakeup");

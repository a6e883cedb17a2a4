// What a one-tenant script does before and after its scenarios: setup() waits for the server and makes the tenant
// (returning `t0`, when the scenarios start, for window tags), finish() drains the topic and records nothing_lost,
// teardown() deletes the tenant. A script exports them: `export const { setup, finish, teardown } = oneTenant(...)`.
import { runId } from "./config.js";
import { drain } from "./drain.js";
import { TREND_STATS } from "./slo.js";
import { createTenant, deleteTenant, tenantCaller, waitReady } from "./tenants.js";

/** Options every script shares: the trend statistics reported (p99 included) and setup/teardown time limits. */
export const COMMON_OPTIONS = { summaryTrendStats: TREND_STATS, setupTimeout: "120s", teardownTimeout: "120s" };

/** `exec` started `rate` times a second for `duration`, with VUs enough that k6 need not start more mid-run (which
 * drops iterations): one per 5 iterations/s ready (a 200 ms hiccup), up to one per 2. `extra`: startTime, tags,
 * gracefulStop. */
export function arrivalScenario(exec, rate, duration, extra = {}) {
  return {
    executor: "constant-arrival-rate",
    exec,
    rate,
    timeUnit: "1s",
    duration,
    preAllocatedVUs: Math.max(10, Math.ceil(rate / 5)),
    maxVUs: Math.max(20, Math.ceil(rate / 2)),
    ...extra,
  };
}

/** The drain scenario: one iteration of `finish` once the others are over (at `start`). */
export function drainScenario(start, maxDuration = "120s") {
  return { executor: "per-vu-iterations", exec: "finish", vus: 1, iterations: 1, startTime: start, maxDuration };
}

export function oneTenant(topic, { drainSeconds = 60, drainCount = 100 } = {}) {
  return {
    setup() {
      waitReady();
      const tenant = createTenant(runId());
      return { tenant, t0: Date.now() };
    },
    finish(data) {
      drain(tenantCaller(data.tenant), topic, drainSeconds, drainCount);
    },
    teardown(data) {
      deleteTenant(data.tenant.slug);
    },
  };
}

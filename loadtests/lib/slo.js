// The service-level objectives, as k6 thresholds. Every script starts from these and adds its own.
export const TREND_STATS = ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"];

/** Failures, checks, payload round trips, nothing lost, and an arrival rate that was really reached. */
export function baseThresholds() {
  return {
    http_req_failed: ["rate<0.001"],
    checks: ["rate>0.999"],
    payload_round_trip: ["rate==1"],
    nothing_lost: ["rate==1"],
    // Every message enqueued acked (by every group), by count: the topic being empty at the end is not enough.
    messages_unacked: ["count==0"],
    // A script that throws in its iterations sends nothing and would otherwise pass every other threshold.
    messages_enqueued: ["count>0"],
    messages_delivered: ["count>0"],
    // An arrival-rate scenario that could not start its iterations did not test the rate it claims.
    dropped_iterations: ["count==0"],
  };
}

/** p99 bounds per endpoint (ms), e.g. {enqueue: 20, enqueue_batch: 100}. */
export function latencyThresholds(bounds) {
  const out = {};
  for (const [endpoint, ms] of Object.entries(bounds)) out[`http_req_duration{endpoint:${endpoint}}`] = [`p(99)<${ms}`];
  return out;
}

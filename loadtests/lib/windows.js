// Tags by time window, for comparisons within one run (the soak's first and last minutes, the spike's phases):
// every metric a VU emits after tagWindow() carries the window it was emitted in. setup() returns `t0: Date.now()`
// as its last step, which is when the scenarios start.
import exec from "k6/execution";

/** Sets the VU's `window` tag to the first of `windows` ([name, fromSecond, toSecond]) holding now - t0. */
export function tagWindow(t0, windows) {
  const second = (Date.now() - t0) / 1000;
  const found = windows.find(([, from, to]) => second >= from && second < to);
  exec.vu.metrics.tags.window = found ? found[0] : "other";
}

// handleSummary for every script: k6's own data as JSON (RESULTS.md quotes it) and a short text report, since the
// remote jslib textSummary cannot be fetched. SUMMARY_DIR chooses where the JSON goes (default loadtests/out).
const TIME_STATS = ["med", "p(95)", "p(99)", "max"];

function fmt(value, isTime) {
  if (value === undefined || value === null) return "-";
  return isTime ? `${value.toFixed(value < 10 ? 2 : 1)}ms` : `${Math.round(value * 100) / 100}`;
}

/** One line per metric worth reading, each threshold with ✓ or ✗. */
export function textReport(data, title) {
  const lines = [`${title}: ${(data.state.testRunDurationMs / 1000).toFixed(1)} s`];
  const names = Object.keys(data.metrics).sort();
  for (const name of names) {
    const metric = data.metrics[name];
    const v = metric.values;
    let line;
    if (metric.type === "trend") {
      line = TIME_STATS.map((s) => `${s}=${fmt(v[s], metric.contains === "time")}`).join(" ");
    } else if (metric.type === "counter") {
      line = `${v.count} (${fmt(v.rate)}/s)`;
    } else if (metric.type === "rate") {
      line = `${(v.rate * 100).toFixed(3)}% (${v.passes} of ${v.passes + v.fails})`;
    } else {
      line = `${fmt(v.value)} (min ${fmt(v.min)}, max ${fmt(v.max)})`;
    }
    const thresholds = Object.entries(metric.thresholds || {}).map(([t, r]) => `${r.ok ? "✓" : "✗"} ${t}`);
    if (
      name.startsWith("http_req_") &&
      !name.includes("{") &&
      name !== "http_req_duration" &&
      name !== "http_req_failed"
    ) {
      continue;
    }
    lines.push(`  ${name.padEnd(52)} ${line}${thresholds.length ? `   ${thresholds.join("  ")}` : ""}`);
  }
  const failed = names.flatMap((n) =>
    Object.entries(data.metrics[n].thresholds || {})
      .filter(([, r]) => !r.ok)
      .map(([t]) => `${n} ${t}`),
  );
  lines.push(failed.length ? `SLOs BROKEN: ${failed.join("; ")}` : "every SLO held");
  return `${lines.join("\n")}\n`;
}

/** The `handleSummary` of a script called `name`. */
export function summaryHandler(name) {
  return (data) => {
    const dir = __ENV.SUMMARY_DIR || "loadtests/out";
    return { stdout: textReport(data, name), [`${dir}/${name}-summary.json`]: JSON.stringify(data, null, 2) };
  };
}

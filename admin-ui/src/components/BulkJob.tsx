// A server-side bulk job's progress, polled until it ends; and the topic's recent jobs.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { bulkJobQuery, bulkJobsQuery, cancelBulkJob } from "../api/topics";
import { formatTime } from "../lib/format";
import { ErrorNote, TableWrap } from "./ui";

/** What each reason a bulk job skips a message means, in the operator's words. */
const SKIP_REASONS: Record<string, string> = {
  key_conflict: "a pending message of the topic holds its key",
  invalid_request: "not in a state this action takes",
  forbidden: "another consumer group's",
  message_not_found: "gone meanwhile",
  queue_full: "its topic is at max_depth",
  quota_exceeded: "the tenant is at a quota",
};

/** "15 × key_conflict (a pending message of the topic holds its key)", most first. */
export function describeSkips(skippedBy: Record<string, number> | undefined): string {
  return Object.entries(skippedBy ?? {})
    .sort((a, b) => b[1] - a[1])
    .map(
      ([code, n]) =>
        `${n.toLocaleString("en-US")} × ${code}${SKIP_REASONS[code] ? ` (${SKIP_REASONS[code]})` : ""}`,
    )
    .join("; ");
}

export function BulkJobProgress({ id, onFinished }: { id: string; onFinished: () => void }) {
  const job = useQuery({
    ...bulkJobQuery(id),
    refetchInterval: (q) => (q.state.data?.state === "running" ? 500 : false),
  });
  const cancel = useMutation({
    mutationFn: () => cancelBulkJob(id),
  });
  const state = job.data?.state;
  // The end is told once per state: a caller that refreshes its queries in `onFinished` renders again with a new
  // callback, and an effect on the callback refreshed again, about 100 requests a second for as long as the page
  // stayed open.
  const finished = useRef(onFinished);
  useEffect(() => {
    finished.current = onFinished;
  });
  useEffect(() => {
    if (state && state !== "running") finished.current();
  }, [state]);
  if (job.error) return <ErrorNote error={job.error} />;
  const j = job.data;
  if (!j) return null;
  return (
    <div className="card" role="status" aria-live="polite">
      <strong>
        {j.action} {j.state === "running" ? "in progress" : j.state}
      </strong>
      {j.rate_per_second ? ` at ${j.rate_per_second.toLocaleString("en-US")} a second` : null} —{" "}
      {j.done.toLocaleString("en-US")} done, {j.skipped.toLocaleString("en-US")} skipped of{" "}
      {j.matched.toLocaleString("en-US")} matched so far
      {j.skipped > 0 && describeSkips(j.skipped_by) && <span>: {describeSkips(j.skipped_by)}</span>}
      {j.error && <span className="bad"> ({j.error})</span>}
      {j.state === "running" && (
        <button type="button" onClick={() => cancel.mutate()}>
          Stop
        </button>
      )}
      <progress max={Math.max(1, j.matched)} value={j.done + j.skipped} aria-label="Bulk job progress" />
    </div>
  );
}

/** The topic's recent bulk jobs (`GET /api/bulk-jobs`): they run on the server whether or not this page is open,
 * so their outcome is shown again after navigating away and back. */
export function BulkJobHistory({ topic, live }: { topic: string; live: number | false }) {
  const jobs = useQuery({
    ...bulkJobsQuery(),
    refetchInterval: (q) => (q.state.data?.items.some((j) => j.state === "running") ? 1000 : live),
  });
  const mine = (jobs.data?.items ?? []).filter((j) => j.topic === topic).slice(0, 5);
  if (mine.length === 0) return null;
  return (
    <details className="card">
      <summary>
        Recent bulk jobs on {topic} ({mine.length})
      </summary>
      {/* What an operator reads first comes first: at 390 px the table scrolls, and Started and By go last. */}
      <TableWrap label={`Recent bulk jobs on ${topic}`}>
        <table className="jobs">
          <caption className="sr-only">Recent bulk jobs on {topic}</caption>
          <thead>
            <tr>
              <th scope="col">Action</th>
              <th scope="col">State</th>
              <th scope="col">Done / skipped / matched</th>
              <th scope="col">Started</th>
              <th scope="col">By</th>
            </tr>
          </thead>
          <tbody>
            {mine.map((j) => (
              <tr key={j.id}>
                <td>
                  {j.action}
                  {j.rate_per_second ? (
                    <div className="hint">at {j.rate_per_second.toLocaleString("en-US")}/s</div>
                  ) : null}
                </td>
                <td>
                  {j.state}
                  {j.error && <span className="bad"> ({j.error})</span>}
                </td>
                <td className="num">
                  {j.done.toLocaleString("en-US")} / {j.skipped.toLocaleString("en-US")} /{" "}
                  {j.matched.toLocaleString("en-US")}
                  {j.skipped > 0 && describeSkips(j.skipped_by) && (
                    <div className="hint">{describeSkips(j.skipped_by)}</div>
                  )}
                </td>
                <td>{formatTime(j.created_at)}</td>
                <td className="mono">{j.created_by}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </details>
  );
}

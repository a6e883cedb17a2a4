// A server-side bulk job's progress, polled until it ends.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect } from "react";
import { api, unwrap } from "../api/client";
import { keys } from "../api/keys";
import { ErrorNote } from "./ui";

export function BulkJobProgress({ id, onFinished }: { id: string; onFinished: () => void }) {
  const job = useQuery({
    queryKey: keys.bulkJobs.one(id),
    queryFn: () => unwrap(api.GET("/api/bulk-jobs/{job_id}", { params: { path: { job_id: id } } })),
    refetchInterval: (q) => (q.state.data?.state === "running" ? 500 : false),
  });
  const cancel = useMutation({
    mutationFn: () => unwrap(api.DELETE("/api/bulk-jobs/{job_id}", { params: { path: { job_id: id } } })),
  });
  const state = job.data?.state;
  useEffect(() => {
    if (state && state !== "running") onFinished();
  }, [state, onFinished]);
  if (job.error) return <ErrorNote error={job.error} />;
  const j = job.data;
  if (!j) return null;
  return (
    <div className="card" role="status" aria-live="polite">
      <strong>
        {j.action} {j.state === "running" ? "in progress" : j.state}
      </strong>{" "}
      — {j.done.toLocaleString("en-US")} done, {j.skipped.toLocaleString("en-US")} skipped of{" "}
      {j.matched.toLocaleString("en-US")} matched so far
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

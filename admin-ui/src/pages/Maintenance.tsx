// Maintenance (platform admins): the jobs' last runs, the reapers run now (expiry, delete, and the message log's
// archive reaper), and the delete reaper's schedule with its next runs.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useLiveInterval } from "../api/hooks";
import { keys } from "../api/keys";
import {
  jobsQuery,
  runArchiveReaper,
  runDeleteReaper,
  runExpiryReaper,
  schedulePreviewQuery,
  setDeleteSchedule,
} from "../api/maintenance";
import { ErrorNote, Field, TableWrap } from "../components/ui";
import { fieldErrors } from "../lib/fieldErrors";
import { countOf, formatTime } from "../lib/format";
import { describeJob } from "../lib/jobs";

export function MaintenancePage() {
  const queryClient = useQueryClient();
  const jobs = useQuery({
    ...jobsQuery(),
    refetchInterval: useLiveInterval(),
  });
  const [draft, setDraft] = useState<string | null>(null);
  const [ran, setRan] = useState<string | null>(null);
  const schedule = draft ?? jobs.data?.delete_reaper.schedule ?? "";
  const preview = useQuery({
    ...schedulePreviewQuery(schedule),
    enabled: draft !== null,
  });
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.maintenance.all() });
  const run = useMutation({
    mutationFn: async (job: "expiry" | "delete" | "archive") => {
      if (job === "expiry") {
        const r = await runExpiryReaper();
        return `The expiry reaper expired ${countOf(r.expired, "message")}.`;
      }
      if (job === "archive") {
        const r = await runArchiveReaper();
        const n = r.deleted.toLocaleString("en-US");
        return r.deleted === 1
          ? "The archive reaper ran: 1 log entry dropped with its partition."
          : `The archive reaper ran: ${n} log entries dropped with their partitions.`;
      }
      const r = await runDeleteReaper();
      return `The delete reaper deleted ${countOf(r.deleted, "message")}.`;
    },
    onSuccess: (text) => {
      setRan(text);
      invalidate();
    },
  });
  const save = useMutation({
    mutationFn: () => setDeleteSchedule(schedule),
    onSuccess: () => {
      setDraft(null);
      invalidate();
    },
  });
  const nextRuns = draft !== null ? preview.data?.next_runs : jobs.data?.delete_reaper.next_runs;
  const scheduleError = fieldErrors(preview.error ?? save.error).schedule ?? null;
  return (
    <section>
      <h1>Maintenance</h1>
      <ErrorNote error={jobs.error ?? run.error} />
      {ran && (
        <p role="status" className="notice">
          {ran}
        </p>
      )}
      <div className="row">
        <button type="button" onClick={() => run.mutate("expiry")} disabled={run.isPending}>
          Run the expiry reaper now
        </button>
        <button type="button" onClick={() => run.mutate("delete")} disabled={run.isPending}>
          Run the delete reaper now
        </button>
        <button type="button" onClick={() => run.mutate("archive")} disabled={run.isPending}>
          Run the archive reaper now
        </button>
      </div>
      {jobs.data && (
        <TableWrap label="Last runs">
          <table>
            <caption>Last runs (whichever instance ran them)</caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Finished</th>
                <th scope="col">Duration</th>
                <th scope="col">Rows</th>
                <th scope="col">What a run does</th>
              </tr>
            </thead>
            <tbody>
              {jobs.data.jobs.map((j) => {
                const job = describeJob(j.job);
                return (
                  <tr key={j.job}>
                    <th scope="row">
                      {job.name}
                      {/* the id, as the workers' logs, metrics and docs/operations.md name the job */}
                      {job.name !== job.id && <div className="hint mono">{job.id}</div>}
                    </th>
                    <td>{formatTime(j.finished_at)}</td>
                    <td className="num">{(j.duration_seconds * 1000).toFixed(1)} ms</td>
                    <td className="num">{j.rows}</td>
                    <td className="hint job-does">{job.does ?? "–"}</td>
                  </tr>
                );
              })}
              {jobs.data.jobs.length === 0 && (
                <tr>
                  <td colSpan={5} className="muted">
                    No job has run yet: the workers run them on their schedule (or press a button above).
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </TableWrap>
      )}
      <form
        className="card"
        aria-label="Delete reaper schedule"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <h2>Delete reaper schedule</h2>
        <Field
          label="Cron schedule (UTC)"
          hint={
            <>
              Five fields: minute hour day-of-month month day-of-week, e.g. <code>0 3 * * *</code> for 03:00
              every day; empty = off.
            </>
          }
          error={scheduleError}
        >
          {(id, d) => (
            <input
              id={id}
              value={schedule}
              onChange={(e) => setDraft(e.target.value)}
              aria-describedby={d}
              aria-invalid={scheduleError ? true : undefined}
              className="mono"
            />
          )}
        </Field>
        <p className="muted">
          {schedule.trim() === ""
            ? "Off: expired and old failed messages are deleted only when run by hand."
            : "Next runs:"}
        </p>
        <ul aria-label="Next runs">
          {(nextRuns ?? []).map((t) => (
            <li key={t}>
              <time dateTime={t}>{formatTime(t)}</time>
            </li>
          ))}
        </ul>
        {!scheduleError && <ErrorNote error={save.error} />}
        {save.isSuccess && draft === null && (
          <p role="status" className="notice">
            Saved; every worker follows it within seconds.
          </p>
        )}
        <button
          type="submit"
          className="primary"
          disabled={save.isPending || draft === null || Boolean(scheduleError)}
        >
          Save schedule
        </button>
      </form>
    </section>
  );
}

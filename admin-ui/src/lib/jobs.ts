// The scheduled jobs as the Maintenance page names them. The API reports each run under the job's id, the name the
// workers' logs, the metrics' `job` label and docs/operations.md use: the page shows it beside a name and a line
// on what the job does (what its rows count), since ids like `archive_reaper` do not say it.

/** A job's name for people and what one run does, in a few words. */
export type JobInfo = { id: string; name: string; does: string | null };

const JOBS: Record<string, Omit<JobInfo, "id">> = {
  expiry_reaper: {
    name: "Expiry reaper",
    does: "Expires messages past their TTL (or moves them to their DLQ); rows: messages expired",
  },
  delete_reaper: {
    name: "Delete reaper",
    does: "Deletes expired messages, and failed ones past their retention; rows: messages deleted",
  },
  archive_reaper: {
    name: "Archive reaper",
    does:
      "Makes the message log's next partitions, and drops those past every topic's replay window or trim; " +
      "rows: log entries dropped with their partitions",
  },
  audit_trimmer: {
    name: "Audit trimmer",
    does: "Deletes audit entries past their retention; rows: entries deleted",
  },
  orphan_sweeper: {
    name: "Orphan sweeper",
    does: "Deletes what enqueues racing a forced tenant delete left behind; rows: messages deleted",
  },
  group_settler: {
    name: "Consumer group settler",
    does: "Owes new consumer groups the messages stored without them; rows: messages settled",
  },
  inflight_keeper: {
    name: "In-flight keeper",
    does:
      "Recounts the leases of topics with a max_inflight (and of their consumer groups), freeing those past " +
      "their deadline or no longer held; rows: leases freed",
  },
  gauges: {
    name: "Gauges",
    does: "Recounts messages by topic and status for the counts and charts; rows: counts stored",
  },
};

/** A job by its id; one the console does not know yet (a newer server's) keeps its id as its name. */
export function describeJob(id: string): JobInfo {
  const known = Object.hasOwn(JOBS, id) ? JOBS[id] : undefined;
  return known ? { id, ...known } : { id, name: id, does: null };
}

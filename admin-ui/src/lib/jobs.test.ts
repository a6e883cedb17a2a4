import { describe, expect, it } from "vitest";
import { describeJob } from "./jobs";

describe("describeJob", () => {
  it("names each job the workers run, with what its rows count", () => {
    for (const id of [
      "expiry_reaper",
      "delete_reaper",
      "archive_reaper",
      "audit_trimmer",
      "orphan_sweeper",
      "group_settler",
      "gauges",
    ]) {
      const job = describeJob(id);
      expect(job.id).toBe(id);
      expect(job.name).not.toBe(id);
      expect(job.does).toMatch(/; rows: /);
    }
    expect(describeJob("archive_reaper")).toEqual({
      id: "archive_reaper",
      name: "Archive reaper",
      does: expect.stringMatching(/drops those past every topic's replay window or trim/),
    });
  });

  it("keeps the id of a job it does not know, and nothing of Object's own", () => {
    expect(describeJob("compactor")).toEqual({ id: "compactor", name: "compactor", does: null });
    expect(describeJob("toString")).toEqual({ id: "toString", name: "toString", does: null });
  });
});

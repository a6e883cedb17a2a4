// A bulk job's progress tells its caller of the end once: the topic page refreshes its queries then, renders
// again and passes a new callback, which must not refresh again (it did, about 100 requests a second).
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen } from "@testing-library/react";
import { useState } from "react";
import { describe, expect, it, vi } from "vitest";
import { BulkJobProgress, describeSkips } from "./BulkJob";

vi.mock("../api/topics", () => ({
  bulkJobQuery: (id: string) => ({
    queryKey: ["bulk-jobs", id],
    queryFn: async () => ({
      id,
      topic: "payments",
      action: "retry",
      state: "done",
      done: 3,
      skipped: 0,
      matched: 3,
      error: null,
    }),
  }),
  bulkJobsQuery: vi.fn(),
  cancelBulkJob: vi.fn(),
}));

function Page({ onRefresh }: { onRefresh: () => void }) {
  const [renders, setRenders] = useState(0);
  // a new callback every render, that renders the page again: as the topic page's refresh does
  const refresh = () => {
    onRefresh();
    setRenders((n) => n + 1);
  };
  return (
    <>
      <span>renders {renders}</span>
      <BulkJobProgress id="job-1" onFinished={refresh} />
    </>
  );
}

describe("BulkJobProgress", () => {
  it("tells the caller a finished job ended once, however often the caller renders", async () => {
    const refreshed = vi.fn();
    render(
      <QueryClientProvider client={new QueryClient()}>
        <Page onRefresh={refreshed} />
      </QueryClientProvider>,
    );
    await screen.findByText(/retry done/);
    await screen.findByText("renders 1");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(refreshed).toHaveBeenCalledTimes(1);
  });
});

describe("describeSkips", () => {
  it("says why messages were skipped, the most common reason first", () => {
    expect(describeSkips({ invalid_request: 2, key_conflict: 15 })).toBe(
      "15 × key_conflict (a pending message of the topic holds its key); 2 × invalid_request (not in a state this action takes)",
    );
    expect(describeSkips({ something_new: 1 })).toBe("1 × something_new");
    expect(describeSkips(undefined)).toBe("");
  });
});

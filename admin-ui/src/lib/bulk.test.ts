import { describe, expect, it } from "vitest";
import { describeBulk, describeFilter, jobFilter } from "./bulk";

describe("bulk actions", () => {
  it("sends the metadata filter as an object, as the API takes it", () => {
    expect(jobFilter({ status: "failed", metadata: '{"region": "eu"}' })).toEqual({
      status: "failed",
      metadata: { region: "eu" },
    });
    expect(jobFilter({})).toEqual({});
    expect(jobFilter({ consumer_group: "billing" })).toEqual({ consumer_group: "billing" });
    expect(() => jobFilter({ metadata: "{nope" })).toThrow(/not JSON/);
  });

  it("says what a selection's action did and why messages were skipped", () => {
    const said = describeBulk("retry", [
      {
        action: "retry",
        done: 1,
        skipped: 2,
        failures: [
          { id: "a", code: "invalid_request", error: "message is pending" },
          { id: "b", code: "invalid_request", error: "message is pending" },
        ],
      },
      { action: "retry", done: 3, skipped: 0, failures: [] },
    ]);
    expect(said).toBe("Retry: 4 done, 2 skipped — 2 × invalid_request (message is pending).");
  });

  it("names the filter in a confirmation", () => {
    expect(describeFilter({ status: "failed", key: "k", metadata: '{"a":1}' })).toBe(
      'status failed, key “k”, metadata containing {"a":1}',
    );
    expect(describeFilter({ consumer_group: "billing" })).toBe("consumer group “billing”");
  });
});

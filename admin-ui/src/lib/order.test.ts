import { describe, expect, it } from "vitest";
import { listEnds } from "./order";

describe("listEnds", () => {
  it("names a backlog's far end its newest and dead letters' its oldest", () => {
    expect(listEnds("pending").end).toBe("Newest");
    expect(listEnds("failed")).toMatchObject({ start: "Newest", end: "Oldest" });
  });
  it("says the whole list's order each way", () => {
    expect(listEnds(undefined).forward).toMatch(/^Live messages in delivery order/);
    expect(listEnds(undefined).backward).toMatch(/^Finished messages oldest first/);
  });
});

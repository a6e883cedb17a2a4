import { describe, expect, it } from "vitest";
import { can, patternCovers } from "./grants";

describe("patternCovers", () => {
  it("follows the contract's patterns", () => {
    expect(patternCovers("*", "x")).toBe(true);
    expect(patternCovers("orders.*", "orders")).toBe(true);
    expect(patternCovers("orders.*", "orders.eu")).toBe(true);
    expect(patternCovers("orders.*", "ordersx")).toBe(false);
    expect(patternCovers("orders", "orders.dlq")).toBe(true);
    expect(patternCovers("orders", "orders.eu")).toBe(false);
  });
  it("lets admins do anything and members what they were granted", () => {
    const member = {
      username: "m",
      role: "member" as const,
      tenant: "t",
      grants: [{ action: "read" as const, topic_pattern: "a" }],
    };
    expect(can(member, "read", "a")).toBe(true);
    expect(can(member, "consume", "a")).toBe(false);
    expect(can({ ...member, role: "tenant_admin" }, "consume", "b")).toBe(true);
  });
});

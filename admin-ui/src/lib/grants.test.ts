import { describe, expect, it } from "vitest";
import { can, canConsumeAs, consumeGroups, patternCovers } from "./grants";

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

  it("lets a consume grant pinned to a group consume only as that group, unless another grant pins none", () => {
    const billing = {
      username: "b",
      role: "member" as const,
      tenant: "t",
      grants: [{ action: "consume" as const, topic_pattern: "orders", consumer_group: "billing" }],
    };
    expect(can(billing, "consume", "orders.dlq")).toBe(true);
    expect(consumeGroups(billing, "orders.dlq")).toEqual(["billing"]);
    expect(canConsumeAs(billing, "orders.dlq", "billing")).toBe(true);
    expect(canConsumeAs(billing, "orders.dlq", "shipping")).toBe(false);
    expect(canConsumeAs(billing, "orders.dlq", null)).toBe(false); // a plain dead letter, or no filter
    expect(canConsumeAs(billing, "payments", "billing")).toBe(false); // no grant there at all
    const both = {
      ...billing,
      grants: [...billing.grants, { action: "consume" as const, topic_pattern: "orders.*" }],
    };
    expect(consumeGroups(both, "orders")).toBeNull();
    expect(canConsumeAs(both, "orders.dlq", "shipping")).toBe(true);
    expect(canConsumeAs({ ...billing, role: "tenant_admin" }, "orders.dlq", undefined)).toBe(true);
  });
});

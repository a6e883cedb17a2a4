// @vitest-environment jsdom
// (it imports the API client, which reads window.location when loaded)
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { describeViolation, prettySchema, schemaFormErrors, schemaViolation, versionsOf } from "./schemas";

const refusal = (status: number, code: string, message: string, details: unknown = null) =>
  new ApiError(status, code, message, "req-1", details);

describe("prettySchema and versionsOf", () => {
  it("indents a schema two spaces, and keeps text that is not JSON as it is", () => {
    expect(prettySchema('{"type":"object","required":["a"]}')).toBe(
      '{\n  "type": "object",\n  "required": [\n    "a"\n  ]\n}',
    );
    expect(prettySchema("{oops")).toBe("{oops");
  });

  it("lists every version, the one in force first", () => {
    expect(versionsOf(3)).toEqual([3, 2, 1]);
    expect(versionsOf(1)).toEqual([1]);
  });
});

describe("the API's refusals about schemas", () => {
  it("places invalid_schema and incompatible_schema at the schema's text", () => {
    expect(schemaFormErrors(refusal(400, "invalid_schema", "not a valid JSON Schema: x"))).toEqual({
      schema_json: "not a valid JSON Schema: x",
    });
    const incompatible = refusal(409, "incompatible_schema", "the new version would refuse ...: /required", {
      version: 1,
      break: "/required",
    });
    expect(schemaFormErrors(incompatible)).toEqual({
      schema_json: "the new version would refuse ...: /required",
    });
    expect(schemaFormErrors(refusal(403, "forbidden", "no"))).toEqual({});
  });

  it("reads where and why a payload does not fit, from a single enqueue or a batch", () => {
    const single = refusal(400, "schema_violation", "the payload does not fit ...", {
      pointer: "/items/0/qty",
      reason: "0 is less than the minimum of 1",
      version: 2,
    });
    expect(schemaViolation(single)).toEqual({
      pointer: "/items/0/qty",
      reason: "0 is less than the minimum of 1",
      version: 2,
    });
    expect(describeViolation({ pointer: "/items/0/qty", reason: "0 is too small", version: 2 })).toBe(
      "Does not fit schema version 2 at /items/0/qty: 0 is too small",
    );
    const batch = refusal(400, "schema_violation", "1 of 2 messages do not fit", [
      { index: 1, code: "schema_violation", error: "(root): the payload is not JSON", pointer: "" },
    ]);
    expect(schemaViolation(batch)).toEqual({ pointer: "", reason: "the payload is not JSON", version: null });
    expect(describeViolation({ pointer: "", reason: "not JSON", version: null })).toBe(
      "Does not fit the topic's schema at the payload's root: not JSON",
    );
    expect(schemaViolation(refusal(400, "invalid_request", "bad"))).toBeNull();
    expect(schemaViolation(new Error("x"))).toBeNull();
  });
});

import { describe, expect, it } from "vitest";
import { checkJsonPayload, innermost, pointerOf, withoutFormats } from "./payloadCheck";

const SCHEMA = JSON.stringify({
  type: "object",
  required: ["order", "items"],
  properties: {
    order: { type: "integer" },
    items: {
      type: "array",
      items: { type: "object", required: ["qty"], properties: { qty: { type: "integer", minimum: 1 } } },
    },
    "a/b": { type: "string" },
    sent: { type: "string", format: "date-time" },
  },
  additionalProperties: false,
});

describe("checkJsonPayload", () => {
  it("says a payload fits", async () => {
    expect(await checkJsonPayload(SCHEMA, '{"order": 1, "items": [{"qty": 2}]}')).toEqual({ fits: true });
  });

  it("names the innermost place a payload breaks, as a JSON pointer, and why", async () => {
    expect(await checkJsonPayload(SCHEMA, '{"order": 1, "items": [{"qty": 0}]}')).toEqual({
      fits: false,
      violation: { pointer: "/items/0/qty", reason: "0 is less than 1." },
    });
    expect(await checkJsonPayload(SCHEMA, '{"items": []}')).toEqual({
      fits: false,
      violation: { pointer: "", reason: 'Instance does not have required property "order".' },
    });
    expect(await checkJsonPayload(SCHEMA, '{"order": 1, "items": [], "a/b": 5}')).toEqual({
      fits: false,
      violation: { pointer: "/a~1b", reason: 'Instance type "number" is invalid. Expected "string".' },
    });
  });

  it("gives the reason of a property that additionalProperties: false refuses, not the false schema's", async () => {
    expect(await checkJsonPayload(SCHEMA, '{"order": 1, "items": [], "extra": true}')).toEqual({
      fits: false,
      violation: {
        pointer: "/extra",
        reason: 'Property "extra" does not match additional properties schema.',
      },
    });
  });

  it("does not check formats, as the server does not", async () => {
    expect(await checkJsonPayload(SCHEMA, '{"order": 1, "items": [], "sent": "yesterday"}')).toEqual({
      fits: true,
    });
  });

  it("says a payload that is not JSON", async () => {
    const result = await checkJsonPayload(SCHEMA, "{order: 1}");
    expect(result).toHaveProperty("notJson");
  });
});

describe("the pieces", () => {
  it("reads cfworker's locations as pointers", () => {
    expect(pointerOf("#")).toBe("");
    expect(pointerOf("#/items/0")).toBe("/items/0");
    expect(pointerOf("#/caf%C3%A9/a~1b/%23")).toBe("/café/a~1b/#");
  });

  it("falls back to the chain's last words when nothing else is said", () => {
    expect(innermost([])).toEqual({ pointer: "", reason: "does not fit" });
    const unit = {
      keyword: "false",
      keywordLocation: "#",
      instanceLocation: "#",
      error: "False boolean schema.",
    };
    expect(innermost([unit])).toEqual({ pointer: "", reason: "False boolean schema." });
  });

  it("removes format keywords from subschemas only, leaving a property named format", () => {
    const schema = {
      format: "uri",
      properties: { format: { type: "string", format: "email" } },
      items: [{ format: "date" }],
      prefixItems: [{ format: "date" }],
      not: { format: "ipv4" },
      $defs: { a: { anyOf: [{ format: "uuid" }] } },
      enum: [{ format: "kept" }],
    };
    expect(withoutFormats(schema)).toEqual({
      properties: { format: { type: "string" } },
      items: [{}],
      prefixItems: [{}],
      not: {},
      $defs: { a: { anyOf: [{}] } },
      enum: [{ format: "kept" }],
    });
  });
});

import { describe, expect, it } from "vitest";
import { checkJsonPayload } from "./payloadCheck";
import { exampleFromSchema, type Json } from "./schemaExample";

const json = (schema: unknown) => exampleFromSchema("json_schema", JSON.stringify(schema));
const avro = (schema: unknown) => exampleFromSchema("avro", JSON.stringify(schema));
const value = (example: ReturnType<typeof exampleFromSchema>): Json => {
  if (!example.ok) throw new Error(example.error);
  return example.value;
};

const ORDER = {
  type: "object",
  required: ["order", "items", "placed_at"],
  properties: {
    order: { type: "integer", minimum: 1 },
    items: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["sku", "qty"],
        properties: { sku: { type: "string", minLength: 3 }, qty: { type: "integer", exclusiveMinimum: 0 } },
      },
    },
    placed_at: { type: "string", format: "date-time" },
    note: { type: "string" },
  },
  additionalProperties: false,
};

describe("exampleFromSchema: JSON Schema", () => {
  it("writes the smallest payload the schema asks for: required properties within their bounds", () => {
    expect(value(json(ORDER))).toEqual({
      order: 1,
      items: [{ sku: "xxx", qty: 1 }],
      placed_at: "2026-01-01T00:00:00Z",
    });
  });

  it("takes const, default, examples and enum before the type", () => {
    expect(
      value(
        json({
          type: "object",
          required: ["a", "b", "c", "d"],
          properties: {
            a: { const: "fixed" },
            b: { type: "integer", default: 7 },
            c: { type: "string", examples: ["eu-west"] },
            d: { enum: ["low", "high"] },
          },
        }),
      ),
    ).toEqual({ a: "fixed", b: 7, c: "eu-west", d: "low" });
  });

  it("follows local references and anchors, merges allOf and takes the first branch of anyOf / oneOf", () => {
    const schema = {
      $defs: { money: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } } },
      allOf: [
        { $ref: "#/$defs/money" },
        { required: ["currency"], properties: { currency: { $ref: "#cur" } } },
      ],
      oneOf: [{ required: ["card"] }, { required: ["iban"] }],
      properties: { card: { anyOf: [{ type: "string", maxLength: 4 }, { type: "null" }] } },
      $comment: "currency",
      definitions: { cur: { $anchor: "cur", enum: ["EUR", "USD"] } },
    };
    expect(value(json(schema))).toEqual({ amount: 0, currency: "EUR", card: "" });
  });

  it("keeps numbers within their bounds and multiples", () => {
    const n = (s: object) => value(json({ type: "integer", ...s }));
    expect(n({ minimum: 5 })).toBe(5);
    expect(n({ exclusiveMinimum: 5 })).toBe(6);
    expect(n({ maximum: -3 })).toBe(-3);
    expect(n({ minimum: 7, multipleOf: 5 })).toBe(10);
    expect(value(json({ type: "number", exclusiveMinimum: 0 }))).toBe(0.5);
  });

  it("fills arrays up to minItems, prefixItems first, and nullable types take their other type", () => {
    expect(
      value(
        json({
          type: "array",
          minItems: 3,
          prefixItems: [{ type: "boolean" }],
          items: { type: ["null", "string"] },
        }),
      ),
    ).toEqual([false, "", ""]);
  });

  it("stops a recursive schema, and says why there is none", () => {
    const tree = { type: "object", required: ["child"], properties: { child: { $ref: "#" } } };
    expect(JSON.stringify(value(json(tree)))).toContain('"child":null');
    expect(json(false)).toEqual({ ok: false, error: "the schema accepts no value (false)" });
    expect(json({ $ref: "https://example.com/order.json" })).toEqual({
      ok: false,
      error: "the schema refers to https://example.com/order.json, which the console cannot read",
    });
    expect(exampleFromSchema("json_schema", "{nope")).toEqual({ ok: false, error: "the schema is not JSON" });
  });

  it("writes examples that the schema accepts", async () => {
    for (const schema of [ORDER, { type: "string", format: "email", minLength: 3 }, { enum: [1, 2] }]) {
      const text = JSON.stringify(value(json(schema)));
      expect(await checkJsonPayload(JSON.stringify(schema), text), text).toEqual({ fits: true });
    }
  });
});

describe("exampleFromSchema: Avro", () => {
  it("writes a record with every field: its default, or an example of its type", () => {
    const schema = {
      type: "record",
      name: "Order",
      namespace: "shop",
      fields: [
        { name: "id", type: "string" },
        { name: "total", type: "double" },
        { name: "paid", type: "boolean" },
        { name: "note", type: ["null", "string"], default: null },
        { name: "channel", type: "string", default: "web" },
        { name: "coupon", type: ["null", "string"] },
        { name: "kind", type: { type: "enum", name: "Kind", symbols: ["RETAIL", "TRADE"] } },
        { name: "at", type: { type: "long", logicalType: "timestamp-millis" } },
        { name: "ref", type: { type: "string", logicalType: "uuid" } },
        {
          name: "items",
          type: {
            type: "array",
            items: { type: "record", name: "Item", fields: [{ name: "qty", type: "int" }] },
          },
        },
        { name: "extra", type: ["null", "Item"] },
        { name: "tags", type: { type: "map", values: "shop.Kind" } },
      ],
    };
    expect(value(avro(schema))).toEqual({
      id: "",
      total: 0,
      paid: false,
      note: null,
      channel: "web",
      coupon: "",
      kind: "RETAIL",
      at: 0,
      ref: "00000000-0000-4000-8000-000000000000",
      items: [{ qty: 0 }],
      extra: { qty: 0 },
      tags: { key: "RETAIL" },
    });
  });

  it("writes primitives and unions at the top, ends a linked list, and names a type used before it is defined", () => {
    expect(value(avro("int"))).toBe(0);
    expect(value(avro(["null", "string"]))).toBe("");
    expect(value(avro({ type: "enum", name: "E", symbols: ["A"], default: "A" }))).toBe("A");
    const list = {
      type: "record",
      name: "Node",
      fields: [
        { name: "value", type: "int" },
        { name: "next", type: ["null", "Node"] },
      ],
    };
    expect(JSON.stringify(value(avro(list)))).toMatch(/^\{"value":0,"next":\{"value":0,"next":.*null/);
    expect(avro({ type: "record", name: "R", fields: [{ name: "x", type: "Later" }] })).toEqual({
      ok: false,
      error: "the schema uses the type Later before defining it",
    });
  });
});

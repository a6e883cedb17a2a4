// "Try a payload" on a JSON Schema topic: does this payload fit the version in force? The API has no dry run, so
// the browser checks, with a validator that is not ours to write: @cfworker/json-schema (draft 2020-12, among the
// most spec-compliant, no dependencies). Not Ajv: Ajv compiles a schema into a function with `new Function`,
// which the console's Content-Security-Policy (`script-src 'self'`, no 'unsafe-eval') refuses; cfworker
// interprets the schema. It is loaded only when a payload is first tried.
//
// The server (jsonschema-rs) stays the judge on enqueue. Two of its habits are followed here: `format` is an
// annotation (draft 2020-12's default), not checked; and the reason given is the innermost one.
import type { OutputUnit, Schema } from "@cfworker/json-schema";
import type { Violation } from "./schemas";

export type PayloadCheck =
  | { fits: true }
  | { fits: false; violation: Omit<Violation, "version"> }
  | { notJson: string };

export async function checkJsonPayload(schemaJson: string, payload: string): Promise<PayloadCheck> {
  let instance: unknown;
  try {
    instance = JSON.parse(payload);
  } catch (e) {
    return { notJson: (e as Error).message };
  }
  const { Validator } = await import("@cfworker/json-schema");
  const schema = withoutFormats(JSON.parse(schemaJson));
  // Short-circuit: the first failure, as a chain from the payload's root down to the keyword that failed.
  const result = new Validator(schema as Schema | boolean, "2020-12", true).validate(instance);
  if (result.valid) return { fits: true };
  return { fits: false, violation: innermost(result.errors) };
}

/** The last unit of the chain names where; a `false` schema there (a property `additionalProperties: false`
 * refuses) says nothing, so its parent's words say why. */
export function innermost(errors: OutputUnit[]): Omit<Violation, "version"> {
  const last = errors.at(-1);
  if (!last) return { pointer: "", reason: "does not fit" };
  const said = last.keyword === "false" && errors.length > 1 ? (errors.at(-2) ?? last) : last;
  return { pointer: pointerOf(last.instanceLocation), reason: said.error };
}

/** cfworker's `#/items/0` (URI-encoded) as the JSON pointer the server names: `/items/0`. */
export function pointerOf(location: string): string {
  const fragment = location.startsWith("#") ? location.slice(1) : location;
  try {
    return decodeURIComponent(fragment);
  } catch {
    return fragment;
  }
}

/** Keywords whose value is one subschema, a list of them, or a map of them (draft 2020-12 and earlier). */
const ONE = [
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "items",
  "additionalItems",
  "unevaluatedItems",
  "contains",
  "not",
  "if",
  "then",
  "else",
];
const LISTS = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
const MAPS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/** The schema with every `format` keyword removed: the server treats `format` as an annotation, cfworker asserts
 * it. Walked keyword by keyword, so a property named "format" stays. */
export function withoutFormats(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
  delete out.format;
  for (const key of ONE) {
    if (key in out && !Array.isArray(out[key])) out[key] = withoutFormats(out[key]);
  }
  for (const key of LISTS) {
    const value = out[key];
    if (Array.isArray(value)) out[key] = value.map(withoutFormats);
  }
  for (const key of MAPS) {
    const value = out[key];
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutFormats(v)]));
    }
  }
  return out;
}

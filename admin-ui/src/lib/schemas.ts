// Topic schemas in the console: how a schema and its versions are shown, and what the API's refusals about schemas
// say, placed at their field. Two versions side by side: lib/schemaDiff.ts.
import { ApiError } from "../api/client";
import { fieldErrors } from "./fieldErrors";
import type { SchemaFormat } from "./schemaExample";

export type { SchemaFormat };

export const FORMATS: { format: SchemaFormat; label: string }[] = [
  { format: "avro", label: "Avro" },
  { format: "json_schema", label: "JSON Schema (draft 2020-12)" },
];

export function formatLabel(format: SchemaFormat): string {
  return FORMATS.find((f) => f.format === format)?.label ?? format;
}

/** A schema's text indented two spaces, as every version is shown and compared (their spacing is no change). */
export function prettySchema(schemaJson: string): string {
  try {
    return JSON.stringify(JSON.parse(schemaJson), null, 2);
  } catch {
    return schemaJson;
  }
}

/** Every version of a topic's schema, the one in force first: versions are numbered 1, 2, ... with no gap (a
 * deletion takes every version, and the next schema is version 1 again). */
export function versionsOf(inForce: number): number[] {
  return Array.from({ length: inForce }, (_, i) => inForce - i);
}

/** The schema form's errors by field: a schema that does not parse or compile (`invalid_schema`), or that would
 * refuse what the version in force accepts (`incompatible_schema`), is about the schema's text. */
export function schemaFormErrors(error: unknown): Record<string, string> {
  return fieldErrors(error, { invalid_schema: "schema_json", incompatible_schema: "schema_json" });
}

/** Where a payload does not fit and why: a JSON pointer into it ("" for the whole payload) and the reason. */
export type Violation = { pointer: string; reason: string; version: number | null };

/** The first payload a `schema_violation` names (a single enqueue's details, or a batch's first item); null for
 * any other error. */
export function schemaViolation(error: unknown): Violation | null {
  if (!(error instanceof ApiError) || error.code !== "schema_violation") return null;
  const details = error.details;
  if (Array.isArray(details)) {
    const first = details[0] as { pointer?: unknown; error?: unknown } | undefined;
    if (!first) return null;
    const pointer = typeof first.pointer === "string" ? first.pointer : "";
    const text = typeof first.error === "string" ? first.error : error.message;
    // A batch item's error is "<pointer or (root)>: <reason>"
    const reason = text.replace(/^(\(root\)|\/\S*): /, "");
    return { pointer, reason, version: null };
  }
  const d = (details ?? {}) as { pointer?: unknown; reason?: unknown; version?: unknown };
  return {
    pointer: typeof d.pointer === "string" ? d.pointer : "",
    reason: typeof d.reason === "string" ? d.reason : error.message,
    version: typeof d.version === "number" ? d.version : null,
  };
}

/** A pointer as the console names it: `/items/0/qty`, or the payload's root (the server's word). */
export function describePointer(pointer: string): string {
  return pointer === "" ? "the payload's root" : pointer;
}

/** The sentence a payload field shows for a violation. */
export function describeViolation(v: Violation): string {
  const version = v.version === null ? "the topic's schema" : `schema version ${v.version}`;
  return `Does not fit ${version} at ${describePointer(v.pointer)}: ${v.reason}`;
}

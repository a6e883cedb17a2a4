// An example payload from a topic's schema, for the enqueue form to start from. It only writes an example (the
// server checks every enqueue), so a small generator does: no library that fakes data is worth its size here.
//
// - JSON Schema: the smallest payload the schema asks for: required properties only, arrays of `minItems` items,
//   each value its `const`, `default`, first `examples` or `enum` entry, or a value of its type within its bounds
//   (`minimum`, `multipleOf`, `minLength`, a few `format`s); local `$ref`s are followed, `allOf` merged, and the
//   first branch of `anyOf` / `oneOf` taken. A `pattern` is not followed: the server says so on enqueue.
// - Avro: a record is an object with every field, each its `default` or an example of its type; an array has one
//   item and a map one entry (they show the shape, and Avro puts no bound on them); a union takes its first branch
//   that is not null. Payloads are JSON, so a union's value is written plainly (`"x"`, not `{"string": "x"}`).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Example = { ok: true; value: Json } | { ok: false; error: string };
export type SchemaFormat = "avro" | "json_schema";

/** Past this depth a recursive schema stops (a JSON Schema's value is left out, an Avro union takes null). */
const MAX_DEPTH = 12;

class NoExample extends Error {}

/** An example payload, pretty-printed JSON, for a schema's text; or why there is none. */
export function exampleFromSchema(format: SchemaFormat, schemaJson: string): Example {
  let schema: unknown;
  try {
    schema = JSON.parse(schemaJson);
  } catch {
    return { ok: false, error: "the schema is not JSON" };
  }
  try {
    const value = format === "avro" ? new AvroExample().of(schema, null, 0) : jsonSchemaExample(schema);
    return { ok: true, value };
  } catch (e) {
    if (e instanceof NoExample) return { ok: false, error: e.message };
    throw e;
  }
}

// --- JSON Schema ------------------------------------------------------------------------------------------------

type Node = { [key: string]: unknown };

const isObject = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x) => typeof x === "string") : []);

const FORMATS: Record<string, string> = {
  "date-time": "2026-01-01T00:00:00Z",
  date: "2026-01-01",
  time: "00:00:00Z",
  duration: "PT0S",
  email: "user@example.com",
  "idn-email": "user@example.com",
  hostname: "example.com",
  "idn-hostname": "example.com",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  uri: "https://example.com/",
  "uri-reference": "https://example.com/",
  iri: "https://example.com/",
  "iri-reference": "https://example.com/",
  uuid: "00000000-0000-4000-8000-000000000000",
  "json-pointer": "",
  regex: ".*",
};

export function jsonSchemaExample(root: unknown): Json {
  const value = jsonValue(root, root, 0);
  if (value === undefined) throw new NoExample("the schema accepts no value (false)");
  return value;
}

/** A value the schema accepts, or undefined when it accepts none (`false`) or recursion went too deep. */
function jsonValue(root: unknown, schema: unknown, depth: number): Json | undefined {
  if (schema === true) return null;
  if (schema === false || depth > MAX_DEPTH) return undefined;
  if (!isObject(schema)) return null;
  const node = flatten(root, schema, depth);
  if ("const" in node) return node.const as Json;
  if ("default" in node) return node.default as Json;
  if (Array.isArray(node.examples) && node.examples.length > 0) return node.examples[0] as Json;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0] as Json;
  switch (typeOf(node)) {
    case "object":
      return objectValue(root, node, depth);
    case "array":
      return arrayValue(root, node, depth);
    case "string":
      return stringValue(node);
    case "integer":
      return numberValue(node, true);
    case "number":
      return numberValue(node, false);
    case "boolean":
      return false;
    default:
      return null;
  }
}

/** The schema with its local `$ref` followed, `allOf` merged in, and the first branch of `anyOf` / `oneOf`. */
function flatten(root: unknown, schema: Node, depth: number): Node {
  let node: Node = { ...schema };
  if (typeof node.$ref === "string") {
    const { $ref, ...rest } = node;
    const target = resolve(root, $ref as string);
    node = merge(isObject(target) ? flatten(root, target, depth + 1) : {}, rest);
  }
  for (const key of ["allOf", "anyOf", "oneOf"] as const) {
    const parts = node[key];
    if (!Array.isArray(parts)) continue;
    delete node[key];
    const chosen = key === "allOf" ? parts : parts.slice(0, 1);
    for (const part of chosen) if (isObject(part)) node = merge(node, flatten(root, part, depth + 1));
  }
  return node;
}

/** Two schemas' keywords as one: `required` lists and `properties` maps joined, the rest taken from `b` first. */
function merge(a: Node, b: Node): Node {
  const out: Node = { ...a, ...b };
  if (a.required || b.required) out.required = [...new Set([...strings(a.required), ...strings(b.required)])];
  if (isObject(a.properties) && isObject(b.properties)) out.properties = { ...a.properties, ...b.properties };
  return out;
}

/** A local reference (`#`, `#/$defs/item`, or an `$anchor`'s name); anything else names nothing we can read. */
function resolve(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) throw new NoExample(`the schema refers to ${ref}, which the console cannot read`);
  const fragment = ref.slice(1);
  if (fragment === "") return root;
  if (!fragment.startsWith("/")) return findAnchor(root, fragment) ?? true;
  let at: unknown = root;
  for (const raw of fragment.slice(1).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    at = isObject(at) ? at[key] : Array.isArray(at) ? at[Number(key)] : undefined;
  }
  return at ?? true;
}

function findAnchor(at: unknown, anchor: string): Node | undefined {
  if (Array.isArray(at)) {
    for (const item of at) {
      const found = findAnchor(item, anchor);
      if (found) return found;
    }
  } else if (isObject(at)) {
    if (at.$anchor === anchor) return at;
    for (const value of Object.values(at)) {
      const found = findAnchor(value, anchor);
      if (found) return found;
    }
  }
  return undefined;
}

function typeOf(node: Node): string {
  const declared = Array.isArray(node.type)
    ? strings(node.type)
    : typeof node.type === "string"
      ? [node.type]
      : [];
  if (declared.length > 0) return declared.find((t) => t !== "null") ?? "null";
  if ("properties" in node || "required" in node || "additionalProperties" in node) return "object";
  if ("items" in node || "prefixItems" in node || "minItems" in node) return "array";
  if ("minLength" in node || "maxLength" in node || "pattern" in node || "format" in node) return "string";
  if ("minimum" in node || "maximum" in node || "exclusiveMinimum" in node || "multipleOf" in node) {
    return "number";
  }
  return "null";
}

function objectValue(root: unknown, node: Node, depth: number): Json {
  const out: { [key: string]: Json } = {};
  const properties = isObject(node.properties) ? node.properties : {};
  for (const name of strings(node.required)) {
    const schema =
      name in properties
        ? properties[name]
        : isObject(node.additionalProperties)
          ? node.additionalProperties
          : true;
    out[name] = jsonValue(root, schema, depth + 1) ?? null;
  }
  return out;
}

function arrayValue(root: unknown, node: Node, depth: number): Json {
  const prefix = Array.isArray(node.prefixItems) ? node.prefixItems : [];
  const count = typeof node.minItems === "number" ? node.minItems : 0;
  const out: Json[] = [];
  for (let i = 0; i < count; i++) {
    const schema = i < prefix.length ? prefix[i] : (node.items ?? true);
    out.push(jsonValue(root, schema, depth + 1) ?? null);
  }
  if (out.length === 0 && node.contains !== undefined && typeof node.minContains !== "number") {
    const item = jsonValue(root, node.contains, depth + 1);
    if (item !== undefined) out.push(item);
  }
  return out;
}

function stringValue(node: Node): string {
  let text = typeof node.format === "string" ? (FORMATS[node.format] ?? "") : "";
  if (typeof node.maxLength === "number") text = text.slice(0, node.maxLength);
  if (typeof node.minLength === "number" && text.length < node.minLength) {
    text = text.padEnd(node.minLength, "x");
  }
  return text;
}

function numberValue(node: Node, integer: boolean): number {
  const num = (v: unknown) => (typeof v === "number" ? v : null);
  const step = integer ? 1 : 0.5;
  let value = 0;
  const minimum = num(node.minimum);
  const above = num(node.exclusiveMinimum);
  if (minimum !== null && value < minimum) value = minimum;
  if (above !== null && value <= above) value = above + step;
  const maximum = num(node.maximum);
  const below = num(node.exclusiveMaximum);
  if (maximum !== null && value > maximum) value = maximum;
  if (below !== null && value >= below) value = below - step;
  if (integer) value = Math.ceil(value);
  const multiple = num(node.multipleOf);
  if (multiple !== null && multiple > 0) value = Math.ceil(value / multiple) * multiple;
  return value;
}

// --- Avro -------------------------------------------------------------------------------------------------------

const AVRO_PRIMITIVES: Record<string, Json> = {
  null: null,
  boolean: false,
  int: 0,
  long: 0,
  float: 0,
  double: 0,
  string: "",
  bytes: "",
};

/** Named types (records, enums, fixed) are registered as they are met, as Avro defines them: before their use. */
class AvroExample {
  /** Each named type by its full name, with the namespace it was defined in (its fields' names resolve there). */
  private readonly named = new Map<string, { schema: Node; namespace: string | null }>();

  of(schema: unknown, namespace: string | null, depth: number): Json {
    if (typeof schema === "string") return this.byName(schema, namespace, depth);
    if (Array.isArray(schema)) return this.union(schema, namespace, depth);
    if (!isObject(schema)) throw new NoExample(`${JSON.stringify(schema)} is not an Avro type`);
    const type = schema.type;
    if (typeof type !== "string") return this.of(type, namespace, depth); // {"type": {...}} or {"type": [...]}
    if (type === "record" || type === "error") return this.record(schema, namespace, depth);
    if (type === "enum") {
      this.register(schema, namespace);
      const symbols = strings(schema.symbols);
      return typeof schema.default === "string" ? schema.default : (symbols[0] ?? "");
    }
    if (type === "fixed") {
      this.register(schema, namespace);
      return "";
    }
    // Deep down a recursive type, an empty array or map ends it.
    if (type === "array") return depth > MAX_DEPTH ? [] : [this.of(schema.items, namespace, depth + 1)];
    if (type === "map") return depth > MAX_DEPTH ? {} : { key: this.of(schema.values, namespace, depth + 1) };
    if (type === "string" && schema.logicalType === "uuid") return FORMATS.uuid ?? "";
    return this.byName(type, namespace, depth);
  }

  private record(schema: Node, namespace: string | null, depth: number): Json {
    const own = this.register(schema, namespace);
    const out: { [key: string]: Json } = {};
    const fields = Array.isArray(schema.fields) ? schema.fields : [];
    for (const field of fields) {
      if (!isObject(field) || typeof field.name !== "string") continue;
      out[field.name] = "default" in field ? (field.default as Json) : this.of(field.type, own, depth + 1);
    }
    return out;
  }

  /** The first branch that is not null, but null once recursion goes deep (a linked list ends). */
  private union(branches: unknown[], namespace: string | null, depth: number): Json {
    const filled = branches.find((b) => b !== "null");
    if (filled === undefined || (depth > MAX_DEPTH && branches.includes("null"))) return null;
    return this.of(filled, namespace, depth);
  }

  private byName(name: string, namespace: string | null, depth: number): Json {
    if (name in AVRO_PRIMITIVES) return AVRO_PRIMITIVES[name] ?? null;
    const found =
      (namespace && !name.includes(".") ? this.named.get(`${namespace}.${name}`) : undefined) ??
      this.named.get(name);
    if (!found) throw new NoExample(`the schema uses the type ${name} before defining it`);
    if (depth > MAX_DEPTH) throw new NoExample(`the type ${name} holds itself with no way to end`);
    return this.of(found.schema, found.namespace, depth + 1);
  }

  /** Registers a named type under its full name; answers the namespace its own fields resolve names in. */
  private register(schema: Node, namespace: string | null): string | null {
    const name = typeof schema.name === "string" ? schema.name : "";
    const own = name.includes(".")
      ? name.slice(0, name.lastIndexOf("."))
      : typeof schema.namespace === "string"
        ? schema.namespace || null
        : namespace;
    if (name) this.named.set(name.includes(".") || !own ? name : `${own}.${name}`, { schema, namespace });
    return own;
  }
}

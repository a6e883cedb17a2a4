// Form fields that hold numbers: what a person typed, read strictly. Text that is not a number is an error at the
// field, never a value: Number("fifty") is NaN, which JSON sends as null, and null removes a setting.

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const WHOLE = /^\d+$/;

/** A whole number of at least 0 (no sign, decimals, units or thousands separators). */
export function wholeNumber(raw: string): Parsed<number> {
  const text = raw.trim();
  if (!WHOLE.test(text))
    return { ok: false, error: `"${text}" is not a whole number (digits only, e.g. 50)` };
  const value = Number(text);
  if (!Number.isSafeInteger(value)) return { ok: false, error: `${text} is too large` };
  return { ok: true, value };
}

/** A whole number from `min` to `max`, both included (the API's bounds, said at the field before anything is sent). */
export function wholeNumberIn(min: number, max: number): (raw: string) => Parsed<number> {
  return (raw) => {
    const parsed = wholeNumber(raw);
    if (!parsed.ok || (parsed.value >= min && parsed.value <= max)) return parsed;
    const [low, high] = [min, max].map((n) => n.toLocaleString("en-US"));
    return { ok: false, error: `${parsed.value.toLocaleString("en-US")} is out of range: ${low} to ${high}` };
  };
}

/** Whole numbers separated by commas ("1, 5, 30"); an empty entry (a stray comma) is an error, not a 0. */
export function wholeNumberList(raw: string): Parsed<number[]> {
  const parts = raw.split(",").map((p) => p.trim());
  const values: number[] = [];
  for (const [n, part] of parts.entries()) {
    if (part === "") return { ok: false, error: `entry ${n + 1} is empty: remove the extra comma` };
    const one = wholeNumber(part);
    if (!one.ok) return { ok: false, error: `entry ${n + 1}: ${one.error}` };
    values.push(one.value);
  }
  return { ok: true, value: values };
}

/** Reads every named field of a form with its parser; the values of those that parse, the errors of the rest. */
export function readFields<K extends string>(
  form: FormData,
  parsers: Record<K, (raw: string) => Parsed<unknown>>,
): { values: Partial<Record<K, unknown>>; errors: Partial<Record<K, string>> } {
  const values: Partial<Record<K, unknown>> = {};
  const errors: Partial<Record<K, string>> = {};
  for (const name of Object.keys(parsers) as K[]) {
    const raw = String(form.get(name) ?? "").trim();
    if (raw === "") continue; // empty: no value (the default, or no quota)
    const parsed = parsers[name](raw);
    if (parsed.ok) values[name] = parsed.value;
    else errors[name] = parsed.error;
  }
  return { values, errors };
}

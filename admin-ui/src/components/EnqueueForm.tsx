// Enqueue one message: payload as JSON or text (components/PayloadEditor.tsx: on a topic with a schema, an example
// payload from it), key, metadata rows, delay, priority. A payload the schema refuses is shown at the payload:
// where (a JSON pointer) and why.
import { useMutation, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { enqueue } from "../api/messages";
import { topicSchemaQuery } from "../api/schemas";
import { fieldErrors } from "../lib/fieldErrors";
import { toBase64 } from "../lib/format";
import { describeViolation, schemaViolation } from "../lib/schemas";
import { PayloadEditor } from "./PayloadEditor";
import { ErrorNote, Field } from "./ui";

/** A metadata row: its name, its value, and whether the value is text (sent as a string) or JSON (a number, true,
 * an object... as typed). */
type MetadataRow = { name: string; value: string; json: boolean };

/** The metadata object the rows make, or per row what is wrong with it (a value without a name is not dropped: it
 * is an error at its row, as a JSON value that does not parse and a name given twice are). */
export function readMetadata(
  rows: MetadataRow[],
): { metadata: Record<string, unknown> } | { errors: string[] } {
  const errors: string[] = rows.map(() => "");
  const metadata: Record<string, unknown> = {};
  rows.forEach((r, i) => {
    const name = r.name.trim();
    if (!name) {
      if (r.value) errors[i] = "Give this value a name, or remove the row.";
      return;
    }
    if (name in metadata) {
      errors[i] = `“${name}” is named twice: one value per name.`;
      return;
    }
    if (r.json) {
      try {
        metadata[name] = JSON.parse(r.value);
      } catch {
        errors[i] = 'Not JSON: a number, true, false, null, "text in quotes", an array or an object.';
      }
    } else metadata[name] = r.value;
  });
  return errors.some(Boolean) ? { errors } : { metadata };
}

export function EnqueueForm({ topic, onDone }: { topic: string; onDone: () => void }) {
  const [rows, setRows] = useState<MetadataRow[]>([]);
  const [rowErrors, setRowErrors] = useState<string[]>([]);
  const [sent, setSent] = useState<string | null>(null);
  const [formatError, setFormatError] = useState<string | null>(null);
  const [kind, setKind] = useState<"json" | "text">("json");
  const [payload, setPayload] = useState("{}");
  const schema = useQuery(topicSchemaQuery(topic)).data;
  const send = useMutation({
    mutationFn: enqueue,
    onMutate: () => setSent(null), // an earlier success never stands under a new refusal
    onSuccess: (r) => {
      setSent(r.id);
      onDone();
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setFormatError(null);
    if (kind === "json") {
      try {
        JSON.parse(payload);
      } catch (err) {
        setFormatError(`Not JSON: ${(err as Error).message}`);
        return;
      }
    }
    const key = String(form.get("key") ?? "");
    const read = readMetadata(rows);
    if ("errors" in read) {
      setRowErrors(read.errors);
      setSent(null);
      return;
    }
    setRowErrors([]);
    const { metadata } = read;
    send.mutate({
      topic,
      payload: toBase64(payload),
      ...(key ? { key } : {}),
      ...(Object.keys(metadata).length ? { metadata } : {}),
      delay_seconds: Number(form.get("delay") || 0),
      priority: Number(form.get("priority") || 0),
    });
  };
  const fieldError = (name: string) => fieldErrors(send.error)[name] ?? null;
  const violation = schemaViolation(send.error);
  return (
    <form className="card" onSubmit={submit} aria-label={`Enqueue into ${topic}`}>
      <h2>Enqueue into {topic}</h2>
      <PayloadEditor
        kind={kind}
        onKind={setKind}
        text={payload}
        onText={(text) => {
          setPayload(text);
          setFormatError(null);
        }}
        schema={schema}
        error={formatError ?? (violation ? describeViolation(violation) : fieldError("payload"))}
      />
      <div className="row wrap">
        <Field label="Key" hint="A pending message with the same key is replaced" error={fieldError("key")}>
          {(id, d) => <input id={id} name="key" aria-describedby={d} />}
        </Field>
        <Field label="Delay (s)" error={fieldError("delay_seconds")}>
          {(id, d) => (
            <input id={id} name="delay" type="number" min={0} defaultValue={0} aria-describedby={d} />
          )}
        </Field>
        <Field label="Priority (0-9)" error={fieldError("priority")}>
          {(id, d) => (
            <input
              id={id}
              name="priority"
              type="number"
              min={0}
              max={9}
              defaultValue={0}
              aria-describedby={d}
            />
          )}
        </Field>
      </div>
      <fieldset>
        <legend>Metadata</legend>
        {rows.map((r, i) => {
          const error = rowErrors[i];
          const errorId = `metadata-error-${i}`;
          const change = (patch: Partial<MetadataRow>) => {
            setRows(rows.map((x, j) => (j === i ? { ...x, ...patch } : x)));
            setRowErrors(rowErrors.map((x, j) => (j === i ? "" : x)));
          };
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their position
            <div key={i}>
              <div className="row wrap">
                <input
                  aria-label={`Metadata name ${i + 1}`}
                  value={r.name}
                  aria-invalid={error ? true : undefined}
                  aria-describedby={error ? errorId : undefined}
                  onChange={(e) => change({ name: e.target.value })}
                />
                <input
                  aria-label={`Metadata value ${i + 1}`}
                  value={r.value}
                  aria-invalid={error ? true : undefined}
                  aria-describedby={error ? errorId : undefined}
                  onChange={(e) => change({ value: e.target.value })}
                />
                <select
                  aria-label={`Metadata type ${i + 1}`}
                  value={r.json ? "json" : "text"}
                  onChange={(e) => change({ json: e.target.value === "json" })}
                >
                  <option value="text">text</option>
                  <option value="json">JSON (number, true, object…)</option>
                </select>
                <button
                  type="button"
                  onClick={() => {
                    setRows(rows.filter((_, j) => j !== i));
                    setRowErrors(rowErrors.filter((_, j) => j !== i));
                  }}
                  aria-label={`Remove metadata ${i + 1}`}
                >
                  ×
                </button>
              </div>
              {error && (
                <p id={errorId} className="field-error" role="alert">
                  {error}
                </p>
              )}
            </div>
          );
        })}
        <button type="button" onClick={() => setRows([...rows, { name: "", value: "", json: false }])}>
          Add metadata
        </button>
      </fieldset>
      <ErrorNote error={send.error} />
      {sent && (
        <p role="status" className="notice">
          Enqueued <span className="mono">{sent}</span>
        </p>
      )}
      <button type="submit" className="primary" disabled={send.isPending}>
        Enqueue
      </button>
    </form>
  );
}

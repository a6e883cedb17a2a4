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

export function EnqueueForm({ topic, onDone }: { topic: string; onDone: () => void }) {
  const [rows, setRows] = useState<{ name: string; value: string }[]>([]);
  const [sent, setSent] = useState<string | null>(null);
  const [formatError, setFormatError] = useState<string | null>(null);
  const [kind, setKind] = useState<"json" | "text">("json");
  const [payload, setPayload] = useState("{}");
  const schema = useQuery(topicSchemaQuery(topic)).data;
  const send = useMutation({
    mutationFn: enqueue,
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
    const metadata = Object.fromEntries(rows.filter((r) => r.name).map((r) => [r.name, r.value]));
    send.mutate({
      topic,
      payload: toBase64(payload),
      ...(key ? { key } : {}),
      ...(rows.some((r) => r.name) ? { metadata } : {}),
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
        {rows.map((r, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their position
          <div className="row" key={i}>
            <input
              aria-label={`Metadata name ${i + 1}`}
              value={r.name}
              onChange={(e) => setRows(rows.map((x, j) => (j === i ? { ...x, name: e.target.value } : x)))}
            />
            <input
              aria-label={`Metadata value ${i + 1}`}
              value={r.value}
              onChange={(e) => setRows(rows.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))}
            />
            <button
              type="button"
              onClick={() => setRows(rows.filter((_, j) => j !== i))}
              aria-label={`Remove metadata ${i + 1}`}
            >
              ×
            </button>
          </div>
        ))}
        <button type="button" onClick={() => setRows([...rows, { name: "", value: "" }])}>
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

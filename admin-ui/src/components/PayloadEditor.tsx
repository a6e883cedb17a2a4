// A message's payload as a form edits it: JSON or text, and on a topic with a schema the version that checks it
// and "Example from schema". Used by the enqueue form and the schedule form; each checks and sends it itself.
import { type ReactNode, useId, useState } from "react";
import type { TopicSchema } from "../api/schemas";
import { exampleFromSchema } from "../lib/schemaExample";
import { formatLabel } from "../lib/schemas";
import { Field } from "./ui";

export type PayloadKind = "json" | "text";

export function PayloadEditor({
  kind,
  onKind,
  text,
  onText,
  schema,
  checked = "Payloads are checked",
  hint,
  error,
}: {
  kind: PayloadKind;
  onKind: (kind: PayloadKind) => void;
  text: string;
  onText: (text: string) => void;
  /** The topic's schema in force, if it has one. */
  schema: TopicSchema | null | undefined;
  /** How the schema line starts: when the schema checks what this form makes. */
  checked?: string;
  hint?: ReactNode;
  error: string | null;
}) {
  const group = useId();
  const [exampleError, setExampleError] = useState<string | null>(null);
  const fillExample = () => {
    if (!schema) return;
    const example = exampleFromSchema(schema.format, schema.schema_json);
    setExampleError(example.ok ? null : `No example: ${example.error}.`);
    if (!example.ok) return;
    onText(JSON.stringify(example.value, null, 2));
    onKind("json");
  };
  return (
    <>
      <fieldset className="row">
        <legend>Payload is</legend>
        <label className="inline">
          <input type="radio" name={group} checked={kind === "json"} onChange={() => onKind("json")} /> JSON
        </label>
        <label className="inline">
          <input type="radio" name={group} checked={kind === "text"} onChange={() => onKind("text")} /> text
        </label>
      </fieldset>
      {schema && (
        <div className="row wrap">
          <span className="muted">
            {checked} against the topic's schema: version {schema.version}, {formatLabel(schema.format)}.
          </span>
          <button type="button" onClick={fillExample}>
            Example from schema
          </button>
          {exampleError && (
            <span className="field-error" role="alert">
              {exampleError}
            </span>
          )}
        </div>
      )}
      <Field label="Payload" hint={hint} error={error}>
        {(id, d) => (
          <textarea
            id={id}
            name="payload"
            rows={schema ? Math.min(20, Math.max(6, text.split("\n").length)) : 4}
            aria-describedby={d}
            aria-invalid={error ? true : undefined}
            className={schema ? "mono" : undefined}
            spellCheck={false}
            value={text}
            onChange={(e) => onText(e.target.value)}
          />
        )}
      </Field>
    </>
  );
}

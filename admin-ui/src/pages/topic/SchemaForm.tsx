// Add or replace a topic's schema (each save adds a version); the server's refusals show at the schema's text:
// one that does not parse or compile (invalid_schema), or that would refuse what the version in force accepts
// (incompatible_schema, when the compatibility check is on).
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ApiError } from "../../api/client";
import { putTopicSchema, type TopicSchema } from "../../api/schemas";
import { ErrorNote, Field } from "../../components/ui";
import { FORMATS, prettySchema, type SchemaFormat, schemaFormErrors } from "../../lib/schemas";

/** What an empty schema field suggests, by format. */
const STARTERS: Record<SchemaFormat, string> = {
  avro: '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}',
  json_schema: '{"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}',
};

export function SchemaForm({
  topic,
  current,
  onCancel,
  onSaved,
}: {
  topic: string;
  /** The version in force, which a save replaces; null for a topic without a schema. */
  current: TopicSchema | null;
  onCancel: () => void;
  onSaved: (schema: TopicSchema) => void;
}) {
  // The API's default format is queue-ti's, Avro.
  const [format, setFormat] = useState<SchemaFormat>(current?.format ?? "avro");
  const [text, setText] = useState(current ? prettySchema(current.schema_json) : "");
  // On by default: a replacement that would refuse what producers send now is a choice to make knowingly.
  const [backward, setBackward] = useState(true);
  const save = useMutation({
    mutationFn: () =>
      putTopicSchema(topic, {
        schema_json: text,
        format,
        compatibility: current && backward ? "backward" : "none",
      }),
    onSuccess: onSaved,
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    save.mutate();
  };
  const errors = schemaFormErrors(save.error);
  const incompatible = save.error instanceof ApiError && save.error.code === "incompatible_schema";
  const schemaError = errors.schema_json
    ? incompatible
      ? `${errors.schema_json}. Untick “Check compatibility” to replace it all the same.`
      : errors.schema_json
    : null;
  const label = current ? `Replace the schema of ${topic}` : `Add a schema to ${topic}`;

  return (
    <form className="schema-form" onSubmit={submit} aria-label={label}>
      <h3>{label}</h3>
      <Field label="Format" error={errors.format ?? null}>
        {(id, d) => (
          <select
            id={id}
            aria-describedby={d}
            value={format}
            onChange={(e) => setFormat(e.target.value === "json_schema" ? "json_schema" : "avro")}
          >
            {FORMATS.map((f) => (
              <option key={f.format} value={f.format}>
                {f.label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Schema"
        hint={
          format === "avro"
            ? "An Avro schema, as JSON: payloads are JSON, checked as a datum of it (a union's value written plainly)."
            : "A JSON Schema (draft 2020-12); $ref resolves within the schema only."
        }
        error={schemaError}
      >
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            className="mono"
            rows={14}
            spellCheck={false}
            required
            value={text}
            placeholder={STARTERS[format]}
            onChange={(e) => setText(e.target.value)}
          />
        )}
      </Field>
      {current && (
        <label className="inline">
          <input type="checkbox" checked={backward} onChange={(e) => setBackward(e.target.checked)} /> Check
          compatibility (backward): refuse this version if it would refuse messages version {current.version}{" "}
          accepts
        </label>
      )}
      {!schemaError && !errors.format && <ErrorNote error={save.error} />}
      <div className="row wrap">
        <button type="submit" className="primary" disabled={save.isPending}>
          {current ? `Save as version ${current.version + 1}` : "Add the schema"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

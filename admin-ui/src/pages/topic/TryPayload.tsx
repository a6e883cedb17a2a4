// "Try a payload" on the Schema tab: whether a payload fits the version in force, where and why not. A JSON Schema
// is checked in the browser (lib/payloadCheck.ts); an Avro schema only by the server, on enqueue, as the API has
// no dry run: the tab says so rather than guess.
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import type { TopicSchema } from "../../api/schemas";
import { ErrorNote, Field } from "../../components/ui";
import { checkJsonPayload } from "../../lib/payloadCheck";
import { describeViolation } from "../../lib/schemas";

export function TryPayload({ schema }: { schema: TopicSchema }) {
  const headingId = useId();
  const [payload, setPayload] = useState("");
  const check = useMutation({ mutationFn: (text: string) => checkJsonPayload(schema.schema_json, text) });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    check.mutate(payload);
  };
  const result = check.data;
  const error =
    result && "notJson" in result
      ? `Not JSON: ${result.notJson}`
      : result && !result.fits
        ? describeViolation({ ...result.violation, version: schema.version })
        : null;

  if (schema.format !== "json_schema") {
    return (
      <section aria-labelledby={headingId}>
        <h3 id={headingId}>Try a payload</h3>
        <p className="muted">
          Payloads are checked against an Avro schema by the server, when they are enqueued: enqueue one from
          the topic's Enqueue form, which can fill in an example from the schema. One that does not fit is
          refused there, with where and why, and nothing is stored.
        </p>
      </section>
    );
  }
  return (
    <form className="try-payload" onSubmit={submit} aria-labelledby={headingId}>
      <h3 id={headingId}>Try a payload</h3>
      <Field
        label="Payload (JSON)"
        hint={`Checked in this browser against version ${schema.version} by JSON Schema draft 2020-12, as the server checks it (formats are not checked). Nothing is enqueued; the server checks again on every enqueue.`}
        error={error}
      >
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            className="mono"
            rows={5}
            spellCheck={false}
            value={payload}
            placeholder='{"id": "order-1"}'
            onChange={(e) => {
              setPayload(e.target.value);
              check.reset();
            }}
          />
        )}
      </Field>
      <ErrorNote error={check.error} />
      {result && "fits" in result && result.fits && (
        <p role="status" className="notice">
          Fits version {schema.version}.
        </p>
      )}
      <button type="submit" disabled={check.isPending || payload.trim() === ""}>
        Check
      </button>
    </form>
  );
}

// A time field of the message log's filters and actions.
import { Field } from "../../components/ui";
import { timeInput } from "../../lib/history";

/** A time field as the log's filters and actions take it: UTC, as the console shows times. */
export function TimeField({
  name,
  label,
  value,
  error,
  required,
}: {
  name: string;
  label: string;
  value?: string | undefined;
  error?: string | undefined;
  required?: boolean;
}) {
  return (
    <Field label={label} error={error ?? null}>
      {(id, d) => (
        <input
          id={id}
          name={name}
          defaultValue={value ? timeInput(value) : ""}
          placeholder="2026-11-25 04:10:03"
          required={required}
          aria-describedby={d}
          aria-invalid={error ? true : undefined}
          autoComplete="off"
        />
      )}
    </Field>
  );
}

// A topic's configuration: every field with its effective value, the override or the global default shown as such.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useParams } from "@tanstack/react-router";
import { type FormEvent, useState } from "react";
import type { Schemas } from "../api/client";
import { keys } from "../api/keys";
import { useMe } from "../api/session";
import { putTopicConfig, resetTopicConfig, topicConfigQuery } from "../api/topics";
import { Confirm, ErrorNote, Field } from "../components/ui";
import { fieldErrors } from "../lib/fieldErrors";
import { isAdmin } from "../lib/grants";
import { type Parsed, readFields, wholeNumber, wholeNumberIn, wholeNumberList } from "../lib/parse";

type Config = Schemas["TopicConfig"];
type Name = keyof Config;

type Kind = "int" | "bool" | "list";

/** Each setting: its label, a line saying what it does, what no value (null) means when not "unlimited", and for
 * a number checked here before it is sent, its bounds (the others' bounds are the API's 400, shown at the field). */
const FIELDS: {
  name: Name;
  label: string;
  hint: string;
  kind: Kind;
  none?: string;
  range?: [number, number];
}[] = [
  { name: "max_retries", label: "Max retries", hint: "Attempts before the DLQ (or failed)", kind: "int" },
  { name: "message_ttl_seconds", label: "Message TTL (s)", hint: "0 = messages never expire", kind: "int" },
  {
    name: "max_depth",
    label: "Max depth",
    hint: "Pending + processing; enqueues past it get 429 queue_full",
    kind: "int",
  },
  {
    name: "throughput_limit",
    label: "Throughput limit (/s)",
    hint: "Dequeued messages per second, all instances",
    kind: "int",
  },
  {
    name: "max_inflight",
    label: "Max in flight",
    hint: "At most this many messages leased at once, per consumer group on a topic with groups; empty = no limit",
    kind: "int",
    none: "no limit",
    range: [1, 1_000_000],
  },
  {
    name: "visibility_timeout_seconds",
    label: "Visibility timeout (s)",
    hint: "How long a lease lasts",
    kind: "int",
  },
  {
    name: "retry_backoff_seconds",
    label: "Retry backoff (s)",
    hint: "Comma-separated delays per attempt",
    kind: "list",
  },
  {
    name: "dlq_enabled",
    label: "Dead-letter topic",
    hint: "Exhausted messages go to <topic>.dlq",
    kind: "bool",
  },
  {
    name: "expire_to_dlq",
    label: "Expired messages to the DLQ",
    hint: "Instead of marking them expired",
    kind: "bool",
  },
  {
    name: "replayable",
    label: "Replayable",
    hint: "Keep every acked message in the topic's message log, to read and replay it (the History tab)",
    kind: "bool",
  },
  {
    name: "replay_window_seconds",
    label: "Replay window (s)",
    hint: "How long a logged message stays listed and replayable; none = kept until trimmed",
    kind: "int",
    none: "kept until trimmed",
  },
];

const PARSERS: Record<Kind, (raw: string) => Parsed<unknown>> = {
  int: wholeNumber,
  bool: (raw) => ({ ok: true, value: raw === "true" }),
  list: wholeNumberList,
};

/** The body a form of FIELDS saves: every setting, null where its field is empty (no override: the default), and
 * the errors of the fields that do not parse (then nothing is sent). */
function readConfig(form: FormData): { body: Config; errors: Record<string, string> } {
  const parsers = Object.fromEntries(
    FIELDS.map((f) => [f.name, f.range ? wholeNumberIn(...f.range) : PARSERS[f.kind]]),
  ) as Record<Name, (raw: string) => Parsed<unknown>>;
  const { values, errors } = readFields(form, parsers);
  const body = Object.fromEntries(FIELDS.map((f) => [f.name, values[f.name] ?? null])) as Config;
  return { body, errors: errors as Record<string, string> };
}

/** An override as its form field holds it: "" for none (the default), lists comma-separated. */
function formValue(value: Config[Name] | undefined): string {
  if (value === null || value === undefined) return "";
  return Array.isArray(value) ? value.join(", ") : String(value);
}

/** A setting's value as the page shows it: "" for none, lists comma-separated, yes/no for switches. */
function show(value: Config[Name] | undefined): string {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

export function TopicConfigPage() {
  const { topic } = useParams({ from: "/topics/$topic/config" });
  const me = useMe().data;
  const queryClient = useQueryClient();
  const [confirmReset, setConfirmReset] = useState(false);
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const config = useQuery(topicConfigQuery(topic));
  const save = useMutation({
    mutationFn: (body: Config) => putTopicConfig(topic, body),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: keys.topics.all() }),
  });
  const reset = useMutation({
    mutationFn: () => resetTopicConfig(topic),
    onSuccess: () => {
      setConfirmReset(false);
      queryClient.invalidateQueries({ queryKey: keys.topics.all() });
    },
  });
  if (!me) return null;
  // A dead-letter topic's messages are never enqueued, so most settings do not apply; its config is read-only.
  const deadLetters = topic.endsWith(".dlq");
  const editable = isAdmin(me) && !deadLetters;
  const errors = { ...fieldErrors(save.error), ...invalid };

  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const { body, errors: bad } = readConfig(new FormData(e.currentTarget));
    setInvalid(bad);
    if (Object.keys(bad).length > 0) {
      save.reset(); // nothing is saved while a field does not parse
      return;
    }
    save.mutate(body);
  };

  return (
    <section>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Topics</Link> /{" "}
        <Link to="/topics/$topic" params={{ topic }}>
          {topic}
        </Link>{" "}
        / <span>configuration</span>
      </nav>
      <h1>Configuration of {topic}</h1>
      <p className="muted">
        An empty field takes the global default; a value overrides it for this topic only.
      </p>
      {deadLetters && (
        <p className="notice" role="note">
          {topic} is a dead-letter topic: its messages come from {topic.slice(0, -4)} and are never enqueued
          here, so its settings are shown, not edited. Configure {topic.slice(0, -4)} instead.
        </p>
      )}
      <ErrorNote error={config.error} />
      {config.isSuccess && (
        <form onSubmit={submit} className="card config" aria-label="Topic configuration">
          {FIELDS.map((f) => {
            const current = formValue(config.data.overrides?.[f.name]);
            const fallback = show(config.data.defaults[f.name]) || (f.none ?? "unlimited");
            const inForce = show(config.data.effective[f.name]) || (f.none ?? "unlimited");
            return (
              <Field
                key={f.name}
                label={f.label}
                hint={`${f.hint}. In force: ${inForce} (${current === "" ? "global default" : `override; the default is ${fallback}`}).`}
                error={errors[f.name] ?? null}
              >
                {(id, d) =>
                  f.kind === "bool" ? (
                    <select
                      id={id}
                      name={f.name}
                      defaultValue={current}
                      disabled={!editable}
                      aria-describedby={d}
                    >
                      <option value="">global default ({fallback})</option>
                      <option value="true">yes</option>
                      <option value="false">no</option>
                    </select>
                  ) : (
                    <input
                      id={id}
                      name={f.name}
                      defaultValue={current}
                      placeholder={`global default: ${fallback}`}
                      inputMode={f.kind === "int" ? "numeric" : "text"}
                      disabled={!editable}
                      aria-describedby={d}
                      aria-invalid={errors[f.name] ? true : undefined}
                    />
                  )
                }
              </Field>
            );
          })}
          {Object.keys(errors).length === 0 && <ErrorNote error={save.error} />}
          {save.isSuccess && (
            <p role="status" className="notice">
              Saved; every instance uses it from its next operation.
            </p>
          )}
          {editable && (
            <div className="row">
              <button type="submit" className="primary" disabled={save.isPending}>
                Save
              </button>
              {config.data.overrides && (
                <button type="button" className="danger" onClick={() => setConfirmReset(true)}>
                  Reset to defaults
                </button>
              )}
            </div>
          )}
        </form>
      )}
      <ErrorNote error={reset.error} />
      <Confirm
        open={confirmReset}
        title={`Reset ${topic} to the global defaults?`}
        confirmLabel="Reset"
        danger
        onCancel={() => setConfirmReset(false)}
        onConfirm={() => reset.mutate()}
      >
        <p>Every override of this topic is removed.</p>
      </Confirm>
    </section>
  );
}

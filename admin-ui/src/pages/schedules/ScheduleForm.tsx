// Create or edit a schedule (tenant admins): name, topic, cron with its next runs worked out as it is typed, time
// zone, the message (payload, key, metadata, priority) and whether it is enabled. The server checks the cron and
// the zone again on save, and its refusal shows at the field it names.
import { useMutation, useQuery } from "@tanstack/react-query";
import { type FormEvent, useEffect, useId, useMemo, useState } from "react";
import { putSchedule, type Schedule } from "../../api/schedules";
import { topicSchemaQuery } from "../../api/schemas";
import { topicsQuery } from "../../api/topics";
import { PayloadEditor } from "../../components/PayloadEditor";
import { ErrorNote, Field } from "../../components/ui";
import { describeCron, formatInZone, nextRuns, timeZones } from "../../lib/cron";
import { formatTime } from "../../lib/format";
import {
  bodyOf,
  type DraftErrors,
  draftOf,
  NAME_PATTERN,
  NEW_SCHEDULE,
  type ScheduleBody,
  type ScheduleDraft,
  scheduleFormErrors,
} from "../../lib/schedules";

export function ScheduleForm({
  schedule,
  taken,
  onCancel,
  onSaved,
}: {
  /** The schedule edited; null for a new one. */
  schedule: Schedule | null;
  /** The names in use: a new schedule under one of them replaces it (PUT), which the form says. */
  taken: string[];
  onCancel: () => void;
  /** `newTopic`: the tenant had no topic of that name when it was saved (its first tick creates it). */
  onSaved: (s: Schedule, newTopic: boolean) => void;
}) {
  const [draft, setDraft] = useState<ScheduleDraft>(() => (schedule ? draftOf(schedule) : NEW_SCHEDULE));
  const [draftErrors, setDraftErrors] = useState<DraftErrors>({});
  const save = useMutation({
    mutationFn: ({ name, body }: { name: string; body: ScheduleBody }) => putSchedule(name, body),
    onSuccess: (saved) => onSaved(saved, unknownTopic),
  });
  // The tenant's topics, for the topic field's suggestions; the schema of a topic that exists, for its example.
  const topicList = useQuery(topicsQuery()).data?.items;
  const topics = topicList?.map((t) => t.topic) ?? [];
  const topic = draft.topic.trim();
  const known = topics.includes(topic);
  // A topic the tenant does not have yet (a typo, often): said at the field as it is typed, and again once saved.
  const unknownTopic = topicList !== undefined && topic !== "" && !known;
  const schema = useQuery({ ...topicSchemaQuery(topic), enabled: known }).data;
  const zones = useMemo(timeZones, []);
  const ids = useId();

  const change = <K extends keyof ScheduleDraft>(field: K, value: ScheduleDraft[K]) => {
    setDraft((d) => ({ ...d, [field]: value }));
    setDraftErrors((e) => ({ ...e, [field]: undefined }));
    if (save.error) save.reset(); // the refusal was about what was sent, no longer what is typed
  };
  // Updates of the payload merge into the latest draft: "Example from schema" sets its text and its kind at once.
  const changePayload = (patch: Partial<ScheduleDraft["payload"]>) => {
    setDraft((d) => ({ ...d, payload: { ...d.payload, ...patch } }));
    setDraftErrors((e) => ({ ...e, payload: undefined }));
    if (save.error) save.reset();
  };
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const sent = bodyOf(draft);
    if (!sent.ok) {
      setDraftErrors(sent.errors);
      return;
    }
    save.mutate({ name: draft.name.trim(), body: sent.body });
  };

  const errors = scheduleFormErrors(save.error);
  const placed = Object.keys(errors).length > 0;
  const name = draft.name.trim();
  const replaces = !schedule && name !== "" && taken.includes(name);
  // What each field shows: what cannot be sent as typed, else the server's refusal. A cron or zone the browser
  // cannot read is said by the preview as it is typed, not as an alert at each keystroke; the server decides.
  const fieldError = {
    name: errors.name ?? null,
    topic: errors.topic ?? null,
    cron: errors.cron ?? null,
    timezone: errors.timezone ?? null,
    payload: draftErrors.payload ?? errors.payload ?? null,
    key: errors.key ?? null,
    priority: draftErrors.priority ?? errors.priority ?? null,
    metadata: draftErrors.metadata ?? errors.metadata ?? null,
  };
  const invalid = (field: keyof typeof fieldError) => (fieldError[field] ? true : undefined);
  const title = schedule ? `Edit the schedule ${schedule.name}` : "New schedule";

  return (
    <form className="card schedule-form" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <div className="row wrap">
        <Field
          label="Name"
          hint={
            replaces ? (
              <span className="bad">A schedule named {name} exists: saving replaces it.</span>
            ) : schedule ? (
              "A schedule keeps its name; a new name is a new schedule."
            ) : (
              "Letters, digits, “.”, “_” and “-”."
            )
          }
          error={fieldError.name}
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("name")}
              className="mono"
              required
              pattern={NAME_PATTERN}
              maxLength={200}
              readOnly={schedule !== null}
              value={draft.name}
              onChange={(e) => change("name", e.target.value)}
            />
          )}
        </Field>
        <Field
          label="Topic"
          hint={
            unknownTopic
              ? `No topic named “${topic}” yet: its first tick would create it. Check the name if you meant one of the tenant's topics.`
              : "The topic each tick enqueues into."
          }
          error={fieldError.topic}
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("topic")}
              required
              list={`${ids}-topics`}
              value={draft.topic}
              onChange={(e) => change("topic", e.target.value)}
            />
          )}
        </Field>
        <datalist id={`${ids}-topics`}>
          {topics
            .filter((t) => !t.endsWith(".dlq"))
            .map((t) => (
              <option key={t} value={t} />
            ))}
        </datalist>
      </div>
      <div className="row wrap">
        <Field
          label="Cron"
          hint={
            <>
              5 fields: minute hour day month weekday (<code>30 2 * * *</code>: 02:30 every day), or 6 with
              seconds first (<code>*/10 * * * * *</code>: every 10 seconds).
            </>
          }
          error={fieldError.cron}
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("cron")}
              className="mono"
              required
              spellCheck={false}
              autoComplete="off"
              placeholder="30 2 * * *"
              value={draft.cron}
              onChange={(e) => change("cron", e.target.value)}
            />
          )}
        </Field>
        <Field
          label="Time zone"
          hint={
            <>
              The cron's clock (an IANA zone). Daylight saving: a time the clocks skip (02:30 when 02:00
              becomes 03:00) fires at the jump, once; a time that happens twice fires once when the cron names
              the hour, in both when the hour is <code>*</code>.
            </>
          }
          error={fieldError.timezone}
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("timezone")}
              required
              list={`${ids}-zones`}
              spellCheck={false}
              autoComplete="off"
              value={draft.timezone}
              onChange={(e) => change("timezone", e.target.value)}
            />
          )}
        </Field>
        <datalist id={`${ids}-zones`}>
          {zones.map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
      </div>
      <CronPreview cron={draft.cron} zone={draft.timezone.trim() || "UTC"} />
      <PayloadEditor
        kind={draft.payload.kind}
        onKind={(kind) => changePayload({ kind })}
        text={draft.payload.text}
        onText={(text) => changePayload({ text })}
        schema={schema}
        checked="Each tick's payload is checked"
        hint={
          draft.payload.original?.binary
            ? "The stored payload is binary and is kept as it is; type a payload here to replace it."
            : undefined
        }
        error={fieldError.payload}
      />
      <div className="row wrap">
        <Field
          label="Key"
          hint="Optional: a tick whose previous message is still pending updates it."
          error={fieldError.key}
        >
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("key")}
              value={draft.key}
              onChange={(e) => change("key", e.target.value)}
            />
          )}
        </Field>
        <Field label="Priority (0-9)" error={fieldError.priority}>
          {(id, d) => (
            <input
              id={id}
              aria-describedby={d}
              aria-invalid={invalid("priority")}
              inputMode="numeric"
              value={draft.priority}
              onChange={(e) => change("priority", e.target.value)}
            />
          )}
        </Field>
      </div>
      <Field
        label="Metadata"
        hint={
          <>
            Optional: a JSON object, e.g. <code>{'{"kind": "report"}'}</code>. Each message also carries{" "}
            <code>skiplock_schedule</code> and <code>skiplock_tick</code>.
          </>
        }
        error={fieldError.metadata}
      >
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            aria-invalid={invalid("metadata")}
            className="mono"
            rows={3}
            spellCheck={false}
            value={draft.metadata}
            onChange={(e) => change("metadata", e.target.value)}
          />
        )}
      </Field>
      <label className="inline">
        <input
          type="checkbox"
          checked={draft.enabled}
          onChange={(e) => change("enabled", e.target.checked)}
        />{" "}
        Enabled: enqueue at each tick (a disabled schedule keeps its settings and enqueues nothing)
      </label>
      {!placed && <ErrorNote error={save.error} />}
      <div className="row wrap">
        <button type="submit" className="primary" disabled={save.isPending}>
          {schedule ? "Save schedule" : "Create schedule"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The cron in words and its next five runs, worked out in the browser as it is typed (lib/cron.ts), and again
 * when the first of them has passed (a form left open on a cron of every 10 seconds lists no run in the past). Only
 * the sentence is announced to screen readers, not each new list. */
function CronPreview({ cron, zone }: { cron: string; zone: string }) {
  const described = describeCron(cron);
  const [passed, setPassed] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `passed` asks for the runs after a new now
  const runs = useMemo(() => (cron.trim() ? nextRuns(cron, zone, new Date()) : null), [cron, zone, passed]);
  const first = runs?.ok ? runs.value[0] : undefined;
  useEffect(() => {
    if (!first) return;
    // At most an hour ahead: a browser's timer does not wait weeks.
    const wait = Math.min(Math.max(first.getTime() - Date.now(), 0) + 50, 3_600_000);
    const timer = window.setTimeout(() => setPassed((n) => n + 1), wait);
    return () => window.clearTimeout(timer);
  }, [first]);
  return (
    <section className="cron-preview" aria-label="Next runs">
      <p aria-live="polite" className={runs && !runs.ok ? "bad" : undefined}>
        {runs === null ? (
          <span className="muted">Type a cron to see its next runs.</span>
        ) : !runs.ok ? (
          `No runs: ${runs.error}.`
        ) : (
          <>
            {described && <strong>{described}</strong>}
            {described && zone !== "UTC" && ` (${zone})`}
            {described && ". "}
            <span className="muted">
              Next 5 runs, worked out in this browser (the server's next run is the one that counts):
            </span>
          </>
        )}
      </p>
      {runs?.ok && (
        <ol>
          {runs.value.map((d) => (
            <li key={d.getTime()}>
              <time dateTime={d.toISOString()}>{formatTime(d.toISOString())}</time>
              {zone !== "UTC" && <span className="muted"> · {formatInZone(d, zone)}</span>}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

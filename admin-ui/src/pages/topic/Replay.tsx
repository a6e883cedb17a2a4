// Tenant admins' actions on a topic's message log. Replay: a range (and key) counted first and confirmed, then run
// call by call: a refusal midway (max_depth, a quota, a rate limit) says how many went, and goes on from the
// server's resume_from, now or by itself after Retry-After. Trim: entries acked before a time, counted and confirmed.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { keys } from "../../api/keys";
import { fetchLogPage, type LogFilter, replayLog, trimLog } from "../../api/topics";
import { Confirm, ErrorNote, Field } from "../../components/ui";
import { formatTime } from "../../lib/format";
import {
  afterReplay,
  countEntries,
  describeCount,
  describeRange,
  type LogRange,
  parseTime,
  type ReplayRun,
  readRange,
} from "../../lib/history";
import { TimeField } from "./TimeField";

/** Entries counted before a confirmation, at most (1,000 a page): beyond it, "more than 10,000". */
const COUNT_CAP = 10_000;

type Counted = { count: number; more: boolean };

/** How many entries of `topic`'s log `range` holds, up to the cap. */
const countRange = (topic: string, range: LogRange) =>
  countEntries((cursor) => fetchLogPage(topic, range, cursor, 1000), COUNT_CAP);

/** The replay form (when `open`), its confirmation and the progress of the replay it starts. */
export function ReplayPanel({
  topic,
  filter,
  open,
  onStarted,
}: {
  topic: string;
  filter: LogFilter;
  open: boolean;
  onStarted: () => void;
}) {
  const queryClient = useQueryClient();
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [asking, setAsking] = useState<{ range: LogRange; counted: Counted } | null>(null);
  const [empty, setEmpty] = useState<string | null>(null);
  const [run, setRun] = useState<{ range: LogRange; counted: Counted; state: ReplayRun } | null>(null);
  const [auto, setAuto] = useState(false);
  const count = useMutation({
    mutationFn: (range: LogRange) => countRange(topic, range),
    onMutate: () => setEmpty(null),
    onSuccess: (counted, range) => {
      if (counted.count === 0) setEmpty(`Nothing to replay: no entry ${describeRange(range)}.`);
      else setAsking({ range, counted });
    },
  });

  // One call of the replay; what it did is added to what the earlier calls of this run did.
  const call = useCallback(
    async (range: LogRange, counted: Counted, soFar: number) => {
      setRun({ range, counted, state: { phase: "running", replayed: soFar } });
      const outcome = await replayLog(topic, range).then(
        (answer) => ({ replayed: answer.replayed }),
        (error: unknown) => ({ error }),
      );
      setRun({ range, counted, state: afterReplay(soFar, range, outcome) });
      queryClient.invalidateQueries({ queryKey: keys.topics.all() }); // the topic's counts and messages
    },
    [topic, queryClient],
  );
  // Going on by itself, when asked to: after the Retry-After the refusal named (a second when it named none).
  const refused = run?.state.phase === "refused" ? run.state : null;
  useEffect(() => {
    if (!auto || !refused || !run) return;
    const timer = setTimeout(
      () => call(refused.next, run.counted, refused.replayed),
      (refused.error.retryAfter ?? 1) * 1000,
    );
    return () => clearTimeout(timer);
  }, [auto, refused, run, call]);

  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const { range, errors } = readRange(new FormData(e.currentTarget));
    setInvalid(errors);
    if (Object.keys(errors).length === 0) count.mutate(range);
  };
  const busy = run?.state.phase === "running";

  return (
    <>
      {open && (
        <form className="card group-form" aria-label={`Replay messages of ${topic}`} onSubmit={submit}>
          <p className="muted">
            The entries acked in the range (from its start, before its end) are enqueued into {topic} again,
            as new messages, in the order they were acked. Empty fields: from the log's start, up to now,
            every key.
          </p>
          <div className="row wrap">
            <TimeField
              name="from_time"
              label="From (UTC)"
              value={filter.from_time}
              error={invalid.from_time}
            />
            <TimeField name="to_time" label="Before (UTC)" value={filter.to_time} error={invalid.to_time} />
            <Field label="Only the key" error={null}>
              {(id, d) => (
                <input
                  id={id}
                  name="key"
                  defaultValue={filter.key ?? ""}
                  aria-describedby={d}
                  autoComplete="off"
                />
              )}
            </Field>
          </div>
          <button type="submit" className="primary" disabled={count.isPending || busy}>
            {count.isPending ? "Counting…" : "Replay the range…"}
          </button>
          <ErrorNote error={count.error} />
          {empty && (
            <p role="status" className="muted">
              {empty}
            </p>
          )}
        </form>
      )}
      {run && (
        <ReplayProgress
          topic={topic}
          run={run}
          auto={auto}
          onAuto={setAuto}
          onContinue={() => refused && call(refused.next, run.counted, refused.replayed)}
          onDismiss={() => setRun(null)}
        />
      )}
      <Confirm
        open={asking !== null}
        title={`Replay ${asking ? describeCount(asking.counted) : ""} of ${topic}?`}
        confirmLabel="Replay"
        onCancel={() => setAsking(null)}
        onConfirm={() => {
          if (!asking) return;
          setAsking(null);
          onStarted();
          call(asking.range, asking.counted, 0);
        }}
      >
        {asking && (
          <p>
            The log holds {describeCount(asking.counted)} {describeRange(asking.range)}. Each is enqueued into{" "}
            {topic} again as a new message (a new id; its payload, key, metadata and priority kept, retries
            from 0), in the order they were acked, and consumers receive it again; one whose key a pending
            message of {topic} holds updates that message instead, as any enqueue does. The topic's max depth,
            quotas and rate limits apply: refused midway, the replay stops, and can go on from there.
          </p>
        )}
      </Confirm>
    </>
  );
}

function ReplayProgress({
  topic,
  run: { counted, state },
  auto,
  onAuto,
  onContinue,
  onDismiss,
}: {
  topic: string;
  run: { range: LogRange; counted: Counted; state: ReplayRun };
  auto: boolean;
  onAuto: (on: boolean) => void;
  onContinue: () => void;
  onDismiss: () => void;
}) {
  const n = state.replayed.toLocaleString("en-US");
  const of = counted.more
    ? `more than ${counted.count.toLocaleString("en-US")}`
    : counted.count.toLocaleString("en-US");
  return (
    <section className="card" aria-label="Replay">
      <p role="status" aria-live="polite">
        {state.phase === "running" && `Replaying… ${n} of ${of} replayed so far.`}
        {state.phase === "refused" &&
          `Paused after ${n} of ${of} replayed: the server refused the rest for now (${state.error.code}).`}
        {state.phase === "done" && `Replay done: ${n} messages enqueued again into ${topic}.`}
        {state.phase === "failed" && `Replay stopped after ${n} replayed.`}
      </p>
      {counted.more ? (
        state.phase === "running" && <progress aria-label="Replay progress" />
      ) : (
        <progress aria-label="Replay progress" max={Math.max(1, counted.count)} value={state.replayed} />
      )}
      {state.phase === "refused" && (
        <>
          <p className="muted">
            {state.error.message}. Going on starts from the first entry not replayed
            {state.next.from_time ? ` (acked ${formatTime(state.next.from_time)})` : ""}.
          </p>
          <div className="row wrap">
            <button type="button" className="primary" onClick={onContinue}>
              Continue
            </button>
            <label className="inline">
              <input type="checkbox" checked={auto} onChange={(e) => onAuto(e.target.checked)} /> Continue by
              itself after the server's Retry-After
              {state.error.retryAfter !== null ? ` (${state.error.retryAfter} s)` : ""}
            </label>
          </div>
        </>
      )}
      {state.phase === "failed" && <ErrorNote error={state.error} />}
      {(state.phase === "done" || state.phase === "failed") && (
        <button type="button" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </section>
  );
}

/** The trim form (when `open`), its confirmation and what the trim did. */
export function TrimPanel({ topic, open, onDone }: { topic: string; open: boolean; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [asking, setAsking] = useState<{ before: string; counted: Counted } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const count = useMutation({
    mutationFn: (before: string) => countRange(topic, { to_time: before }),
    onMutate: () => setNotice(null),
    onSuccess: (counted, before) => setAsking({ before, counted }),
  });
  const trim = useMutation({
    mutationFn: (before: string) => trimLog(topic, before),
    onSuccess: ({ deleted }) => {
      setAsking(null);
      onDone();
      setNotice(
        `Trimmed ${deleted === 1 ? "1 entry" : `${deleted.toLocaleString("en-US")} entries`} from the message log of ${topic}.`,
      );
      queryClient.invalidateQueries({ queryKey: keys.topics.log(topic) });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const raw = String(new FormData(e.currentTarget).get("before") ?? "");
    const parsed = parseTime(raw);
    setInvalid(parsed.ok ? {} : { before: parsed.error });
    if (parsed.ok) count.mutate(parsed.value);
  };
  return (
    <>
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {open && (
        <form className="card group-form" aria-label={`Trim the message log of ${topic}`} onSubmit={submit}>
          <div className="row wrap">
            <TimeField
              name="before"
              label="Trim entries acked before (UTC)"
              error={invalid.before}
              required
            />
          </div>
          <button type="submit" className="danger" disabled={count.isPending}>
            {count.isPending ? "Counting…" : "Trim…"}
          </button>
          <ErrorNote error={count.error} />
        </form>
      )}
      <Confirm
        open={asking !== null}
        title={`Trim ${asking ? describeCount(asking.counted) : ""} from the log of ${topic}?`}
        confirmLabel="Trim"
        danger
        busy={trim.isPending}
        onCancel={() => {
          setAsking(null);
          trim.reset();
        }}
        onConfirm={() => asking && trim.mutate(asking.before)}
      >
        {asking && (
          <p>
            The log holds {describeCount(asking.counted)} acked before {formatTime(asking.before)}. They go
            from the log at once, for good: no longer listed or replayed. The messages already replayed from
            them stay.
          </p>
        )}
        <ErrorNote error={trim.error} />
      </Confirm>
    </>
  );
}

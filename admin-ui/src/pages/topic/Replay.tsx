// Tenant admins' actions on a topic's message log. Replay: a range (and key) counted first and confirmed, to every
// consumer group or to one (on a topic that has groups; groups that could not be loaded are said to leave every
// group as the target), then run call by call: a refusal midway (max_depth, a quota, a rate limit) says how many
// went, and goes on from the server's resume_from, to the same target, now or by itself after Retry-After (asked
// again by each replay). Trim: entries acked before a time, counted and confirmed.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useCallback, useEffect, useState } from "react";
import { ApiError } from "../../api/client";
import { keys } from "../../api/keys";
import { consumerGroupsQuery, fetchLogPage, type LogFilter, replayLog, trimLog } from "../../api/topics";
import { Confirm, ErrorNote, Field } from "../../components/ui";
import { countOf, formatPreciseTime, formatTime } from "../../lib/format";
import {
  afterReplay,
  countEntries,
  describeCount,
  describeRange,
  describeTarget,
  type LogRange,
  parseTime,
  type Replay,
  type ReplayRun,
  readReplay,
  replayBody,
  replayTargets,
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
  // The page's loader fetched them, and the Consumer groups section keeps them fresh. Until they are known, the
  // form waits; when they cannot be loaded, it says that a replay would go to every group instead of silently
  // leaving out the choice.
  const groupsQuery = useQuery(consumerGroupsQuery(topic));
  const targets = replayTargets(groupsQuery);
  const groups = targets.state === "known" ? targets.groups : [];
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [asking, setAsking] = useState<{ replay: Replay; counted: Counted } | null>(null);
  const [empty, setEmpty] = useState<string | null>(null);
  const [run, setRun] = useStoredRun(topic);
  const [auto, setAuto] = useState(false);
  const count = useMutation({
    mutationFn: (replay: Replay) => countRange(topic, replay.range),
    onMutate: () => setEmpty(null),
    onSuccess: (counted, replay) => {
      if (counted.count === 0) setEmpty(`Nothing to replay: no entry ${describeRange(replay.range)}.`);
      else setAsking({ replay, counted });
    },
  });
  // The target is named where the topic has groups (a replay to one group always), or may have them (not loaded):
  // elsewhere nothing new is said.
  const named = (replay: Replay) => replay.group !== null || groups.length > 0 || targets.state === "failed";

  // One call of the replay; what it did is added to what the earlier calls of this run did.
  const call = useCallback(
    async (replay: Replay, counted: Counted, soFar: number) => {
      setRun({ replay, counted, state: { phase: "running", replayed: soFar } });
      const outcome = await replayLog(topic, replayBody(replay)).then(
        (answer) => ({ replayed: answer.replayed }),
        (error: unknown) => ({ error }),
      );
      setRun({ replay, counted, state: afterReplay(soFar, replay, outcome) });
      queryClient.invalidateQueries({ queryKey: keys.topics.all() }); // the topic's counts and messages
    },
    [topic, queryClient, setRun],
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
    const { replay, errors } = readReplay(new FormData(e.currentTarget));
    setInvalid(errors);
    if (Object.keys(errors).length === 0) count.mutate(replay);
  };
  const busy = run?.state.phase === "running";
  const askingTarget = asking && named(asking.replay) ? ` ${describeTarget(asking.replay.group)}` : "";

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
          {targets.state === "loading" && <p className="muted">Loading the consumer groups of {topic}…</p>}
          {targets.state === "failed" && (
            // Not an alert: the query asks again at each live refresh, and this would be announced every time.
            <div className="error">
              <strong>The consumer groups of {topic} could not be loaded</strong>
              {targets.error instanceof ApiError ? ` (${targets.error.code})` : ""}: a replay from here goes
              to every consumer group {topic} has, without a choice of one.{" "}
              <button type="button" onClick={() => groupsQuery.refetch()} disabled={groupsQuery.isFetching}>
                Load them again
              </button>
            </div>
          )}
          {groups.length > 0 && <TargetField groups={groups} />}
          <button
            type="submit"
            className="primary"
            disabled={count.isPending || busy || targets.state === "loading"}
          >
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
          target={named(run.replay) ? describeTarget(run.replay.group) : null}
          auto={auto}
          onAuto={setAuto}
          onContinue={() => refused && call(refused.next, run.counted, refused.replayed)}
          onDismiss={() => setRun(null)}
        />
      )}
      <Confirm
        open={asking !== null}
        title={asking ? `Replay ${describeCount(asking.counted)} of ${topic}${askingTarget}?` : ""}
        confirmLabel="Replay"
        onCancel={() => setAsking(null)}
        onConfirm={() => {
          if (!asking) return;
          setAsking(null);
          onStarted();
          setAuto(false); // each replay asks again before going on by itself
          call(asking.replay, asking.counted, 0);
        }}
      >
        {asking && (
          <p>
            The log holds {describeCount(asking.counted)} {describeRange(asking.replay.range)}. Each is
            enqueued into {topic} again as a new message (a new id; its payload, key, metadata and priority
            kept, retries from 0), in the order they were acked, and{" "}
            {receivers(asking.replay, named(asking.replay))}; one whose key a pending message of {topic} holds
            updates that message instead
            {named(asking.replay) ? ", for every group that still owes it," : ","} as any enqueue does. The
            topic's max depth, quotas and rate limits apply: refused midway, the replay stops, and can go on
            from there{asking.replay.group !== null ? ", still to that group only" : ""}.
          </p>
        )}
      </Confirm>
    </>
  );
}

type Run = { replay: Replay; counted: Counted; state: ReplayRun };

/** Each topic's last replay run while the console is open: going elsewhere (to raise `max_depth`) and back finds
 * a paused replay where it stopped, with its resume point, target and Continue. */
const runs = new Map<string, Run>();

function useStoredRun(topic: string): [Run | null, (run: Run | null) => void] {
  const [run, setState] = useState<Run | null>(() => runs.get(topic) ?? null);
  const set = useCallback(
    (next: Run | null) => {
      if (next === null) runs.delete(topic);
      else runs.set(topic, next);
      setState(next);
    },
    [topic],
  );
  return [run, set];
}

/** Who receives a replay's messages again, in the confirmation's words. */
function receivers({ group }: Replay, named: boolean): string {
  if (group !== null)
    return `consumer group ${group} receives it again (the other groups do not see it again)`;
  return named ? "every consumer group receives it again" : "consumers receive it again";
}

/** Every consumer group (the default) or the one chosen in the select, read by `readReplay`. */
function TargetField({ groups }: { groups: string[] }) {
  const [one, setOne] = useState(false);
  return (
    <fieldset>
      <legend>Deliver to</legend>
      <div>
        <label className="inline">
          <input type="radio" name="target" value="every" checked={!one} onChange={() => setOne(false)} />
          <span>
            <strong>Every consumer group</strong>: each receives the messages again
          </span>
        </label>
      </div>
      <div className="row wrap">
        <label className="inline">
          <input type="radio" name="target" value="group" checked={one} onChange={() => setOne(true)} />
          <span>
            <strong>One consumer group</strong>: only it receives them; the others do not see them again
          </span>
        </label>
        <select name="consumer_group" aria-label="Consumer group" disabled={!one}>
          {groups.map((g) => (
            <option key={g} value={g}>
              {g}
            </option>
          ))}
        </select>
      </div>
    </fieldset>
  );
}

function ReplayProgress({
  topic,
  run: { counted, state },
  target,
  auto,
  onAuto,
  onContinue,
  onDismiss,
}: {
  topic: string;
  run: Run;
  /** The replay's target in words, on a topic with consumer groups. */
  target: string | null;
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
        {state.phase === "done" &&
          `Replay done: ${countOf(state.replayed, "message")} enqueued again into ${topic}${target ? `, ${target}` : ""}.`}
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
            {state.next.range.from_time ? (
              <>
                {" "}
                (acked <code>{formatPreciseTime(state.next.range.from_time)}</code>, to the microsecond: the
                entries before it went)
              </>
            ) : (
              ""
            )}
            {target ? `, ${target}` : ""}.
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

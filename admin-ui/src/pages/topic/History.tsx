// A topic's History tab: its message log (every message acked while it was replayable), filtered by time and key
// and paged by keyset; each entry's payload in a drawer; replay and trim for tenant admins. A topic that is not
// replayable says what that means, and where to change it.
import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { type FormEvent, useEffect, useId, useRef, useState } from "react";
import type { Schemas } from "../../api/client";
import { keys } from "../../api/keys";
import { type LogFilter, messageLogQuery, topicConfigQuery } from "../../api/topics";
import { MessageStory } from "../../components/MessageStory";
import { Payload } from "../../components/Payload";
import { Empty, ErrorNote, TableWrap } from "../../components/ui";
import { formatAge, formatTime, showPayload } from "../../lib/format";
import { readRange } from "../../lib/history";
import { ReplayPanel, TrimPanel } from "./Replay";
import { TimeField } from "./TimeField";

type Entry = Schemas["LogEntryView"];

export function History({
  topic,
  admin,
  live,
  filter,
  onFilter,
}: {
  topic: string;
  admin: boolean;
  live: number | false;
  filter: LogFilter;
  onFilter: (filter: LogFilter) => void;
}) {
  const headingId = useId();
  const [tool, setTool] = useState<"replay" | "trim" | null>(null);
  const config = useQuery(topicConfigQuery(topic));
  const replayable = config.data?.effective.replayable ?? false;
  const keptFor = config.data?.effective.replay_window_seconds ?? null;
  return (
    <section className="card" aria-labelledby={headingId}>
      <h2 id={headingId}>Message log</h2>
      <ErrorNote error={config.error} />
      {config.data && !replayable && (
        <Empty title={`${topic} keeps no history`}>
          <p>
            Its messages are gone once acked. A replayable topic keeps every acked message in its message log,
            to be read and replayed later: enqueued again as new messages.
          </p>
          {admin ? (
            <Link to="/topics/$topic/config" params={{ topic }}>
              Make {topic} replayable in its configuration
            </Link>
          ) : (
            <p>A tenant admin can make it replayable in its configuration.</p>
          )}
        </Empty>
      )}
      {config.data && replayable && (
        <>
          <p className="muted">
            Every message acked since {topic} became replayable, oldest first by the time of its ack;{" "}
            {keptFor === null
              ? "kept until trimmed."
              : `entries older than ${formatAge(keptFor)} (its replay window) are no longer shown or replayed.`}
          </p>
          {/* A new filter (Clear, a link) shows in fresh fields: they are uncontrolled */}
          <LogFilterForm key={JSON.stringify(filter)} filter={filter} onFilter={onFilter} />
          {admin && (
            <>
              <div className="row wrap">
                <button
                  type="button"
                  onClick={() => setTool((t) => (t === "replay" ? null : "replay"))}
                  aria-expanded={tool === "replay"}
                >
                  Replay…
                </button>
                <button
                  type="button"
                  className="danger"
                  onClick={() => setTool((t) => (t === "trim" ? null : "trim"))}
                  aria-expanded={tool === "trim"}
                >
                  Trim before…
                </button>
              </div>
              <ReplayPanel
                topic={topic}
                filter={filter}
                open={tool === "replay"}
                onStarted={() => setTool(null)}
              />
              <TrimPanel topic={topic} open={tool === "trim"} onDone={() => setTool(null)} />
            </>
          )}
          <LogEntries topic={topic} filter={filter} live={live} />
        </>
      )}
    </section>
  );
}

/** From, to (UTC) and key; a time that does not parse is an error at its field, and nothing is applied. */
function LogFilterForm({ filter, onFilter }: { filter: LogFilter; onFilter: (filter: LogFilter) => void }) {
  const [errors, setErrors] = useState<Record<string, string>>({});
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const { range, errors: bad } = readRange(new FormData(e.currentTarget));
    setErrors(bad);
    if (Object.keys(bad).length === 0) onFilter(range);
  };
  return (
    <form className="filters row wrap" aria-label="Filter the message log" onSubmit={submit}>
      <TimeField
        name="from_time"
        label="Acked from (UTC)"
        value={filter.from_time}
        error={errors.from_time}
      />
      <TimeField name="to_time" label="Acked before (UTC)" value={filter.to_time} error={errors.to_time} />
      <div className="field">
        {/* #search: the `/` shortcut focuses it, as it does the messages' key filter */}
        <label htmlFor="search">Key</label>
        <input id="search" name="key" defaultValue={filter.key ?? ""} placeholder="exact key" />
      </div>
      <div className="row">
        <button type="submit">Apply</button>
        {(filter.from_time || filter.to_time || filter.key) && (
          <button
            type="button"
            onClick={() => {
              setErrors({});
              onFilter({});
            }}
          >
            Clear
          </button>
        )}
      </div>
    </form>
  );
}

function LogEntries({ topic, filter, live }: { topic: string; filter: LogFilter; live: number | false }) {
  const queryClient = useQueryClient();
  const [open, setOpen] = useState<Entry | null>(null);
  const pages = useInfiniteQuery({
    ...messageLogQuery(topic, filter),
    // As the message list: live refresh re-reads the first page only, and pauses once more are loaded.
    refetchInterval: (q) => ((q.state.data?.pages.length ?? 0) > 1 ? false : live),
  });
  const entries = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const filtered = Boolean(filter.from_time || filter.to_time || filter.key);
  const backToTop = () => {
    queryClient.setQueryData(keys.topics.logPages(topic, filter), (data: typeof pages.data) =>
      data ? { pages: data.pages.slice(0, 1), pageParams: data.pageParams.slice(0, 1) } : data,
    );
    queryClient.invalidateQueries({ queryKey: keys.topics.logPages(topic, filter) });
  };
  return (
    <>
      <ErrorNote error={pages.error} />
      {pages.data && entries.length === 0 && (
        <Empty title="Nothing in the log here">
          {filtered
            ? "No entry matches this filter. Clear it to see the whole log."
            : "Messages appear here once they are acked."}
        </Empty>
      )}
      {entries.length > 0 && (
        <TableWrap label={`Message log of ${topic}`}>
          <table className="messages">
            <caption className="sr-only">Message log of {topic}, oldest ack first</caption>
            <thead>
              <tr>
                <th scope="col">Acked</th>
                <th scope="col">Key</th>
                <th scope="col">Payload</th>
                <th scope="col">Priority</th>
                <th scope="col">Retries</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((entry) => (
                <EntryRow key={`${entry.acked_at} ${entry.id}`} entry={entry} onOpen={() => setOpen(entry)} />
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {entries.length > 0 && (
        <div className="row wrap">
          {pages.hasNextPage && (
            <button type="button" onClick={() => pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
              {pages.isFetchingNextPage ? "Loading…" : "Load more"}
            </button>
          )}
          <span className="muted">{entries.length.toLocaleString("en-US")} shown</span>
          {(pages.data?.pages.length ?? 0) > 1 && (
            <>
              <span className="muted">Live refresh is paused while more than one page is loaded.</span>
              <button type="button" onClick={backToTop}>
                Back to the first page
              </button>
            </>
          )}
        </div>
      )}
      {open && <EntryDrawer entry={open} onClose={() => setOpen(null)} />}
    </>
  );
}

function EntryRow({ entry, onOpen }: { entry: Entry; onOpen: () => void }) {
  const shown = showPayload(entry.payload);
  const preview =
    shown.kind === "hex"
      ? `binary, ${atob(entry.payload).length} B`
      : shown.text.replace(/\s+/g, " ").slice(0, 80);
  return (
    <tr>
      <td>
        <button type="button" className="link" onClick={onOpen} title={entry.acked_at}>
          {formatTime(entry.acked_at)}
        </button>
      </td>
      <td className="mono">{entry.key ?? "–"}</td>
      <td className="mono preview" title={preview}>
        {preview}
      </td>
      <td className="num">{entry.priority}</td>
      <td className="num">{entry.retry_count}</td>
      <td>{formatTime(entry.created_at)}</td>
    </tr>
  );
}

/** One logged message, as the message drawer shows a live one: its facts, payload and metadata. */
function EntryDrawer({ entry, onClose }: { entry: Entry; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    ref.current?.showModal?.();
  }, []);
  return (
    <dialog ref={ref} className="drawer" aria-labelledby={titleId} onClose={onClose}>
      <div className="row between">
        <h2 id={titleId}>Logged message</h2>
        <button type="button" onClick={onClose} aria-label="Close">
          ×
        </button>
      </div>
      <dl className="facts">
        <dt>Id</dt>
        <dd className="mono">{entry.id}</dd>
        <dt>Topic</dt>
        <dd>{entry.topic}</dd>
        <dt>Key</dt>
        <dd className="mono">{entry.key ?? "–"}</dd>
        <dt>Priority</dt>
        <dd>{entry.priority}</dd>
        <dt>Retries</dt>
        <dd>{entry.retry_count}</dd>
        <dt>Created</dt>
        <dd>
          <time dateTime={entry.created_at}>{formatTime(entry.created_at)}</time>
        </dd>
        <dt>Acked</dt>
        <dd>
          <time dateTime={entry.acked_at}>{formatTime(entry.acked_at)}</time>{" "}
          <span className="mono muted">{entry.acked_at}</span>
        </dd>
      </dl>
      <Payload payload={entry.payload} metadata={entry.metadata} />
      <MessageStory id={entry.id} topic={entry.topic} />
    </dialog>
  );
}

// One message: payload (pretty JSON, text or hex), metadata, every timestamp, retries, last error, each delivery
// (who leased it, how it ended), what each consumer group still owes of it, a link to itself, and its story (every
// group's part, dead letters, requeues, replays and acks: MessageStory). A message no longer stored still has its
// story (opened from a link to a replayed or acked one).
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { ApiError } from "../api/client";
import { actOnMessage, type MessageAction, messageQuery } from "../api/messages";
import { countOf, formatTime } from "../lib/format";
import { canConsumeAs, isAdmin, type Me } from "../lib/grants";
import { MessageStory } from "./MessageStory";
import { Payload } from "./Payload";
import { ErrorNote, TableWrap } from "./ui";

export function MessageDrawer({
  id,
  topic,
  me,
  onClose,
  onChanged,
}: {
  id: string;
  /** the page's topic: where to look for the story of a message no longer stored */
  topic?: string;
  me: Me;
  onClose: () => void;
  onChanged: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [linkCopied, setLinkCopied] = useState(false);
  const message = useQuery(messageQuery(id));
  const act = useMutation({
    mutationFn: (action: MessageAction) => actOnMessage(id, action),
    onSuccess: onChanged,
  });
  useEffect(() => {
    ref.current?.showModal?.();
  }, []);
  const m = message.data;
  const gone = message.error instanceof ApiError && message.error.status === 404;
  const copyLink = async () => {
    await navigator.clipboard?.writeText(window.location.href); // the page's URL names this message (?message=)
    setLinkCopied(true);
  };
  // Retry takes failed and expired messages, and releases a delayed one now; any other pending one is refused.
  const delayed =
    m?.status === "pending" && m.available_at !== null && Date.parse(m.available_at) > Date.now();
  const attempts = m?.attempts ?? [];
  const current = attempts.find((a) => a.outcome === "processing");
  const deliveries = m?.deliveries ?? [];
  // A dead letter of a consumer group is retried and requeued by those who may consume as that group.
  const mayConsume = m ? canConsumeAs(me, m.topic, m.consumer_group) : false;
  return (
    <dialog ref={ref} className="drawer" aria-labelledby="drawer-title" onClose={onClose}>
      <div className="row between">
        <h2 id="drawer-title">Message</h2>
        <span className="row">
          <button type="button" onClick={copyLink}>
            {linkCopied ? "Link copied" : "Copy link"}
          </button>
          <button type="button" onClick={onClose} aria-label="Close">
            ×
          </button>
        </span>
      </div>
      {gone ? (
        <p className="muted">This message is no longer stored; its story below tells what is known of it.</p>
      ) : (
        <ErrorNote error={message.error ?? act.error} />
      )}
      {m && (
        <>
          <dl className="facts">
            <dt>Id</dt>
            <dd className="mono">{m.id}</dd>
            <dt>Topic</dt>
            <dd>{m.topic}</dd>
            <dt>Status</dt>
            <dd>
              <span className={`badge ${m.status}`}>{m.status}</span>
            </dd>
            <dt>Key</dt>
            <dd className="mono">{m.key ?? "–"}</dd>
            <dt>Priority</dt>
            <dd>{m.priority}</dd>
            <dt>Retries</dt>
            <dd>
              {m.original_topic
                ? `used up on ${m.original_topic} (${countOf(attempts.length, "attempt")} below); requeued, it has its topic's retries again`
                : `${m.retry_count} / ${m.max_retries}`}
            </dd>
            <dt>Last error</dt>
            <dd className={m.last_error ? "bad" : undefined}>
              {m.last_error ? <pre className="error-text">{m.last_error}</pre> : "–"}
            </dd>
            {current && (
              <>
                <dt>Lease held by</dt>
                <dd>
                  <span className="mono">{current.leased_by ?? "–"}</span> since{" "}
                  <time dateTime={current.leased_at ?? undefined}>{formatTime(current.leased_at)}</time>
                </dd>
              </>
            )}
            {(
              [
                ["Created", m.created_at],
                ["Updated", m.updated_at],
                ["Available", m.available_at],
                ["Expires", m.expires_at],
                ["Moved to the DLQ", m.dlq_moved_at],
              ] as const
            ).map(([label, value]) => (
              <Fragment2 key={label} label={label} value={value ?? "–"} />
            ))}
            {m.original_topic && (
              <>
                <dt>Original topic</dt>
                <dd>{m.original_topic}</dd>
              </>
            )}
            {m.consumer_group && (
              <>
                <dt>Consumer group</dt>
                <dd className="mono">{m.consumer_group}</dd>
              </>
            )}
          </dl>
          {deliveries.length > 0 && (
            <>
              <h3>Consumer groups that still owe it</h3>
              <TableWrap label="Deliveries by consumer group">
                <table className="attempts">
                  <caption className="sr-only">Deliveries by consumer group</caption>
                  <thead>
                    <tr>
                      <th scope="col">Group</th>
                      <th scope="col">Status</th>
                      <th scope="col">Retries</th>
                    </tr>
                  </thead>
                  <tbody>
                    {deliveries.map((d) => (
                      <tr key={d.consumer_group}>
                        <th scope="row" className="mono">
                          {d.consumer_group}
                        </th>
                        <td>
                          <span className={`badge ${d.status}`}>{d.status}</span>
                        </td>
                        <td className="num">{d.retry_count}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableWrap>
            </>
          )}
          <Payload payload={m.payload} metadata={m.metadata} />
          <h3>Attempts</h3>
          {attempts.length === 0 ? (
            <p className="muted">Not delivered yet.</p>
          ) : (
            <TableWrap label="Attempts">
              <table className="attempts">
                <caption className="sr-only">Deliveries of this message, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Leased</th>
                    <th scope="col">By</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Ended</th>
                    <th scope="col">Error</th>
                  </tr>
                </thead>
                <tbody>
                  {attempts.map((a) => (
                    <tr key={a.attempt}>
                      <td className="num">{a.attempt}</td>
                      <td>{formatTime(a.leased_at)}</td>
                      <td className="mono">{a.leased_by ?? "–"}</td>
                      <td>
                        <span className={`badge ${a.outcome}`}>{a.outcome.replace("_", " ")}</span>
                      </td>
                      <td>{a.ended_at ? formatTime(a.ended_at) : "–"}</td>
                      <td className={a.error ? "bad" : undefined}>
                        {a.error ? <pre className="error-text">{a.error}</pre> : "–"}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
          <div className="row">
            {mayConsume && (["failed", "expired"].includes(m.status) || delayed) && (
              <button type="button" onClick={() => act.mutate("retry")}>
                {delayed ? "Deliver now" : "Retry"}
              </button>
            )}
            {mayConsume && m.original_topic && (
              <button type="button" onClick={() => act.mutate("requeue")}>
                Requeue to {m.original_topic}
                {m.consumer_group ? ` (for ${m.consumer_group} only)` : ""}
              </button>
            )}
            {isAdmin(me) && (
              <button
                type="button"
                className="danger"
                onClick={() => window.confirm("Delete this message?") && act.mutate("delete")}
              >
                Delete
              </button>
            )}
          </div>
        </>
      )}
      {(m || gone) && <MessageStory id={id} topic={topic} />}
    </dialog>
  );
}

function Fragment2({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <time dateTime={value === "–" ? undefined : value}>{formatTime(value === "–" ? null : value)}</time>
      </dd>
    </>
  );
}

// A message's whole story: payload (pretty JSON, text or hex), metadata, every timestamp, retries, last error.
import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import { api, unwrap } from "../api/client";
import { keys } from "../api/keys";
import { showPayload } from "../lib/format";
import { can, isAdmin, type Me } from "../lib/grants";
import { ErrorNote } from "./ui";

export function MessageDrawer({
  id,
  me,
  onClose,
  onChanged,
}: {
  id: string;
  me: Me;
  onClose: () => void;
  onChanged: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [copied, setCopied] = useState(false);
  const message = useQuery({
    queryKey: keys.topics.message(id),
    queryFn: () => unwrap(api.GET("/api/messages/{message_id}", { params: { path: { message_id: id } } })),
  });
  const act = useMutation({
    mutationFn: async (action: "retry" | "requeue" | "delete") => {
      const path = { params: { path: { message_id: id } } };
      if (action === "delete") return unwrap(api.DELETE("/api/messages/{message_id}", path));
      if (action === "retry") return unwrap(api.POST("/api/messages/{message_id}/retry", path));
      return unwrap(api.POST("/api/messages/{message_id}/requeue", path));
    },
    onSuccess: onChanged,
  });
  useEffect(() => {
    ref.current?.showModal?.();
  }, []);
  const m = message.data;
  const payload = m ? showPayload(m.payload) : null;
  const copy = async () => {
    if (!payload) return;
    await navigator.clipboard?.writeText(payload.text);
    setCopied(true);
  };
  return (
    <dialog ref={ref} className="drawer" aria-labelledby="drawer-title" onClose={onClose}>
      <div className="row between">
        <h2 id="drawer-title">Message</h2>
        <button type="button" onClick={onClose} aria-label="Close">
          ×
        </button>
      </div>
      <ErrorNote error={message.error ?? act.error} />
      {m && payload && (
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
              {m.retry_count} / {m.max_retries}
            </dd>
            <dt>Last error</dt>
            <dd className={m.last_error ? "bad" : undefined}>{m.last_error ?? "–"}</dd>
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
          </dl>
          <div className="row between">
            <h3>
              Payload <span className="muted">({payload.kind})</span>
            </h3>
            <button type="button" onClick={copy}>
              {copied ? "Copied" : "Copy"}
            </button>
          </div>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
          <pre className="payload" tabIndex={0}>
            {payload.text}
          </pre>
          <h3>Metadata</h3>
          {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
          <pre className="payload" tabIndex={0}>
            {m.metadata ? JSON.stringify(m.metadata, null, 2) : "–"}
          </pre>
          <div className="row">
            {can(me, "consume", m.topic) && ["failed", "expired", "pending"].includes(m.status) && (
              <button type="button" onClick={() => act.mutate("retry")}>
                Retry
              </button>
            )}
            {can(me, "consume", m.topic) && m.original_topic && (
              <button type="button" onClick={() => act.mutate("requeue")}>
                Requeue to {m.original_topic}
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
    </dialog>
  );
}

function Fragment2({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <time dateTime={value === "–" ? undefined : value}>{value}</time>
      </dd>
    </>
  );
}

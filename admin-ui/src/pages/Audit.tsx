// The audit trail (tenant admins: their tenant's; platform admins: every tenant's, or the one they address):
// who did what to which object, newest first, with the request id that leads to the server's log lines.
import { useInfiniteQuery } from "@tanstack/react-query";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { auditQuery } from "../api/audit";
import { Empty, ErrorNote, TableWrap } from "../components/ui";
import { formatTime } from "../lib/format";

export function AuditPage() {
  const search = useSearch({ from: "/audit" });
  const navigate = useNavigate({ from: "/audit" });
  const pages = useInfiniteQuery(auditQuery(search));
  const entries = pages.data?.pages.flatMap((p) => p.items) ?? [];
  const filtered = Boolean(search.action || search.actor || search.topic);
  return (
    <section>
      <h1>Audit trail</h1>
      <p className="muted">
        Every change to topics, configurations, tenants, users and grants, and every administrative action,
        newest first. Enqueues, dequeues and acks are not recorded.
      </p>
      <form
        className="filters row wrap"
        aria-label="Filter the audit trail"
        onSubmit={(e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          const value = (name: string) => String(form.get(name) ?? "").trim() || undefined;
          navigate({ search: { action: value("action"), actor: value("actor"), topic: value("topic") } });
        }}
      >
        <label className="inline">
          Action{" "}
          <input name="action" defaultValue={search.action ?? ""} placeholder="topic.purge, or topic." />
        </label>
        <label className="inline">
          Actor <input name="actor" defaultValue={search.actor ?? ""} placeholder="username" />
        </label>
        <label className="inline">
          Topic <input name="topic" defaultValue={search.topic ?? ""} placeholder="topic" />
        </label>
        <button type="submit">Apply</button>
        {filtered && (
          <button type="button" onClick={() => navigate({ search: {} })}>
            Clear
          </button>
        )}
      </form>
      <ErrorNote error={pages.error} />
      {pages.isSuccess && entries.length === 0 && (
        <Empty title="Nothing recorded">
          {filtered ? "No entry matches this filter." : "Administrative actions appear here as they happen."}
        </Empty>
      )}
      {entries.length > 0 && (
        <TableWrap label="Audit trail">
          <table className="audit">
            <caption className="sr-only">Audit entries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Tenant</th>
                <th scope="col">Action</th>
                <th scope="col">On</th>
                <th scope="col">Details</th>
                <th scope="col">Request</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id}>
                  <td>
                    <time dateTime={e.at}>{formatTime(e.at)}</time>
                  </td>
                  <td className="mono">{e.actor ?? "—"}</td>
                  <td>{e.tenant ?? <span className="muted">platform</span>}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td className="mono topic-name" title={e.target}>
                    {e.target}
                  </td>
                  <td className="mono details">{e.details ? JSON.stringify(e.details) : "–"}</td>
                  <td className="mono">{e.request_id ?? "–"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {pages.hasNextPage && (
        <button type="button" onClick={() => pages.fetchNextPage()} disabled={pages.isFetchingNextPage}>
          {pages.isFetchingNextPage ? "Loading…" : "Older entries"}
        </button>
      )}
    </section>
  );
}

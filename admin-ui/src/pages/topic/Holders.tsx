// What the anchors' consoles show beside a queue: who holds its messages now (RabbitMQ's consumers and their
// prefetch, Sidekiq's Busy) and its failures grouped by error class (Sidekiq's failed list), each class with the
// newest such message to open.
import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { consumersQuery, errorClassesQuery } from "../../api/topics";
import { ErrorNote, TableWrap } from "../../components/ui";
import { countOf, formatAge, formatCount } from "../../lib/format";

/** Each consumer (the user whose dequeues took the leases) by consumer group, with what it holds now. */
export function Consumers({ topic, live }: { topic: string; live: number | false }) {
  const held = useQuery({ ...consumersQuery(topic), refetchInterval: live });
  const items = held.data?.items ?? [];
  const holding = items.reduce((n, c) => n + c.holding, 0);
  return (
    <details className="card">
      <summary>
        Consumers holding messages now (
        {held.data ? `${countOf(items.length, "consumer")}, ${countOf(holding, "message")}` : "…"})
      </summary>
      <ErrorNote error={held.error} />
      {held.data && items.length === 0 && (
        <p className="muted">
          No consumer holds a message of {topic} now (a lapsed lease is held by nobody).
        </p>
      )}
      {items.length > 0 && (
        <TableWrap label={`Consumers of ${topic}`}>
          <table>
            <caption className="sr-only">Who holds {topic}'s messages now, most first</caption>
            <thead>
              <tr>
                <th scope="col">Consumer</th>
                <th scope="col">Group</th>
                <th scope="col">Holding</th>
                <th scope="col">Oldest lease</th>
                <th scope="col">Newest lease</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => (
                <tr key={`${c.consumer} ${c.consumer_group ?? ""}`}>
                  <th scope="row" className="mono">
                    {c.consumer || "–"}
                  </th>
                  <td className="mono">{c.consumer_group ?? "–"}</td>
                  <td className="num">{formatCount(c.holding)}</td>
                  <td title={c.oldest_lease_at}>{formatAge(ageSeconds(c.oldest_lease_at))} ago</td>
                  <td title={c.newest_lease_at}>{formatAge(ageSeconds(c.newest_lease_at))} ago</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </details>
  );
}

/** The failed messages (on a DLQ, its dead letters too) by the class of their last error, most first. */
export function ErrorClasses({ topic, live }: { topic: string; live: number | false }) {
  const classes = useQuery({ ...errorClassesQuery(topic), refetchInterval: live });
  const items = classes.data?.items ?? [];
  if (classes.data && items.length === 0) return null;
  return (
    <details className="card" open>
      <summary>
        Errors by class{classes.data ? ` (${countOf(classes.data.scanned, "message")} read)` : ""}
      </summary>
      <ErrorNote error={classes.error} />
      {items.length > 0 && (
        <TableWrap label={`Errors of ${topic} by class`}>
          <table>
            <caption className="sr-only">Error classes of {topic}, most first</caption>
            <thead>
              <tr>
                <th scope="col">Error class</th>
                <th scope="col">Messages</th>
                <th scope="col">Newest</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => (
                <tr key={c.error_class}>
                  <th scope="row" className="mono wrapping">
                    {c.error_class || "(no class)"}
                  </th>
                  <td className="num">{formatCount(c.messages)}</td>
                  <td className="wrapping">
                    <Link
                      to="/topics/$topic"
                      params={{ topic }}
                      search={{ message: c.example_id }}
                      title={c.example_error}
                    >
                      {firstLine(c.example_error)}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </details>
  );
}

function ageSeconds(at: string): number {
  return Math.max(0, (Date.now() - Date.parse(at)) / 1000);
}

function firstLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

// Every topic of the tenant with its depths and rates, live; sortable and filterable.
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { useMemo, useState } from "react";
import type { Schemas } from "../api/client";
import { SERIES_RANGES, type SeriesRange, useSeries, useTenantSeries, useTopics } from "../api/hooks";
import { useMe } from "../api/session";
import { DepthChart } from "../components/Chart";
import { Empty, ErrorNote, TableWrap } from "../components/ui";
import { formatAge, formatCount, formatRate } from "../lib/format";
import { isAdmin } from "../lib/grants";

type Topic = Schemas["TopicSummaryView"];
type Row = Topic & { dlq: number };
export const OVERVIEW_SORTS = [
  "topic",
  "pending",
  "processing",
  "delayed",
  "failed",
  "expired",
  "dlq",
  "age",
  "in",
  "out",
] as const;
export type OverviewSort = (typeof OVERVIEW_SORTS)[number];
type SortKey = OverviewSort;

const COLUMNS: { key: SortKey; label: string; value: (r: Row) => number | string }[] = [
  { key: "topic", label: "Topic", value: (r) => r.topic },
  { key: "pending", label: "Pending", value: (r) => r.pending },
  { key: "processing", label: "Processing", value: (r) => r.processing },
  { key: "delayed", label: "Delayed", value: (r) => r.delayed },
  { key: "failed", label: "Failed", value: (r) => r.failed },
  { key: "expired", label: "Expired", value: (r) => r.expired },
  { key: "dlq", label: "DLQ", value: (r) => r.dlq },
  { key: "age", label: "Oldest pending", value: (r) => r.oldest_pending_age_seconds },
  { key: "in", label: "Enqueued", value: (r) => r.enqueue_rate ?? 0 },
  { key: "out", label: "Acked", value: (r) => r.ack_rate ?? 0 },
];

export function OverviewPage() {
  const topics = useTopics();
  const me = useMe().data;
  const search = useSearch({ from: "/" });
  const navigate = useNavigate({ from: "/" });
  const filter = search.q ?? "";
  const sortKey: SortKey = search.sort ?? "topic";
  const sortDesc = search.desc ?? false;
  const sort = { key: sortKey, desc: sortDesc };
  const setFilter = (q: string) => navigate({ search: (s) => ({ ...s, q: q || undefined }), replace: true });
  const [charted, setCharted] = useState<string | null>(null);

  const rows = useMemo(() => {
    const items = topics.data?.items ?? [];
    const dlq = new Map(
      items.filter((t) => t.topic.endsWith(".dlq")).map((t) => [t.topic.slice(0, -4), t.pending]),
    );
    const needle = filter.trim().toLowerCase();
    const column = COLUMNS.find((c) => c.key === sortKey) ?? COLUMNS[0];
    const list: Row[] = items
      .filter((t) => !needle || t.topic.toLowerCase().includes(needle))
      .map((t) => ({ ...t, dlq: dlq.get(t.topic) ?? 0 }));
    if (column) {
      list.sort((a, b) => {
        const x = column.value(a);
        const y = column.value(b);
        const order = typeof x === "string" ? x.localeCompare(String(y)) : x - Number(y);
        return sortDesc ? -order : order;
      });
    }
    return list;
  }, [topics.data, filter, sortKey, sortDesc]);

  const toggleSort = (key: SortKey) => {
    const desc = sort.key === key ? !sort.desc : key !== "topic";
    navigate({
      search: (s) => ({ ...s, sort: key === "topic" ? undefined : key, desc: desc || undefined }),
      replace: true,
    });
  };

  return (
    <section>
      <div className="row between">
        <h1>Topics</h1>
        <label className="inline">
          <span className="sr-only">Filter topics</span>
          <input
            id="search"
            type="search"
            placeholder="Filter topics (press /)"
            value={filter}
            onChange={(e) => setFilter(e.target.value)}
          />
        </label>
      </div>
      <ErrorNote error={topics.error} />
      {me && (isAdmin(me) || me.grants?.some((g) => g.action === "read" && g.topic_pattern === "*")) && (
        <TenantDashboard live={topics.data?.items} />
      )}
      {topics.isPending && <p className="muted">Loading topics…</p>}
      {topics.data && topics.data.items.length === 0 && (
        <Empty title="No topics yet">
          A topic appears when a message is enqueued into it (<code>POST /api/messages</code>) or when it is
          given a configuration.
        </Empty>
      )}
      {rows.length > 0 && (
        <TableWrap label="Topics">
          <table className="topics">
            <caption className="sr-only">Topics, {rows.length} shown</caption>
            <thead>
              <tr>
                {COLUMNS.map((c) => (
                  <th
                    key={c.key}
                    scope="col"
                    aria-sort={sort.key === c.key ? (sort.desc ? "descending" : "ascending") : "none"}
                  >
                    <button type="button" className="sort" onClick={() => toggleSort(c.key)}>
                      {c.label}
                    </button>
                  </th>
                ))}
                <th scope="col">
                  <span className="sr-only">Chart</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <TopicRow
                  key={r.topic}
                  row={r}
                  charted={charted === r.topic}
                  onChart={() => setCharted((c) => (c === r.topic ? null : r.topic))}
                />
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}

function TopicRow({ row, charted, onChart }: { row: Row; charted: boolean; onChart: () => void }) {
  return (
    <>
      <tr>
        <th scope="row">
          <Link to="/topics/$topic" params={{ topic: row.topic }} className="topic-name" title={row.topic}>
            {row.topic}
          </Link>
          {row.paused && <span className="badge warn">paused</span>}
        </th>
        <td className="num">{formatCount(row.pending)}</td>
        <td className="num">{formatCount(row.processing)}</td>
        <td className="num">{formatCount(row.delayed)}</td>
        <td className={row.failed ? "num bad" : "num"}>{formatCount(row.failed)}</td>
        <td className="num">{formatCount(row.expired)}</td>
        <td className={row.dlq ? "num bad" : "num"}>{formatCount(row.dlq)}</td>
        <td className="num">{formatAge(row.oldest_pending_age_seconds)}</td>
        <td className="num">{formatRate(row.enqueue_rate ?? 0)}</td>
        <td className="num">{formatRate(row.ack_rate ?? 0)}</td>
        <td>
          <button type="button" className="link" aria-expanded={charted} onClick={onChart}>
            {charted ? "Hide chart" : "Chart"}
          </button>
        </td>
      </tr>
      {charted && (
        <tr>
          <td colSpan={11}>
            <TopicChart topic={row.topic} />
          </td>
        </tr>
      )}
    </>
  );
}

export function TopicChart({ topic, range = "1h" }: { topic: string; range?: SeriesRange }) {
  const series = useSeries(topic, true, range);
  const span = SERIES_RANGES.find((r) => r.range === range)?.span ?? range;
  if (series.error) return <ErrorNote error={series.error} />;
  if (!series.data) return <p className="muted">Loading the {span}…</p>;
  return <DepthChart points={series.data.points} title={`${topic}, ${span}`} span={`the ${span}`} />;
}

/** The tenant at a glance: every topic summed, over an hour, a day or a week; what is waiting now and the oldest
 * pending age from the live list (the same figures as its rows), not from the chart's last step. */
function TenantDashboard({ live }: { live: Topic[] | undefined }) {
  const [range, setRange] = useState<SeriesRange>("1h");
  const series = useTenantSeries(range);
  const span = SERIES_RANGES.find((r) => r.range === range)?.span ?? range;
  const points = series.data?.points ?? [];
  const waitingNow = (live ?? []).reduce((n, t) => n + t.pending + t.processing, 0);
  const oldestNow = Math.max(0, ...(live ?? []).map((t) => t.oldest_pending_age_seconds));
  const sum = (f: (p: (typeof points)[number]) => number) => points.reduce((n, p) => n + f(p), 0);
  const seconds = points.length * (series.data?.step_seconds ?? 1);
  return (
    <section className="card" aria-label="All topics at a glance">
      <div className="row between wrap">
        <h2>All topics</h2>
        <RangePicker value={range} onChange={setRange} />
      </div>
      <ErrorNote error={series.error} />
      {series.data && (
        <>
          <dl className="counts" aria-label={`Averages over the ${span}, and now`}>
            <div>
              <dt>enqueued</dt>
              <dd>
                {formatRate(sum((p) => p.enqueue_rate) * (series.data.step_seconds / Math.max(1, seconds)))}
              </dd>
            </div>
            <div>
              <dt>acked</dt>
              <dd>
                {formatRate(sum((p) => p.ack_rate) * (series.data.step_seconds / Math.max(1, seconds)))}
              </dd>
            </div>
            <div>
              <dt>dead-lettered</dt>
              <dd>
                {formatRate(
                  sum((p) => p.dead_letter_rate ?? 0) * (series.data.step_seconds / Math.max(1, seconds)),
                )}
              </dd>
            </div>
            <div>
              <dt>waiting now</dt>
              <dd>{live ? formatCount(waitingNow) : "–"}</dd>
            </div>
            <div>
              <dt>oldest pending now</dt>
              <dd>{formatAge(oldestNow)}</dd>
            </div>
          </dl>
          <DepthChart points={points} title={`All topics, ${span}`} span={`the ${span}`} />
          <p className="muted">
            Rates are averages over the {span}; depths are at the end of each step (UTC).
          </p>
        </>
      )}
    </section>
  );
}

/** Buttons choosing a chart's range (1 hour, 24 hours, 7 days). */
export function RangePicker({ value, onChange }: { value: SeriesRange; onChange: (r: SeriesRange) => void }) {
  return (
    <fieldset className="tabs">
      <legend className="sr-only">Chart range</legend>
      {SERIES_RANGES.map((r) => (
        <button
          key={r.range}
          type="button"
          aria-pressed={value === r.range}
          onClick={() => onChange(r.range)}
        >
          {r.label}
        </button>
      ))}
    </fieldset>
  );
}

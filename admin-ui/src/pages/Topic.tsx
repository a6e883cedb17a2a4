// One topic: its counts and chart, pause and resume, its messages by keyset pages with filters, and every action;
// its History tab (the message log, replay and trim: topic/History.tsx) and its Schema tab (topic/Schema.tsx).
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useNavigate, useParams, useSearch } from "@tanstack/react-router";
import { lazy, Suspense, useRef, useState } from "react";
import { useLiveInterval, useTopics } from "../api/hooks";
import { keys } from "../api/keys";
import { useMe } from "../api/session";
import {
  bulkOnIds,
  logFilter,
  messageFilter,
  setPaused,
  startBulkJob,
  topicMessageQuery,
  topicMessagesQuery,
} from "../api/topics";
import { BulkJobHistory, BulkJobProgress } from "../components/BulkJob";
import { EnqueueForm } from "../components/EnqueueForm";
import { MessageDrawer } from "../components/MessageDrawer";
import { Confirm, Empty, ErrorNote, Field } from "../components/ui";
import { type BulkAction, describeBulk, describeFilter, jobFilter } from "../lib/bulk";
import { countOf, formatCount } from "../lib/format";
import { can, canConsumeAs, consumeGroups, isAdmin } from "../lib/grants";
import { listEnds } from "../lib/order";
import type { TopicSearch } from "../lib/search";
import { useDenseTables } from "../lib/settings";
import { RangePicker, TopicChart } from "./Overview";
import { ConsumerGroups } from "./topic/ConsumerGroups";
import { GroupChip, PinnedGroupsNote } from "./topic/GroupFilter";
import { History } from "./topic/History";
import { Consumers, ErrorClasses } from "./topic/Holders";
import { InFlight } from "./topic/InFlight";
import { MessageTable } from "./topic/MessageTable";
import {
  BULK_IDS,
  type ConfirmRequest,
  DeleteByKey,
  PurgeButton,
  readPace,
  topicTotal,
} from "./topic/TopicActions";

type Action = BulkAction;
// The Schema tab (its diff and its editor) loads when first opened: most visits never show it.
const Schema = lazy(() => import("./topic/Schema").then((m) => ({ default: m.Schema })));
const STATUSES = ["pending", "delayed", "processing", "failed", "expired"] as const;

export function TopicPage() {
  const { topic } = useParams({ from: "/topics/$topic" });
  const search = useSearch({ from: "/topics/$topic" });
  const navigate = useNavigate({ from: "/topics/$topic" });
  const me = useMe().data;
  const queryClient = useQueryClient();
  const topicList = useTopics().data?.items;
  const summary = topicList?.find((t) => t.topic === topic);
  const dlq = topicList?.find((t) => t.topic === `${topic}.dlq`);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirm, setConfirm] = useState<ConfirmRequest | null>(null);
  // A job's pace, typed in its confirmation (messages a second; empty: full speed), read when it starts.
  const [paceText, setPaceText] = useState("");
  const pace = useRef(""); // what the job reads when it starts (its closure was made before the pace was typed)
  const [paceError, setPaceError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dense, setDense] = useDenseTables();
  const [jobId, setJobId] = useState<string | null>(null);
  const [showEnqueue, setShowEnqueue] = useState(false);
  const live = useLiveInterval();

  const filter = messageFilter(search);
  // The History and Schema tabs show the topic's message log or its schema instead of its messages (a dead-letter
  // topic has neither: its messages are the dead letters of a topic that has them).
  const tab = topic.endsWith(".dlq") ? undefined : search.view;
  const history = tab === "history";
  const pages = useInfiniteQuery({
    ...topicMessagesQuery(topic, filter),
    // A refetch of an infinite query fetches every loaded page again, one after another (31 pages: 62 requests
    // in 11 s): live refresh covers the first page only, and pauses once more are loaded.
    refetchInterval: (q) => ((q.state.data?.pages.length ?? 0) > 1 ? false : live),
    enabled: !search.id && !tab,
  });
  const backToTop = () => {
    // Keep the first page only, then refresh it: the page is live again.
    queryClient.setQueryData(keys.topics.messages(topic, filter), (data: typeof pages.data) =>
      data ? { pages: data.pages.slice(0, 1), pageParams: data.pageParams.slice(0, 1) } : data,
    );
    queryClient.invalidateQueries({ queryKey: keys.topics.messages(topic, filter) });
    window.scrollTo(0, 0);
  };
  // The id filter: one message by its primary key, shown when it belongs to this topic.
  const byId = useQuery({
    ...topicMessageQuery(topic, search.id ?? ""),
    enabled: Boolean(search.id) && !tab,
    refetchInterval: live,
  });
  const messages = search.id
    ? byId.data
      ? [byId.data]
      : []
    : (pages.data?.pages.flatMap((p) => p.items) ?? []);
  // The total the filter can have, from the topic's live counts (a key, metadata or group filter: not known).
  const total =
    !summary || filter.key || filter.metadata || filter.consumer_group
      ? null
      : filter.status
        ? summary[filter.status]
        : summary.pending + summary.processing + summary.failed + summary.expired;
  const totalLabel = filter.status ? `${filter.status} (the topic's count)` : "in the topic (its counts)";
  const loaded = search.id ? byId.isSuccess : Boolean(pages.data) && !pages.hasNextPage;
  const scanned = pages.data?.pages.reduce((n, p) => n + p.scanned, 0) ?? 0;

  const refresh = () => queryClient.invalidateQueries({ queryKey: keys.topics.all() });
  const act = useMutation({
    mutationFn: async (run: () => Promise<string | null>) => run(),
    onMutate: () => setNotice(null),
    onSuccess: (said) => setNotice(said),
    onSettled: () => {
      setConfirm(null);
      refresh();
    },
  });
  if (!me) return null;
  const admin = isAdmin(me);
  // A consume grant pinned to a consumer group acts on that group's dead letters only: on the list filtered by it.
  const mayConsume = canConsumeAs(me, topic, filter.consumer_group);
  const pinned = can(me, "consume", topic) ? (consumeGroups(me, topic) ?? []) : [];
  const mayRead = can(me, "read", topic);
  const isDlq = topic.endsWith(".dlq");
  // The topic's max_inflight: its own setting (there is no global default; null: no limit).
  const maxInflight = summary?.config?.max_inflight ?? null;

  const setFilter = (next: TopicSearch) => {
    setSelected(new Set());
    navigate({ search: next });
  };
  // A selection goes in requests of at most BULK_IDS ids (the API's limit), and what happened to each message is
  // said afterwards: how many were done, and why the others were skipped.
  const bulkIds = (action: Action, ids: string[]) => async () => {
    const results = [];
    for (let start = 0; start < ids.length; start += BULK_IDS) {
      results.push(await bulkOnIds(topic, action, ids.slice(start, start + BULK_IDS)));
    }
    setSelected(new Set());
    return describeBulk(action, results);
  };
  const bulkAll = (action: Action) => async () => {
    const typed = readPace(pace.current);
    const job = await startBulkJob(topic, action, jobFilter(filter), "rate" in typed ? typed.rate : null);
    setJobId(job.id);
    return null;
  };
  const ends = listEnds(search.status);
  const filtered = Boolean(
    filter.status || filter.key || filter.metadata || filter.consumer_group || search.id,
  );
  const filterText = filtered ? "matching the current filter" : "in this topic";
  const pause = (paused: boolean) => async () => {
    await setPaused(topic, !paused);
    return null;
  };

  const actions: { action: Action; label: string; allowed: boolean }[] = [
    { action: "retry", label: "Retry", allowed: mayConsume },
    { action: "requeue", label: "Requeue", allowed: mayConsume && isDlq },
    { action: "delete", label: "Delete", allowed: admin },
  ];

  return (
    <section>
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to="/">Topics</Link> / <span>{topic}</span>
      </nav>
      <div className="row between wrap">
        <h1>
          {topic} {summary?.paused && <span className="badge warn">paused</span>}
        </h1>
        <div className="row wrap">
          {can(me, "produce", topic) && !isDlq && (
            <button type="button" onClick={() => setShowEnqueue((s) => !s)} aria-expanded={showEnqueue}>
              Enqueue…
            </button>
          )}
          {mayRead && (
            <Link to="/topics/$topic/config" params={{ topic }} className="button">
              Configuration
            </Link>
          )}
          {admin && (
            // Apart from the others, and a pause is confirmed: it stops every consumer of the topic.
            <button
              type="button"
              className={summary?.paused ? "primary spaced" : "spaced"}
              onClick={() =>
                summary?.paused
                  ? act.mutate(pause(true))
                  : setConfirm({
                      title: `Pause ${topic}?`,
                      body: `Consumers get nothing from ${topic} until it is resumed: dequeues answer empty and long polls wait. Producers still enqueue, and messages already leased can still be acked.`,
                      label: "Pause",
                      run: pause(false),
                    })
              }
              aria-pressed={Boolean(summary?.paused)}
            >
              {summary?.paused ? "Resume" : "Pause…"}
            </button>
          )}
        </div>
      </div>
      <ErrorNote error={act.error} />
      {notice && (
        <p role="status" className="notice row between">
          <span>{notice}</span>
          <button type="button" className="link" onClick={() => setNotice(null)}>
            Dismiss
          </button>
        </p>
      )}
      {summary && (
        <dl className="counts">
          {(["pending", "processing", "delayed", "failed", "expired"] as const).map((s) => (
            <div key={s}>
              <dt>{s}</dt>
              <dd>{formatCount(summary[s])}</dd>
            </div>
          ))}
          {maxInflight !== null && !isDlq && (
            <InFlight topic={topic} processing={summary.processing} limit={maxInflight} />
          )}
          {!isDlq && (
            <div>
              <dt>dead letters</dt>
              <dd>
                {dlq ? (
                  <Link
                    to="/topics/$topic"
                    params={{ topic: `${topic}.dlq` }}
                    className={dlq.pending ? "bad" : ""}
                  >
                    {formatCount(dlq.pending + dlq.processing)}
                  </Link>
                ) : (
                  "0"
                )}
              </dd>
            </div>
          )}
        </dl>
      )}
      {showEnqueue && <EnqueueForm topic={topic} onDone={() => refresh()} />}
      <div className="row between wrap">
        <h2 className="sr-only">Chart</h2>
        <RangePicker
          value={search.range ?? "1h"}
          onChange={(r) => navigate({ search: { ...search, range: r === "1h" ? undefined : r } })}
        />
      </div>
      <TopicChart topic={topic} range={search.range ?? "1h"} />
      {!isDlq && <ConsumerGroups topic={topic} admin={admin} live={live} maxInflight={maxInflight} />}
      <Consumers topic={topic} live={live} />
      {(isDlq || search.status === "failed") && <ErrorClasses topic={topic} live={live} />}

      {!isDlq && (
        <fieldset className="tabs view-tabs">
          <legend className="sr-only">Show</legend>
          <button
            type="button"
            aria-pressed={!tab}
            onClick={() => navigate({ search: { ...search, view: undefined } })}
          >
            Messages
          </button>
          <button
            type="button"
            aria-pressed={history}
            onClick={() => navigate({ search: { ...search, view: "history", message: undefined } })}
          >
            History
          </button>
          <button
            type="button"
            aria-pressed={tab === "schema"}
            onClick={() => navigate({ search: { ...search, view: "schema", message: undefined } })}
          >
            Schema
          </button>
        </fieldset>
      )}
      {tab === "schema" ? (
        <Suspense fallback={<p className="muted">Loading the schema…</p>}>
          <Schema
            topic={topic}
            admin={admin}
            live={live}
            shown={{ version: search.schema_version, compare: search.schema_compare }}
            onShow={(s) =>
              navigate({ search: { ...search, schema_version: s.version, schema_compare: s.compare } })
            }
          />
        </Suspense>
      ) : history ? (
        <History
          topic={topic}
          admin={admin}
          live={live}
          filter={logFilter(search)}
          onFilter={(f) =>
            navigate({ search: { ...search, log_from: f.from_time, log_to: f.to_time, log_key: f.key } })
          }
        />
      ) : (
        <>
          <form
            className="filters row wrap"
            aria-label="Filter messages"
            onSubmit={(e) => {
              e.preventDefault();
              const form = new FormData(e.currentTarget);
              setFilter({
                ...search,
                key: String(form.get("key") || "") || undefined,
                metadata: String(form.get("metadata") || "") || undefined,
                id: String(form.get("id") || "").trim() || undefined,
              });
            }}
          >
            <fieldset className="tabs">
              <legend className="sr-only">Status</legend>
              <button
                type="button"
                aria-pressed={!search.status}
                onClick={() => setFilter({ ...search, status: undefined })}
              >
                All
              </button>
              {STATUSES.map((s) => (
                <button
                  key={s}
                  type="button"
                  aria-pressed={search.status === s}
                  onClick={() => setFilter({ ...search, status: s })}
                >
                  {s}
                </button>
              ))}
            </fieldset>
            <label className="inline">
              Key <input id="search" name="key" defaultValue={search.key ?? ""} placeholder="exact key" />
            </label>
            <label className="inline">
              Id <input name="id" defaultValue={search.id ?? ""} placeholder="message id" className="mono" />
            </label>
            <label className="inline">
              Metadata{" "}
              <input name="metadata" defaultValue={search.metadata ?? ""} placeholder='{"region": "eu"}' />
            </label>
            <button type="submit">Apply</button>
            <label className="inline">
              <input type="checkbox" checked={dense} onChange={(e) => setDense(e.target.checked)} /> Dense
              rows
            </label>
            {search.consumer_group && (
              <GroupChip
                group={search.consumer_group}
                onRemove={() => setFilter({ ...search, consumer_group: undefined })}
              />
            )}
          </form>
          {isDlq && !mayConsume && pinned.length > 0 && <PinnedGroupsNote topic={topic} groups={pinned} />}

          {!search.id && (
            <div className="row wrap">
              <fieldset className="tabs" aria-describedby="list-order">
                <legend className="sr-only">Show from</legend>
                <button
                  type="button"
                  aria-pressed={search.from !== "end"}
                  onClick={() => setFilter({ ...search, from: undefined })}
                >
                  {ends.start}
                </button>
                <button
                  type="button"
                  aria-pressed={search.from === "end"}
                  onClick={() => setFilter({ ...search, from: "end" })}
                >
                  {ends.end}
                </button>
              </fieldset>
              <span id="list-order" className="muted">
                {search.from === "end" ? ends.backward : ends.forward}
              </span>
            </div>
          )}
          {(mayConsume || admin) && !search.id && (
            <fieldset className="bulk row wrap">
              <legend className="sr-only">Bulk actions</legend>
              <span className="muted">
                {selected.size ? `${selected.size} selected:` : `Everything ${filterText}:`}
              </span>
              {actions
                .filter((a) => a.allowed)
                .map((a) => (
                  <button
                    key={a.action}
                    type="button"
                    className={a.action === "delete" ? "danger" : ""}
                    onClick={() =>
                      setConfirm(
                        selected.size
                          ? {
                              title: `${a.label} ${countOf(selected.size, "message")}?`,
                              body: `${a.label} the ${selected.size} selected messages of ${topic}.`,
                              label: a.label,
                              run: bulkIds(a.action, [...selected]),
                            }
                          : {
                              title: `${a.label} ${filtered ? "every message matching the filter" : `all ${countOf(topicTotal(summary), "message")} of ${topic}`}?`,
                              body: filtered
                                ? `${a.label} every message of ${topic} with ${describeFilter(filter)}: it runs on the server in batches, and the number matched shows below as it goes.`
                                : `${a.label} every message of ${topic} (${topicTotal(summary).toLocaleString("en-US")} now): it runs on the server in batches; progress shows below.`,
                              label: `${a.label} all`,
                              run: bulkAll(a.action),
                              paced: true,
                            },
                      )
                    }
                  >
                    {a.label}
                    {selected.size ? " selected" : " all"}
                  </button>
                ))}
              {admin && <PurgeButton topic={topic} summary={summary} onConfirm={setConfirm} />}
              {admin && <DeleteByKey topic={topic} onConfirm={setConfirm} />}
            </fieldset>
          )}
          {jobId && <BulkJobProgress id={jobId} onFinished={refresh} />}
          {(can(me, "consume", topic) || admin) && <BulkJobHistory topic={topic} live={live} />}

          <ErrorNote error={pages.error ?? byId.error} />
          {loaded && messages.length === 0 && (
            <Empty title="No messages here">
              {filtered
                ? "Nothing matches this filter. Clear it to see every message."
                : "Enqueued messages appear here until they are acked."}
            </Empty>
          )}
          {!search.id && messages.length === 0 && pages.hasNextPage && (
            // A key, metadata or group filter reads the topic a window at a time: none of the first windows may
            // match though later messages do. Say so, and go on reading on request.
            <div className="card" role="status">
              <p>
                No match among the first {formatCount(scanned)} messages read; the topic has more. The filter
                is checked a window at a time, in delivery order.
              </p>
              <button
                type="button"
                className="primary"
                onClick={() => pages.fetchNextPage()}
                disabled={pages.isFetchingNextPage}
              >
                {pages.isFetchingNextPage ? "Searching…" : "Search further"}
              </button>
            </div>
          )}
          {messages.length > 0 && (
            <MessageTable
              dense={dense}
              topic={topic}
              showGroup={isDlq && messages.some((m) => m.consumer_group)}
              messages={messages}
              selected={selected}
              onSelected={setSelected}
              onOpen={(id) => navigate({ search: { ...search, message: id } })}
            />
          )}
          {!search.id && messages.length > 0 && (
            <div className="row wrap">
              {pages.hasNextPage && (
                <button
                  type="button"
                  onClick={() => pages.fetchNextPage()}
                  disabled={pages.isFetchingNextPage}
                >
                  {pages.isFetchingNextPage ? "Loading…" : "Load more"}
                </button>
              )}
              <span className="muted">
                {messages.length.toLocaleString("en-US")} shown
                {total !== null ? ` of ${total.toLocaleString("en-US")} ${totalLabel}` : ""},{" "}
                {formatCount(scanned)} read
              </span>
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
          {search.message && (
            <MessageDrawer
              id={search.message}
              topic={topic}
              me={me}
              onClose={() => navigate({ search: { ...search, message: undefined } })}
              onChanged={() => {
                navigate({ search: { ...search, message: undefined } });
                refresh();
              }}
            />
          )}
        </>
      )}
      <Confirm
        open={confirm !== null}
        title={confirm?.title ?? ""}
        confirmLabel={confirm?.label ?? ""}
        danger
        busy={act.isPending}
        onCancel={() => setConfirm(null)}
        onConfirm={() => {
          if (!confirm) return;
          const pace = confirm.paced ? readPace(paceText) : { rate: null };
          setPaceError("error" in pace ? pace.error : null);
          if (!("error" in pace)) act.mutate(confirm.run);
        }}
      >
        <p>{confirm?.body}</p>
        {confirm?.paced && (
          <Field
            label="Pace (messages a second)"
            hint="Empty: as fast as it goes. A redrive at a pace its consumers can take, as SQS's velocity."
            error={paceError}
          >
            {(id, describedBy) => (
              <input
                id={id}
                inputMode="numeric"
                value={paceText}
                placeholder="full speed"
                aria-describedby={describedBy}
                aria-invalid={paceError ? true : undefined}
                onChange={(e) => {
                  setPaceText(e.target.value);
                  pace.current = e.target.value;
                  setPaceError(null);
                }}
              />
            )}
          </Field>
        )}
      </Confirm>
    </section>
  );
}

// A topic's consumer groups (fan-out): what each still owes, its lag and its dead letters (a link to them in the
// topic's DLQ); tenant admins create and delete them.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { type FormEvent, useId, useState } from "react";
import type { Schemas } from "../../api/client";
import { keys } from "../../api/keys";
import { consumerGroupsQuery, createConsumerGroup, deleteConsumerGroup } from "../../api/topics";
import { Confirm, Empty, ErrorNote, Field, TableWrap } from "../../components/ui";
import { fieldErrors } from "../../lib/fieldErrors";
import { formatAge, formatCount, formatInFlight, formatTime } from "../../lib/format";

type Group = Schemas["ConsumerGroupStatsView"];
type Start = Group["start"];

/** Where a new group starts, in a line each (the contract's words). */
const STARTS: { start: Start; says: string }[] = [
  { start: "latest", says: "receives the messages enqueued from now on" },
  { start: "earliest", says: "also receives every message already pending or processing in the topic" },
];

export function ConsumerGroups({
  topic,
  admin,
  live,
  maxInflight = null,
}: {
  topic: string;
  admin: boolean;
  live: number | false;
  /** The topic's max_inflight, each group's own (null: no limit): its processing shows as "N / limit". */
  maxInflight?: number | null;
}) {
  const queryClient = useQueryClient();
  const groups = useQuery({ ...consumerGroupsQuery(topic), refetchInterval: live });
  const [showCreate, setShowCreate] = useState(false);
  const [deleting, setDeleting] = useState<Group | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  // A group's deletion can delete messages (those no other group owes): the topic's counts change too.
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.topics.all() });
  const create = useMutation({
    mutationFn: (body: Schemas["ConsumerGroupBody"]) => createConsumerGroup(topic, body),
    onMutate: () => setNotice(null),
    onSuccess: (g) => {
      setNotice(`Created consumer group ${g.consumer_group} (${g.start}).`);
      invalidate();
    },
  });
  const remove = useMutation({
    mutationFn: (group: string) => deleteConsumerGroup(topic, group),
    onMutate: () => setNotice(null),
    onSuccess: (_, group) => {
      setDeleting(null);
      setNotice(`Deleted consumer group ${group}.`);
      invalidate();
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const target = e.currentTarget;
    const form = new FormData(target);
    create.mutate(
      {
        consumer_group: String(form.get("consumer_group") ?? "").trim(),
        start: form.get("start") === "earliest" ? "earliest" : "latest",
      },
      { onSuccess: () => target.reset() },
    );
  };
  const errors = fieldErrors(create.error, { group_exists: "consumer_group" });
  const list = groups.data?.groups ?? [];
  const headingId = useId();

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="row between wrap">
        <h2 id={headingId}>Consumer groups</h2>
        {admin && (
          <button type="button" onClick={() => setShowCreate((s) => !s)} aria-expanded={showCreate}>
            Create a group…
          </button>
        )}
      </div>
      <ErrorNote error={groups.error} />
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {groups.data && list.length === 0 && (
        <Empty title="No consumer groups">
          Each message goes to one consumer of {topic}. For fan-out, give every service that must see each
          message a group of its own: each group then receives every message, and acks, retries and
          dead-letters it on its own.
        </Empty>
      )}
      {list.length > 0 && (
        <TableWrap label={`Consumer groups of ${topic}`}>
          <table>
            <caption className="sr-only">Consumer groups of {topic}</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">Start</th>
                <th scope="col" className="num">
                  Pending
                </th>
                <th scope="col" className="num">
                  {maxInflight === null ? "Processing" : "Processing / max"}
                </th>
                <th scope="col" className="num">
                  Oldest pending
                </th>
                <th scope="col" className="num">
                  Dead letters
                </th>
                <th scope="col">Created</th>
                {admin && (
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {list.map((g) => (
                <tr key={g.consumer_group}>
                  <th scope="row" className="mono">
                    {g.consumer_group}
                  </th>
                  <td>{g.start}</td>
                  <td className="num">{formatCount(g.pending)}</td>
                  <td className="num">
                    {maxInflight === null
                      ? formatCount(g.processing)
                      : formatInFlight(g.processing, maxInflight)}
                  </td>
                  <td className="num">{formatAge(g.oldest_pending_age_seconds ?? 0)}</td>
                  <td className="num">
                    <Link
                      to="/topics/$topic"
                      params={{ topic: `${topic}.dlq` }}
                      search={{ consumer_group: g.consumer_group }}
                    >
                      {formatCount(g.dead)}
                      <span className="sr-only"> dead letters of {g.consumer_group}</span>
                    </Link>
                  </td>
                  <td>{formatTime(g.created_at)}</td>
                  {admin && (
                    <td>
                      <button type="button" className="danger" onClick={() => setDeleting(g)}>
                        Delete…
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {admin && showCreate && (
        <form className="group-form" onSubmit={submit} aria-label={`Create a consumer group on ${topic}`}>
          <Field
            label="Group name"
            hint="Letters, digits, dots, dashes and underscores; up to 100 characters"
            error={errors.consumer_group ?? null}
          >
            {(id, d) => (
              <input
                id={id}
                name="consumer_group"
                required
                aria-describedby={d}
                autoComplete="off"
                placeholder="billing"
              />
            )}
          </Field>
          <fieldset>
            <legend>Start</legend>
            {STARTS.map((s) => (
              <div key={s.start}>
                <label className="inline">
                  <input type="radio" name="start" value={s.start} defaultChecked={s.start === "latest"} />
                  <span>
                    <strong>{s.start}</strong>: {s.says}
                  </span>
                </label>
              </div>
            ))}
            {errors.start && (
              <div className="field-error" role="alert">
                {errors.start}
              </div>
            )}
          </fieldset>
          {Object.keys(errors).length === 0 && <ErrorNote error={create.error} />}
          <button type="submit" className="primary" disabled={create.isPending}>
            Create group
          </button>
        </form>
      )}
      <Confirm
        open={deleting !== null}
        title={`Delete consumer group ${deleting?.consumer_group ?? ""}?`}
        confirmLabel="Delete group"
        danger
        busy={remove.isPending}
        onCancel={() => {
          setDeleting(null);
          remove.reset();
        }}
        onConfirm={() => deleting && remove.mutate(deleting.consumer_group)}
      >
        {deleting && (
          <p>
            What {deleting.consumer_group} still owes ({deleting.pending.toLocaleString("en-US")} pending,{" "}
            {deleting.processing.toLocaleString("en-US")} processing) is released: the messages stay for the
            other groups, and go once no group owes them. Its consumers are refused from their next request.
            Its {deleting.dead.toLocaleString("en-US")} dead letters stay in {topic}.dlq.
          </p>
        )}
        <ErrorNote error={remove.error} />
      </Confirm>
    </section>
  );
}

// Schedules (periodic messages): every schedule of the tenant with its cron in words, next and last run, and a last
// tick the topic refused, flagged; any user of the tenant reads them. Tenant admins create and edit one (the form:
// pages/schedules/ScheduleForm.tsx, opened by the URL's `create` or `edit`), turn it off and on, and delete it.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { useState } from "react";
import { useLiveInterval } from "../api/hooks";
import { keys } from "../api/keys";
import { deleteSchedule, putSchedule, runSchedule, type Schedule, schedulesQuery } from "../api/schedules";
import { useMe } from "../api/session";
import { Confirm, Empty, ErrorNote, TableWrap } from "../components/ui";
import { describeCron, formatInZone } from "../lib/cron";
import { formatTime } from "../lib/format";
import { can, isAdmin, type Me } from "../lib/grants";
import { filterSchedules, toggledBody } from "../lib/schedules";
import { ScheduleForm } from "./schedules/ScheduleForm";

export function SchedulesPage() {
  const search = useSearch({ from: "/schedules" });
  const navigate = useNavigate({ from: "/schedules" });
  const queryClient = useQueryClient();
  const me = useMe().data;
  const admin = me ? isAdmin(me) : false;
  const schedules = useQuery({ ...schedulesQuery(), refetchInterval: useLiveInterval() });
  const [deleting, setDeleting] = useState<Schedule | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.schedules.all() });
  const toggle = useMutation({
    mutationFn: ({ schedule, enabled }: { schedule: Schedule; enabled: boolean }) =>
      putSchedule(schedule.name, toggledBody(schedule, enabled)),
    onMutate: () => setNotice(null),
    onSuccess: (s) => {
      setNotice(
        s.enabled
          ? `${s.name} is enabled: next run ${formatTime(s.next_run_at)}.`
          : `${s.name} is disabled: it keeps its settings and enqueues nothing until enabled.`,
      );
      invalidate();
    },
  });
  const run = useMutation({
    mutationFn: (s: Schedule) => runSchedule(s.name),
    onMutate: () => setNotice(null),
    onSuccess: (r, s) => {
      setNotice(`${s.name} ran now: message ${r.id} enqueued into ${s.topic}. Its next run is unchanged.`);
      invalidate();
    },
  });
  const remove = useMutation({
    mutationFn: (s: Schedule) => deleteSchedule(s.name),
    onMutate: () => setNotice(null),
    onSuccess: (_, s) => {
      setDeleting(null);
      setNotice(`${s.name} is deleted.`);
      invalidate();
    },
  });

  const items = schedules.data?.items ?? [];
  const rows = filterSchedules(items, search.q ?? "");
  const editing = search.edit ? items.find((s) => s.name === search.edit) : undefined;
  const closeForm = () => navigate({ search: { ...search, edit: undefined, create: undefined } });
  const refused = items.filter((s) => s.last_error).length;

  return (
    <section>
      <div className="row between wrap">
        <h1>Schedules</h1>
        <div className="row wrap">
          <label className="inline">
            <span className="sr-only">Filter schedules by name or topic</span>
            <input
              id="search"
              type="search"
              placeholder="Filter (press /)"
              value={search.q ?? ""}
              onChange={(e) =>
                navigate({ search: { ...search, q: e.target.value || undefined }, replace: true })
              }
            />
          </label>
          {admin && (
            <Link to="/schedules" search={{ ...search, create: true, edit: undefined }} className="button">
              New schedule
            </Link>
          )}
        </div>
      </div>
      <p className="muted">
        A schedule enqueues a message into a topic at each tick of its cron, exactly once per tick across
        every worker. Each message carries <code>skiplock_schedule</code> (the name) and{" "}
        <code>skiplock_tick</code> in its metadata.
      </p>
      <ErrorNote error={schedules.error ?? toggle.error ?? run.error} />
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {admin &&
        (search.create || search.edit) &&
        schedules.data &&
        (search.edit && !editing ? (
          <Empty title={`No schedule named ${search.edit}`}>
            It may have been deleted.{" "}
            <Link to="/schedules" search={{ q: search.q }}>
              Close
            </Link>
          </Empty>
        ) : (
          <ScheduleForm
            key={editing?.name ?? "new"}
            schedule={editing ?? null}
            taken={items.map((s) => s.name)}
            onCancel={closeForm}
            onSaved={(s, newTopic) => {
              setNotice(
                (s.enabled
                  ? `${s.name} is saved: next run ${formatTime(s.next_run_at)}.`
                  : `${s.name} is saved, disabled.`) +
                  (newTopic
                    ? ` The tenant has no topic “${s.topic}” yet: its first tick creates it (check the name if you meant another).`
                    : ""),
              );
              invalidate();
              closeForm();
            }}
          />
        ))}
      {schedules.isPending && <p className="muted">Loading schedules…</p>}
      {schedules.data && items.length === 0 && (
        <Empty title="No schedules yet">
          {admin
            ? "New schedule makes one: a topic, a cron, and the message to enqueue at each tick."
            : "A tenant admin makes them: a topic, a cron, and the message to enqueue at each tick."}
        </Empty>
      )}
      {refused > 0 && (
        <p className="bad" role="status">
          {refused === 1 ? "1 schedule's" : `${refused} schedules'`} last tick was refused: see Last run.
        </p>
      )}
      {items.length > 0 && (
        <TableWrap label="Schedules">
          <table className="schedules">
            <caption className="sr-only">
              Schedules, {rows.length} of {items.length} shown
            </caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Topic</th>
                <th scope="col">Cron</th>
                <th scope="col">Time zone</th>
                <th scope="col">Next run</th>
                <th scope="col">Last run</th>
                <th scope="col">State</th>
                {admin && (
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <ScheduleRow
                  key={s.name}
                  schedule={s}
                  q={search.q}
                  me={me}
                  admin={admin}
                  busy={toggle.isPending || run.isPending}
                  onToggle={() => toggle.mutate({ schedule: s, enabled: !s.enabled })}
                  onRun={() => run.mutate(s)}
                  onDelete={() => setDeleting(s)}
                />
              ))}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={admin ? 8 : 7} className="muted">
                    No schedule's name or topic contains “{search.q}”.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </TableWrap>
      )}
      <Confirm
        open={deleting !== null}
        title={`Delete the schedule ${deleting?.name ?? ""}?`}
        confirmLabel="Delete schedule"
        danger
        busy={remove.isPending}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onCancel={() => {
          setDeleting(null);
          remove.reset();
        }}
      >
        <p>
          It enqueues nothing more into <strong>{deleting?.topic}</strong>. The messages it has already
          enqueued stay.
        </p>
        <ErrorNote error={remove.error} />
      </Confirm>
    </section>
  );
}

function ScheduleRow({
  schedule: s,
  q,
  me,
  admin,
  busy,
  onToggle,
  onRun,
  onDelete,
}: {
  schedule: Schedule;
  /** The list's filter, kept by the Edit link. */
  q: string | undefined;
  me: Me | undefined;
  admin: boolean;
  busy: boolean;
  onToggle: () => void;
  onRun: () => void;
  onDelete: () => void;
}) {
  const described = describeCron(s.cron);
  const zoned = s.timezone !== "UTC";
  return (
    <tr className={s.last_error ? "refused" : undefined}>
      <th scope="row" className="mono">
        {s.name}
      </th>
      <td>
        {me && can(me, "read", s.topic) ? (
          <Link to="/topics/$topic" params={{ topic: s.topic }}>
            {s.topic}
          </Link>
        ) : (
          s.topic
        )}
      </td>
      <td>
        <code>{s.cron}</code>
        {described && <div className="hint">{described}</div>}
      </td>
      <td>{s.timezone}</td>
      <td>
        {s.enabled ? (
          <>
            <time dateTime={s.next_run_at}>{formatTime(s.next_run_at)}</time>
            {zoned && <div className="hint">{formatInZone(s.next_run_at, s.timezone)}</div>}
          </>
        ) : (
          <span className="muted">– (disabled)</span>
        )}
      </td>
      <td>
        {s.last_run_at ? <time dateTime={s.last_run_at}>{formatTime(s.last_run_at)}</time> : "never"}
        {s.last_error && (
          <div className="bad last-error">
            <span className="badge failed">refused</span> {s.last_error}
          </div>
        )}
      </td>
      <td>
        {s.enabled ? <span className="badge ok">enabled</span> : <span className="badge">disabled</span>}
      </td>
      {admin && (
        <td className="actions">
          <div className="row wrap">
            <Link to="/schedules" search={{ q, edit: s.name }} className="button">
              Edit<span className="sr-only"> {s.name}</span>
            </Link>
            <button type="button" onClick={onRun} disabled={busy} title="Enqueue its message once, now">
              Run now<span className="sr-only"> {s.name}</span>
            </button>
            <button type="button" onClick={onToggle} disabled={busy}>
              {s.enabled ? "Disable" : "Enable"}
              <span className="sr-only"> {s.name}</span>
            </button>
            <button type="button" className="danger" onClick={onDelete}>
              Delete<span className="sr-only"> {s.name}</span>
            </button>
          </div>
        </td>
      )}
    </tr>
  );
}

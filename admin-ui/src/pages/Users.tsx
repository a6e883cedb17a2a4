// Users and grants (tenant admins): list, create, change role or password, delete, add and remove grants.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ApiError, type Schemas } from "../api/client";
import { keys } from "../api/keys";
import { useMe } from "../api/session";
import {
  addGrant,
  createUser,
  deleteUser,
  grantsQuery,
  removeGrant,
  updateUser,
  usersQuery,
} from "../api/users";
import { Confirm, Empty, ErrorNote, Field, TableWrap } from "../components/ui";
import { fieldErrors } from "../lib/fieldErrors";

type User = Schemas["UserView"];

/** The server's rule for a password (mq.tenancy.service), said where one is typed. */
const MIN_PASSWORD_LENGTH = 12;
const PASSWORD_RULE = `At least ${MIN_PASSWORD_LENGTH} characters.`;
type Grant = Schemas["GrantView"];

export function UsersPage() {
  const queryClient = useQueryClient();
  const users = useQuery({
    ...usersQuery(),
  });
  const [open, setOpen] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<User | null>(null);
  const [change, setChange] = useState<PendingChange | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const me = useMe().data;
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.users.all() });
  const create = useMutation({
    mutationFn: createUser,
    onSuccess: invalidate,
  });
  const update = useMutation({
    mutationFn: ({ id, body }: { id: string; body: Schemas["UserUpdateBody"]; done: string }) =>
      updateUser(id, body),
    onMutate: () => setNotice(null),
    onSuccess: (_, { done }) => {
      setChange(null);
      setNotice(done);
      invalidate();
    },
  });
  const remove = useMutation({
    mutationFn: deleteUser,
    onSuccess: () => {
      setDeleting(null);
      invalidate();
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const target = e.currentTarget;
    create.mutate(
      {
        username: String(form.get("username")),
        password: String(form.get("password")),
        role: String(form.get("role")) === "tenant_admin" ? "tenant_admin" : "member",
      },
      { onSuccess: () => target.reset() },
    );
  };
  const errors = fieldErrors(create.error);
  return (
    <section>
      <h1>Users</h1>
      <ErrorNote error={users.error} />
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {users.data && users.data.items.length === 0 && <Empty title="No users yet">Create one below.</Empty>}
      {users.data && users.data.items.length > 0 && (
        <TableWrap label="Users">
          <table>
            <caption className="sr-only">Users of this tenant</caption>
            <thead>
              <tr>
                <th scope="col">Username</th>
                <th scope="col">Role</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {users.data.items.map((u) => (
                <UserRow
                  key={u.id}
                  user={u}
                  open={open === u.id}
                  onToggle={() => setOpen(open === u.id ? null : u.id)}
                  onRole={(role) =>
                    setChange({
                      title: `Make ${u.username} ${role === "tenant_admin" ? "a tenant admin" : "a member"}?`,
                      body:
                        role === "tenant_admin"
                          ? `${u.username} may then do everything in this tenant, users and purges included.`
                          : `${u.username} keeps only what its grants allow, from its next request.${
                              me?.username === u.username
                                ? " This is you: you lose this page and every admin action."
                                : ""
                            }`,
                      label: role === "tenant_admin" ? "Make tenant admin" : "Make member",
                      id: u.id,
                      body_: { role },
                      done: `${u.username} is now ${role === "tenant_admin" ? "a tenant admin" : "a member"}.`,
                    })
                  }
                  onPassword={(password) =>
                    setChange({
                      title: `Set a new password for ${u.username}?`,
                      body: `${u.username}'s sessions end everywhere at once; it signs in again with the new password.`,
                      label: "Set password",
                      id: u.id,
                      body_: { password },
                      done: `New password set for ${u.username}; its sessions have ended.`,
                    })
                  }
                  onDelete={() => setDeleting(u)}
                />
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <form className="card" onSubmit={submit} aria-label="Create a user">
        <h2>Create a user</h2>
        <div className="row wrap">
          <Field label="Username" hint="Stored as name@tenant" error={errors.username ?? null}>
            {(id, d) => <input id={id} name="username" required aria-describedby={d} autoComplete="off" />}
          </Field>
          <Field label="Password" hint={PASSWORD_RULE} error={errors.password ?? null}>
            {(id, d) => (
              <input
                id={id}
                name="password"
                type="password"
                required
                aria-describedby={d}
                autoComplete="new-password"
              />
            )}
          </Field>
          <Field label="Role">
            {(id) => (
              <select id={id} name="role" defaultValue="member">
                <option value="member">member (only what its grants allow)</option>
                <option value="tenant_admin">tenant admin (everything in this tenant)</option>
              </select>
            )}
          </Field>
        </div>
        {Object.keys(errors).length === 0 && <ErrorNote error={create.error} />}
        <button type="submit" className="primary" disabled={create.isPending}>
          Create
        </button>
      </form>
      <Confirm
        open={change !== null}
        title={change?.title ?? ""}
        confirmLabel={change?.label ?? ""}
        busy={update.isPending}
        onCancel={() => {
          setChange(null);
          update.reset();
        }}
        onConfirm={() => change && update.mutate({ id: change.id, body: change.body_, done: change.done })}
      >
        <p>{change?.body}</p>
        <ErrorNote error={update.error} />
      </Confirm>
      <Confirm
        open={deleting !== null}
        title={`Delete ${deleting?.username ?? ""}?`}
        confirmLabel="Delete"
        danger
        onCancel={() => setDeleting(null)}
        onConfirm={() => deleting && remove.mutate(deleting.id)}
      >
        <p>Its sessions end at once and its grants are removed.</p>
        <ErrorNote error={remove.error} />
      </Confirm>
    </section>
  );
}

/** A role or password change waiting for its confirmation. */
type PendingChange = {
  title: string;
  body: string;
  label: string;
  id: string;
  body_: Schemas["UserUpdateBody"];
  done: string;
};

function UserRow({
  user,
  open,
  onToggle,
  onRole,
  onPassword,
  onDelete,
}: {
  user: User;
  open: boolean;
  onToggle: () => void;
  onRole: (role: "member" | "tenant_admin") => void;
  onPassword: (password: string) => void;
  onDelete: () => void;
}) {
  const [password, setPassword] = useState("");
  const [tooShort, setTooShort] = useState(false);
  const ruleId = `password-rule-${user.id}`;
  return (
    <>
      <tr>
        <th scope="row" className="mono">
          {user.username}
        </th>
        <td>
          <select
            aria-label={`Role of ${user.username}`}
            value={user.role}
            onChange={(e) => onRole(e.target.value === "tenant_admin" ? "tenant_admin" : "member")}
          >
            <option value="member">member</option>
            <option value="tenant_admin">tenant admin</option>
          </select>
        </td>
        <td className="row">
          {user.role === "member" && (
            <button type="button" onClick={onToggle} aria-expanded={open}>
              Grants
            </button>
          )}
          <input
            type="password"
            aria-label={`New password for ${user.username}`}
            placeholder="new password"
            value={password}
            autoComplete="new-password"
            aria-describedby={ruleId}
            aria-invalid={tooShort ? true : undefined}
            onChange={(e) => {
              setPassword(e.target.value);
              setTooShort(false);
            }}
          />
          <button
            type="button"
            disabled={!password}
            onClick={() => {
              // The rule is said before the confirmation, not after it.
              if (password.length < MIN_PASSWORD_LENGTH) {
                setTooShort(true);
                return;
              }
              onPassword(password);
              setPassword("");
            }}
          >
            Set password
          </button>
          <span
            id={ruleId}
            className={tooShort ? "field-error" : "sr-only"}
            role={tooShort ? "alert" : undefined}
          >
            {PASSWORD_RULE}
          </span>
          <button type="button" className="danger" onClick={onDelete}>
            Delete…
          </button>
        </td>
      </tr>
      {open && (
        <tr>
          <td colSpan={3}>
            <Grants user={user} />
          </td>
        </tr>
      )}
    </>
  );
}

type GrantAction = Schemas["GrantBody"]["action"];

function Grants({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const grants = useQuery(grantsQuery(user.id));
  const [action, setAction] = useState<GrantAction>("read");
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.users.grants(user.id) });
  const add = useMutation({
    mutationFn: (body: Schemas["GrantBody"]) => addGrant(user.id, body),
    onSuccess: invalidate,
  });
  const remove = useMutation({
    mutationFn: (grantId: string) => removeGrant(user.id, grantId),
    onSuccess: () => {
      setRemoving(null);
      invalidate();
    },
  });
  const [removing, setRemoving] = useState<Grant | null>(null);
  // A consume grant pinned to a group no topic of the pattern has is refused (404 not_found): said at its field.
  const groupError =
    add.error instanceof ApiError && add.error.code === "not_found" ? add.error.message : null;
  const grantText = (g: Grant) =>
    `${g.action} on ${g.topic_pattern}${g.consumer_group ? ` as ${g.consumer_group}` : ""}`;
  return (
    <div className="card">
      <h3>Grants of {user.username}</h3>
      <details className="hint">
        <summary>What a grant allows</summary>A pattern <code>*</code> covers every topic,{" "}
        <code>orders.*</code> covers <code>orders</code> and every topic starting with <code>orders.</code>,
        anything else one topic exactly. A grant on <code>orders</code> also covers its dead letters,{" "}
        <code>orders.dlq</code>. <em>produce</em> = enqueue; <em>consume</em> = dequeue, ack, nack, retry and
        requeue; <em>read</em> = browse messages and counts. A <em>consume</em> grant may name a consumer
        group (one that exists on a topic of the pattern): its holder then consumes those topics only as that
        group, and requeues only that group's dead letters.
      </details>
      <ErrorNote error={grants.error ?? (groupError ? null : add.error) ?? remove.error} />
      <ul className="grants">
        {(grants.data?.items ?? []).map((g) => (
          <li key={g.id}>
            <span className="badge">{g.action}</span> <code>{g.topic_pattern}</code>
            {g.consumer_group && (
              <>
                {" "}
                as <code>{g.consumer_group}</code>
              </>
            )}{" "}
            <button
              type="button"
              className="link"
              onClick={() => setRemoving(g)}
              aria-label={`Remove ${grantText(g)}`}
            >
              remove
            </button>
          </li>
        ))}
        {grants.data && grants.data.items.length === 0 && (
          <li className="muted">No grants: this member can do nothing yet.</li>
        )}
      </ul>
      <form
        className="row wrap"
        aria-label={`Add a grant to ${user.username}`}
        onSubmit={(e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          const group = String(form.get("consumer_group") ?? "").trim();
          add.mutate({
            action,
            topic_pattern: String(form.get("pattern")),
            ...(action === "consume" && group ? { consumer_group: group } : {}),
          });
        }}
      >
        <label className="inline">
          Action{" "}
          <select
            name="action"
            value={action}
            onChange={(e) =>
              setAction(
                e.target.value === "produce" || e.target.value === "consume" ? e.target.value : "read",
              )
            }
          >
            <option value="read">read</option>
            <option value="produce">produce</option>
            <option value="consume">consume</option>
          </select>
        </label>
        <label className="inline">
          Topic pattern <input name="pattern" required placeholder="orders.*" />
        </label>
        {action === "consume" && (
          <Field label="Consumer group" error={groupError}>
            {(id, d) => (
              <input id={id} name="consumer_group" placeholder="any (optional)" aria-describedby={d} />
            )}
          </Field>
        )}
        <button type="submit">Add grant</button>
      </form>
      <Confirm
        open={removing !== null}
        title={removing ? `Remove ${grantText(removing)} from ${user.username}?` : ""}
        confirmLabel="Remove grant"
        danger
        busy={remove.isPending}
        onCancel={() => setRemoving(null)}
        onConfirm={() => removing && remove.mutate(removing.id)}
      >
        <p>
          {user.username} loses what this grant allows from its next request: a consumer or producer using
          these credentials is refused (403) where no other grant covers the topic.
        </p>
      </Confirm>
    </div>
  );
}

// Tenants (platform admins): usage against quotas, create, edit quotas, suspend or resume, delete.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ApiError, currentTenant, type Schemas } from "../api/client";
import { keys } from "../api/keys";
import { createTenant, deleteTenant, tenantsQuery, updateTenant } from "../api/tenants";
import { Confirm, Empty, ErrorNote, Field, TableWrap } from "../components/ui";
import { fieldErrors } from "../lib/fieldErrors";
import { countOf, formatCount } from "../lib/format";
import { readFields, wholeNumber } from "../lib/parse";
import { storeTenant } from "../lib/settings";

type Tenant = Schemas["TenantView"];
type Quotas = Schemas["Quotas"];
const QUOTAS: { name: keyof Quotas; label: string }[] = [
  { name: "max_topics", label: "Max topics" },
  { name: "max_messages", label: "Max messages" },
  { name: "max_payload_bytes", label: "Max payload (bytes)" },
  { name: "enqueue_rate", label: "Enqueue rate (/s)" },
  { name: "max_schedules", label: "Max schedules" },
];

/** The quotas a form holds (an empty field: no quota), or the errors of the fields that are not whole numbers. */
function quotasFrom(form: FormData): { quotas: Quotas; errors: Record<string, string> } {
  const { values, errors } = readFields(
    form,
    Object.fromEntries(QUOTAS.map((q) => [q.name, wholeNumber])) as Record<keyof Quotas, typeof wholeNumber>,
  );
  return { quotas: values as Quotas, errors: errors as Record<string, string> };
}

export function TenantsPage() {
  const queryClient = useQueryClient();
  const tenants = useQuery({
    ...tenantsQuery(),
  });
  const [editing, setEditing] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Tenant | null>(null);
  const [suspending, setSuspending] = useState<Tenant | null>(null);
  const [force, setForce] = useState(false);
  const invalidate = () => queryClient.invalidateQueries({ queryKey: keys.tenants.all() });
  const create = useMutation({
    mutationFn: createTenant,
    onSuccess: invalidate,
  });
  const update = useMutation({
    mutationFn: ({ slug, body }: { slug: string; body: Schemas["TenantUpdateBody"] }) =>
      updateTenant(slug, body),
    onSuccess: () => {
      setEditing(null);
      invalidate();
    },
  });
  const remove = useMutation({
    mutationFn: ({ slug, force }: { slug: string; force: boolean }) => deleteTenant(slug, force),
    onSuccess: (_, { slug }) => {
      setDeleting(null);
      setForce(false);
      if (currentTenant() === slug) {
        // The tenant being looked at is gone: start again without one, switcher and pages alike.
        storeTenant(null);
        window.location.assign("/tenants");
        return;
      }
      invalidate();
    },
  });
  const [createInvalid, setCreateInvalid] = useState<Record<string, string>>({});
  const submitCreate = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const { quotas, errors } = quotasFrom(form);
    setCreateInvalid(errors);
    if (Object.keys(errors).length > 0) return create.reset();
    create.mutate(
      { slug: String(form.get("slug")), name: String(form.get("name")), quotas },
      { onSuccess: () => (e.target as HTMLFormElement).reset() },
    );
  };
  const createErrors = { ...fieldErrors(create.error), ...createInvalid };
  const notEmpty = remove.error instanceof ApiError && remove.error.code === "tenant_not_empty";

  return (
    <section>
      <h1>Tenants</h1>
      <ErrorNote error={tenants.error} />
      {tenants.data && tenants.data.items.length === 0 && (
        <Empty title="No tenants">Create the first one below.</Empty>
      )}
      {tenants.data && tenants.data.items.length > 0 && (
        <TableWrap label="Tenants">
          <table>
            <caption className="sr-only">Tenants</caption>
            <thead>
              <tr>
                <th scope="col">Tenant</th>
                <th scope="col">Status</th>
                <th scope="col">Topics</th>
                <th scope="col">Messages</th>
                <th scope="col">Quotas</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {tenants.data.items.map((t) => (
                <tr key={t.slug}>
                  <th scope="row" className="tenant-name" title={`${t.name} (${t.slug})`}>
                    {t.name} <span className="muted mono">{t.slug}</span>
                  </th>
                  <td>
                    <span className={`badge ${t.status === "active" ? "ok" : "warn"}`}>{t.status}</span>
                  </td>
                  <td className="num">
                    {formatCount(t.usage?.topics ?? 0)}
                    {t.quotas.max_topics != null && (
                      <span className="muted"> / {formatCount(t.quotas.max_topics)}</span>
                    )}
                  </td>
                  <td className="num">
                    {formatCount(t.usage?.messages ?? 0)}
                    {t.quotas.max_messages != null && (
                      <span className="muted"> / {formatCount(t.quotas.max_messages)}</span>
                    )}
                  </td>
                  <td className="muted">
                    {QUOTAS.filter((q) => t.quotas[q.name] != null)
                      .map((q) => `${q.label}: ${t.quotas[q.name]}`)
                      .join(", ") || "none"}
                  </td>
                  <td className="row wrap actions">
                    <button type="button" onClick={() => setEditing(editing === t.slug ? null : t.slug)}>
                      Edit quotas
                    </button>
                    <button type="button" onClick={() => setSuspending(t)}>
                      {t.status === "active" ? "Suspend…" : "Resume…"}
                    </button>
                    <button type="button" className="danger" onClick={() => setDeleting(t)}>
                      Delete…
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <ErrorNote error={update.error} />
      {editing && (
        <QuotaForm
          tenant={tenants.data?.items.find((t) => t.slug === editing)}
          error={update.error}
          onSave={(quotas) => update.mutate({ slug: editing, body: { quotas } })}
        />
      )}
      <form className="card" onSubmit={submitCreate} aria-label="Create a tenant">
        <h2>Create a tenant</h2>
        <div className="row wrap">
          <Field label="Slug" hint="Lower-case letters, digits and '-'" error={createErrors.slug ?? null}>
            {(id, d) => <input id={id} name="slug" required aria-describedby={d} />}
          </Field>
          <Field label="Name" error={createErrors.name ?? null}>
            {(id, d) => <input id={id} name="name" required aria-describedby={d} />}
          </Field>
          {QUOTAS.map((q) => (
            <Field key={q.name} label={q.label} hint="Empty: no quota" error={createErrors[q.name] ?? null}>
              {(id, d) => <input id={id} name={q.name} inputMode="numeric" aria-describedby={d} />}
            </Field>
          ))}
        </div>
        {Object.keys(createErrors).length === 0 && <ErrorNote error={create.error} />}
        <button type="submit" className="primary" disabled={create.isPending}>
          Create
        </button>
      </form>
      <Confirm
        open={suspending !== null}
        title={`${suspending?.status === "active" ? "Suspend" : "Resume"} tenant ${suspending?.slug ?? ""}?`}
        confirmLabel={suspending?.status === "active" ? "Suspend" : "Resume"}
        danger={suspending?.status === "active"}
        busy={update.isPending}
        onCancel={() => setSuspending(null)}
        onConfirm={() =>
          suspending &&
          update.mutate(
            {
              slug: suspending.slug,
              body: { status: suspending.status === "active" ? "suspended" : "active" },
            },
            { onSettled: () => setSuspending(null) },
          )
        }
      >
        <p>
          {suspending?.status === "active"
            ? `Every user of ${suspending?.slug} gets 403 from its next request, producers and consumers included; its ${countOf(suspending?.usage?.messages ?? 0, "message")} stay.`
            : `The users of ${suspending?.slug} may work again from their next request.`}
        </p>
      </Confirm>
      <Confirm
        open={deleting !== null}
        title={`Delete tenant ${deleting?.slug ?? ""}?`}
        confirmLabel={force ? "Delete it and its messages" : "Delete"}
        danger
        busy={remove.isPending}
        onCancel={() => {
          setDeleting(null);
          setForce(false);
          remove.reset();
        }}
        onConfirm={() => deleting && remove.mutate({ slug: deleting.slug, force })}
      >
        <p>Its users, grants and configurations go with it.</p>
        {notEmpty && <ErrorNote error={remove.error} />}
        {notEmpty && (
          <label className="inline">
            <input type="checkbox" checked={force} onChange={(e) => setForce(e.target.checked)} /> Also delete
            its {countOf(deleting?.usage?.messages ?? 0, "message")} (force)
          </label>
        )}
      </Confirm>
    </section>
  );
}

function QuotaForm({
  tenant,
  error,
  onSave,
}: {
  tenant: Tenant | undefined;
  error: unknown;
  onSave: (q: Quotas) => void;
}) {
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  if (!tenant) return null;
  const errors = { ...fieldErrors(error), ...invalid };
  return (
    <form
      className="card"
      aria-label={`Quotas of ${tenant.slug}`}
      onSubmit={(e) => {
        e.preventDefault();
        const { quotas, errors: bad } = quotasFrom(new FormData(e.currentTarget));
        setInvalid(bad);
        if (Object.keys(bad).length === 0) onSave(quotas); // nothing is saved while a field does not parse
      }}
    >
      <h2>Quotas of {tenant.name}</h2>
      <div className="row wrap">
        {QUOTAS.map((q) => (
          <Field key={q.name} label={q.label} hint="Empty: no quota" error={errors[q.name] ?? null}>
            {(id, d) => (
              <input
                id={id}
                name={q.name}
                inputMode="numeric"
                defaultValue={tenant.quotas[q.name] ?? ""}
                aria-describedby={d}
              />
            )}
          </Field>
        ))}
      </div>
      <button type="submit" className="primary">
        Save quotas
      </button>
    </form>
  );
}

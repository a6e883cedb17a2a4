// A topic's Schema tab: the version in force (format, version, when, the schema), earlier versions and two of them
// side by side, a payload tried against it; tenant admins add, replace and delete it. A topic without one says
// what a schema does.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useId, useState } from "react";
import { keys } from "../../api/keys";
import { deleteTopicSchema, type TopicSchema, topicSchemaQuery } from "../../api/schemas";
import { Confirm, Empty, ErrorNote } from "../../components/ui";
import { formatLabel } from "../../lib/schemas";
import { SchemaForm } from "./SchemaForm";
import { SchemaVersions, type ShownVersions } from "./SchemaVersions";
import { TryPayload } from "./TryPayload";

export function Schema({
  topic,
  admin,
  live,
  shown,
  onShow,
}: {
  topic: string;
  admin: boolean;
  live: number | false;
  /** The versions the URL names (`schema_version`, `schema_compare`); the one in force when absent. */
  shown: ShownVersions;
  onShow: (shown: ShownVersions) => void;
}) {
  const headingId = useId();
  const queryClient = useQueryClient();
  const current = useQuery({ ...topicSchemaQuery(topic), refetchInterval: live });
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const changed = () => queryClient.invalidateQueries({ queryKey: keys.schemas.all() });
  const remove = useMutation({
    mutationFn: () => deleteTopicSchema(topic),
    onMutate: () => setNotice(null),
    onSuccess: () => {
      setDeleting(false);
      setNotice(`Deleted the schema of ${topic}, every version: its enqueues are no longer checked.`);
      queryClient.setQueryData(keys.schemas.one(topic, null), null);
      onShow({});
      changed();
    },
  });
  const saved = (schema: TopicSchema) => {
    setEditing(false);
    setNotice(
      `Version ${schema.version} is in force: every enqueue into ${topic} is checked against it (on every ` +
        "instance within a second). Messages already stored are not.",
    );
    queryClient.setQueryData(keys.schemas.one(topic, null), schema);
    onShow({});
    changed();
  };
  const schema = current.data;

  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="row between wrap">
        <h2 id={headingId}>Schema</h2>
        {admin && schema && !editing && (
          <div className="row wrap">
            <button type="button" onClick={() => setEditing(true)}>
              Replace…
            </button>
            <button type="button" className="danger" onClick={() => setDeleting(true)}>
              Delete schema…
            </button>
          </div>
        )}
      </div>
      <ErrorNote error={current.error} />
      {notice && (
        <p role="status" className="notice">
          {notice}
        </p>
      )}
      {schema === null && !editing && (
        <Empty title={`${topic} has no schema`}>
          <p>
            Any payload is accepted. With a schema (Avro, or JSON Schema), every enqueue into {topic} (single,
            batch, replay and schedules alike) must be JSON that fits it; one that does not is refused, with
            where and why, and nothing is stored. Each change adds a version, and earlier versions stay
            readable; a replacement can be checked first so that it refuses nothing the version in force
            accepts. Messages already stored are not checked.
          </p>
          {admin ? (
            <div>
              <button type="button" onClick={() => setEditing(true)}>
                Add a schema…
              </button>
            </div>
          ) : (
            <p>A tenant admin can add one.</p>
          )}
        </Empty>
      )}
      {editing && schema !== undefined && (
        <SchemaForm topic={topic} current={schema} onCancel={() => setEditing(false)} onSaved={saved} />
      )}
      {schema && (
        <>
          <SchemaVersions topic={topic} current={schema} shown={shown} onShow={onShow} />
          <TryPayload key={`${schema.version} ${schema.updated_at}`} schema={schema} />
        </>
      )}
      <Confirm
        open={deleting}
        title={`Delete the schema of ${topic}?`}
        confirmLabel="Delete schema"
        danger
        busy={remove.isPending}
        onCancel={() => {
          setDeleting(false);
          remove.reset();
        }}
        onConfirm={() => remove.mutate()}
      >
        {schema && (
          <p>
            Every version goes ({schema.version === 1 ? "version 1" : `versions 1 to ${schema.version}`}, the{" "}
            {formatLabel(schema.format)} schema in force included), and enqueues into {topic} are no longer
            checked. Messages already stored stay as they are. A schema added later starts again at version 1.
          </p>
        )}
        <ErrorNote error={remove.error} />
      </Confirm>
    </section>
  );
}

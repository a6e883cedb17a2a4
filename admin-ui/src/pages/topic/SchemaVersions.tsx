// A topic schema's versions: the one chosen (the version in force unless the URL names another) pretty-printed
// with its format and time, or two side by side, line by line.
import { useQuery } from "@tanstack/react-query";
import { type TopicSchema, topicSchemaQuery } from "../../api/schemas";
import { ErrorNote, TableWrap } from "../../components/ui";
import { formatTime } from "../../lib/format";
import { countChanges, type DiffCell, sideBySide } from "../../lib/schemaDiff";
import { formatLabel, prettySchema, versionsOf } from "../../lib/schemas";

/** The version shown, and the one it is compared with; absent: the version in force, alone. */
export type ShownVersions = { version?: number; compare?: number };

export function SchemaVersions({
  topic,
  current,
  shown,
  onShow,
}: {
  topic: string;
  current: TopicSchema;
  shown: ShownVersions;
  onShow: (shown: ShownVersions) => void;
}) {
  const versions = versionsOf(current.version);
  // A version the URL names that is not there (the schema was deleted and added again) shows the one in force.
  const known = (v: number | undefined) => (v !== undefined && v <= current.version ? v : undefined);
  const version = known(shown.version) ?? current.version;
  const compare = known(shown.compare) === version ? undefined : known(shown.compare);
  const one = useVersion(topic, current, version);
  const other = useVersion(topic, current, compare);
  const show = (next: ShownVersions) =>
    onShow({
      version: next.version === current.version ? undefined : next.version,
      compare: next.compare,
    });

  return (
    <>
      <div className="row wrap">
        <label className="inline">
          Version{" "}
          <select value={version} onChange={(e) => show({ version: Number(e.target.value), compare })}>
            {versions.map((v) => (
              <option key={v} value={v}>
                {v === current.version ? `${v} (in force)` : v}
              </option>
            ))}
          </select>
        </label>
        {versions.length > 1 && (
          <label className="inline">
            Compare with{" "}
            <select
              value={compare ?? ""}
              onChange={(e) =>
                show({ version, compare: e.target.value ? Number(e.target.value) : undefined })
              }
            >
              <option value="">none</option>
              {versions
                .filter((v) => v !== version)
                .map((v) => (
                  <option key={v} value={v}>
                    {v === current.version ? `${v} (in force)` : v}
                  </option>
                ))}
            </select>
          </label>
        )}
      </div>
      <ErrorNote error={one.error ?? other.error} />
      {one.schema && compare === undefined && <OneVersion schema={one.schema} inForce={current.version} />}
      {one.schema && other.schema && (
        <VersionDiff
          topic={topic}
          inForce={current.version}
          older={one.schema.version < other.schema.version ? one.schema : other.schema}
          newer={one.schema.version < other.schema.version ? other.schema : one.schema}
        />
      )}
    </>
  );
}

/** One version: the one in force is at hand; an earlier one is read. */
function useVersion(topic: string, current: TopicSchema, version: number | undefined) {
  const earlier = version !== undefined && version !== current.version;
  const query = useQuery({ ...topicSchemaQuery(topic, version), enabled: earlier });
  return { schema: earlier ? query.data : version === undefined ? undefined : current, error: query.error };
}

function OneVersion({ schema, inForce }: { schema: TopicSchema; inForce: number }) {
  return (
    <>
      <dl className="facts">
        <dt>Format</dt>
        <dd>{formatLabel(schema.format)}</dd>
        <dt>Version</dt>
        <dd>
          {schema.version}
          {schema.version === inForce ? " (in force)" : ` (version ${inForce} is in force)`}
        </dd>
        <dt>Updated</dt>
        <dd>
          <time dateTime={schema.updated_at}>{formatTime(schema.updated_at)}</time>
        </dd>
      </dl>
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard */}
      <pre className="payload" tabIndex={0}>
        {prettySchema(schema.schema_json)}
      </pre>
    </>
  );
}

function VersionDiff({
  topic,
  inForce,
  older,
  newer,
}: {
  topic: string;
  inForce: number;
  older: TopicSchema;
  newer: TopicSchema;
}) {
  const rows = sideBySide(prettySchema(older.schema_json), prettySchema(newer.schema_json));
  const { removed, added } = countChanges(rows);
  const heading = (s: TopicSchema) =>
    `Version ${s.version}${s.version === inForce ? " (in force)" : ""}: ${formatLabel(s.format)}, ${formatTime(s.updated_at)}`;
  return (
    <>
      <p className="muted">
        {removed + added === 0
          ? `Versions ${older.version} and ${newer.version} are the same schema.`
          : `From version ${older.version} to ${newer.version}: ${lines(removed)} removed, ${lines(added)} added.`}
      </p>
      <TableWrap label={`Versions ${older.version} and ${newer.version} of the schema of ${topic}`}>
        <table className="diff">
          <caption className="sr-only">
            Version {older.version} on the left, {newer.version} on the right; removed lines are marked −,
            added lines +
          </caption>
          <thead>
            <tr>
              <th scope="col" colSpan={2}>
                {heading(older)}
              </th>
              <th scope="col" colSpan={2}>
                {heading(newer)}
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a diff's rows have no identity but their position
              <tr key={i}>
                <Cell cell={row.left} />
                <Cell cell={row.right} />
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </>
  );
}

const lines = (n: number) => (n === 1 ? "1 line" : `${n} lines`);

function Cell({ cell }: { cell: DiffCell | null }) {
  if (!cell) return <td colSpan={2} className="diff-none" />;
  const text =
    cell.change === "removed" ? (
      <del>− {cell.text}</del>
    ) : cell.change === "added" ? (
      <ins>+ {cell.text}</ins>
    ) : (
      <span>{`  ${cell.text}`}</span>
    );
  return (
    <>
      <td className="num muted diff-line">{cell.line}</td>
      <td className={`mono diff-${cell.change}`}>{text}</td>
    </>
  );
}

// A topic's messages as a table: select rows for bulk actions, open one in the drawer; a preview of each payload
// and last error, and ids told apart by their random end (a UUIDv7 begins with its time, shared by a burst).
import type { Schemas } from "../../api/client";
import { TableWrap } from "../../components/ui";
import { formatTime, showPayload } from "../../lib/format";

type Message = Schemas["MessageView"];

export function MessageTable({
  topic,
  messages,
  selected,
  onSelected,
  onOpen,
  dense = false,
  showGroup = false,
}: {
  topic: string;
  dense?: boolean;
  /** A dead-letter topic's column of each dead letter's consumer group (shown when one has a group). */
  showGroup?: boolean;
  messages: Message[];
  selected: Set<string>;
  onSelected: (update: Set<string> | ((s: Set<string>) => Set<string>)) => void;
  onOpen: (id: string) => void;
}) {
  return (
    <TableWrap label={`Messages of ${topic}`}>
      <table className={dense ? "messages dense" : "messages"}>
        <caption className="sr-only">Messages of {topic}</caption>
        <thead>
          <tr>
            <th scope="col">
              <input
                type="checkbox"
                aria-label="Select all shown"
                checked={selected.size > 0 && selected.size === messages.length}
                onChange={(e) =>
                  onSelected(e.target.checked ? new Set(messages.map((m) => m.id)) : new Set())
                }
              />
            </th>
            <th scope="col">Id</th>
            <th scope="col">Status</th>
            <th scope="col">Key</th>
            {showGroup && <th scope="col">Consumer group</th>}
            <th scope="col">Priority</th>
            <th scope="col">Retries</th>
            <th scope="col">Payload</th>
            <th scope="col">Last error</th>
            <th scope="col">Created</th>
            <th scope="col">Available</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((m) => (
            <MessageRow
              key={m.id}
              message={m}
              showGroup={showGroup}
              selected={selected.has(m.id)}
              onSelect={(on) =>
                onSelected((s) => {
                  const next = new Set(s);
                  if (on) next.add(m.id);
                  else next.delete(m.id);
                  return next;
                })
              }
              onOpen={() => onOpen(m.id)}
            />
          ))}
        </tbody>
      </table>
    </TableWrap>
  );
}

function MessageRow({
  message: m,
  showGroup,
  selected,
  onSelect,
  onOpen,
}: {
  message: Message;
  showGroup: boolean;
  selected: boolean;
  onSelect: (on: boolean) => void;
  onOpen: () => void;
}) {
  const shown = showPayload(m.payload);
  const preview =
    shown.kind === "hex"
      ? `binary, ${atob(m.payload).length} B`
      : shown.text.replace(/\s+/g, " ").slice(0, 80);
  return (
    <tr className={selected ? "selected" : undefined}>
      <td>
        <input
          type="checkbox"
          aria-label={`Select ${m.id}`}
          checked={selected}
          onChange={(e) => onSelect(e.target.checked)}
        />
      </td>
      <td>
        <button type="button" className="link mono" onClick={onOpen} title={m.id}>
          {m.id.slice(0, 8)}…{m.id.slice(-6)}
        </button>
      </td>
      <td>
        <span className={`badge ${m.status}`}>{m.status}</span>
      </td>
      <td className="mono">{m.key ?? "–"}</td>
      {showGroup && <td className="mono">{m.consumer_group ?? "–"}</td>}
      <td className="num">{m.priority}</td>
      <td className="num">
        {m.retry_count} / {m.max_retries}
      </td>
      <td className="mono preview" title={preview}>
        {preview}
      </td>
      <td className={m.last_error ? "bad preview" : "preview"} title={m.last_error ?? undefined}>
        {m.last_error ?? "–"}
      </td>
      <td>{formatTime(m.created_at)}</td>
      <td>{formatTime(m.available_at)}</td>
    </tr>
  );
}

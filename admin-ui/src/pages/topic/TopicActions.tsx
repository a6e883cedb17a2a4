// A topic's actions that need a confirmation: purge by status, delete by key; and what a confirmation is.
import { useState } from "react";
import type { Schemas } from "../../api/client";
import { deleteByKey, purgeTopic } from "../../api/topics";
import { countOf, formatCount } from "../../lib/format";

/** An action to confirm; `run` answers what to tell the operator afterwards (null: the page shows it already). */
export type ConfirmRequest = {
  title: string;
  body: string;
  label: string;
  run: () => Promise<string | null>;
  /** A job over everything a filter matches: the dialog asks its pace (messages a second, empty: at full speed). */
  paced?: boolean;
};

/** A pace as typed: null when empty (full speed), a whole number from 1 to 10,000, else the error to show. */
export function readPace(text: string): { rate: number | null } | { error: string } {
  const t = text.trim();
  if (!t) return { rate: null };
  if (!/^\d+$/.test(t) || Number(t) < 1 || Number(t) > 10_000) {
    return { error: "A whole number of messages a second, 1 to 10,000; or leave it empty for full speed." };
  }
  return { rate: Number(t) };
}

/** The most ids one bulk request takes (the API's batch limit). */
export const BULK_IDS = 1000;

export function topicTotal(summary: Schemas["TopicSummaryView"] | undefined): number {
  return summary ? summary.pending + summary.processing + summary.failed + summary.expired : 0;
}

export function PurgeButton({
  topic,
  summary,
  onConfirm,
}: {
  topic: string;
  summary: Schemas["TopicSummaryView"] | undefined;
  onConfirm: (c: ConfirmRequest) => void;
}) {
  const [status, setStatus] = useState<"failed" | "expired" | "pending" | "processing" | "all">("failed");
  const count = !summary
    ? 0
    : status === "all"
      ? summary.pending + summary.processing + summary.failed + summary.expired
      : summary[status];
  return (
    <span className="row">
      <label className="inline">
        <span className="sr-only">Purge status</span>
        <select
          aria-label="Purge status"
          value={status}
          onChange={(e) => setStatus(e.target.value as typeof status)}
        >
          {(["failed", "expired", "pending", "processing", "all"] as const).map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <button
        type="button"
        className="danger"
        onClick={() =>
          onConfirm({
            title: `Purge ${formatCount(count)} ${status === "all" ? "" : `${status} `}messages?`,
            body: `This deletes ${count.toLocaleString("en-US")} ${status === "all" ? "" : `${status} `}messages of ${topic} for good.`,
            label: `Purge ${formatCount(count)}`,
            run: async () => {
              const { deleted } = await purgeTopic(topic, status === "all" ? undefined : [status]);
              return `Purged ${deleted.toLocaleString("en-US")} ${status === "all" ? "" : `${status} `}messages of ${topic}.`;
            },
          })
        }
      >
        Purge…
      </button>
    </span>
  );
}

export function DeleteByKey({ topic, onConfirm }: { topic: string; onConfirm: (c: ConfirmRequest) => void }) {
  const [key, setKey] = useState("");
  return (
    <span className="row">
      <label className="inline">
        <span className="sr-only">Key to delete</span>
        <input
          aria-label="Key to delete"
          placeholder="key"
          value={key}
          onChange={(e) => setKey(e.target.value)}
        />
      </label>
      <button
        type="button"
        className="danger"
        disabled={!key}
        onClick={() =>
          onConfirm({
            title: `Delete the messages with key “${key}”?`,
            body: `Every message of ${topic} with this key is deleted, whatever its status.`,
            label: "Delete by key",
            run: async () => {
              const { deleted } = await deleteByKey(topic, key);
              return `Deleted ${countOf(deleted, "message")} with key “${key}”.`;
            },
          })
        }
      >
        Delete by key
      </button>
    </span>
  );
}

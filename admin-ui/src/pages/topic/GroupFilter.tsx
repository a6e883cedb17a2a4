// A dead-letter topic's filter by consumer group: its chip, and where a member whose consume grant pins a group
// may act (that group's dead letters only).
import { Link } from "@tanstack/react-router";

export function GroupChip({ group, onRemove }: { group: string; onRemove: () => void }) {
  return (
    <span className="chip">
      consumer group: <strong className="mono">{group}</strong>
      <button
        type="button"
        className="link"
        aria-label={`Remove the filter consumer group: ${group}`}
        onClick={onRemove}
      >
        ×
      </button>
    </span>
  );
}

/** For a member whose consume grant on the topic is pinned to groups, while the list is not filtered by one. */
export function PinnedGroupsNote({ topic, groups }: { topic: string; groups: string[] }) {
  return (
    <p className="muted">
      Your consume grant on {topic} is for consumer group {groups.join(", ")} only: requeue and retry the dead
      letters of{" "}
      {groups.map((g, i) => (
        <span key={g}>
          {i > 0 && ", "}
          <Link to="/topics/$topic" params={{ topic }} search={{ consumer_group: g }}>
            {g}
          </Link>
        </span>
      ))}{" "}
      from their own list.
    </p>
  );
}

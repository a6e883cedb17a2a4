// A limited topic's messages in flight against its `max_inflight`, among the counts of its page. The contract: at
// most that many of the topic's messages are `processing` with an unexpired lease at once, and on a topic with
// consumer groups, at most that many of each group's (then each group's count is on the groups' table, and a
// count for the whole topic would say nothing: its messages show as pending while any group owes them).
import { useQuery } from "@tanstack/react-query";
import { consumerGroupsQuery } from "../../api/topics";
import { formatInFlight } from "../../lib/format";

export function InFlight({ topic, processing, limit }: { topic: string; processing: number; limit: number }) {
  // The same query as the groups' table below (one request, refreshed by it).
  const groups = useQuery(consumerGroupsQuery(topic));
  const grouped = groups.data ? groups.data.groups.length > 0 : null;
  const most = limit.toLocaleString("en-US");
  return (
    <div>
      <dt>in flight</dt>
      <dd title={`At most ${most} messages leased at once${grouped === false ? "" : " per consumer group"}`}>
        {grouped === false
          ? formatInFlight(processing, limit)
          : grouped
            ? `max ${most} per group`
            : `max ${most}`}
      </dd>
    </div>
  );
}

// A message's whole story, from the server's join of its row, its consumer groups' deliveries and dead letters,
// the message log, its replays and the audit trail (`GET /api/messages/{id}/story`): one time line, oldest first,
// and what each group did with it. Each message it names (a dead letter, a replay, the message a replay or a dead
// letter came from) is a link to that message.
import { useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { type MessageStory as Story, type StoryEvent, storyQuery } from "../api/messages";
import { formatPreciseTime } from "../lib/format";
import { ErrorNote, TableWrap } from "./ui";

export function MessageStory({ id, topic }: { id: string; topic?: string }) {
  const story = useQuery(storyQuery(id, topic));
  return (
    <section aria-labelledby={`story-${id}`}>
      <h3 id={`story-${id}`}>Story</h3>
      <ErrorNote error={story.error} />
      {story.isPending && <p className="muted">Reading its story…</p>}
      {story.data === null && (
        <p className="muted">
          Nothing is known of this message any more: an acked message of a topic that is not replayable leaves
          no trace.
        </p>
      )}
      {story.data && <Told story={story.data} />}
    </section>
  );
}

function Told({ story }: { story: Story }) {
  const groups = story.consumer_groups ?? [];
  return (
    <>
      <p>
        {summary(story)}
        {story.replay_of && (
          <>
            {" "}
            A replay of <MessageLink id={story.replay_of} topic={story.topic.replace(/\.dlq$/, "")} />.
          </>
        )}
        {story.dead_letter_of && (
          <>
            {" "}
            The dead letter of{" "}
            <MessageLink id={story.dead_letter_of} topic={story.topic.replace(/\.dlq$/, "")} /> for one
            consumer group.
          </>
        )}
      </p>
      {groups.length > 0 && (
        <TableWrap label="What each consumer group did">
          <table className="attempts story">
            <caption className="sr-only">What each consumer group did with this message</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">State</th>
                <th scope="col">Retries</th>
                <th scope="col">Dead letter</th>
              </tr>
            </thead>
            <tbody>
              {groups.map((g) => (
                <tr key={g.consumer_group}>
                  <th scope="row" className="mono">
                    {g.consumer_group}
                  </th>
                  <td>
                    <span className={`badge ${g.state}`}>{GROUP_STATES[g.state]}</span>
                  </td>
                  <td className="num">{g.retry_count ?? "–"}</td>
                  <td>
                    {g.dead_letter_id ? (
                      <MessageLink id={g.dead_letter_id} topic={`${story.topic.replace(/\.dlq$/, "")}.dlq`} />
                    ) : (
                      "–"
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <TableWrap label="Its story, oldest first">
        <table className="attempts story">
          <caption className="sr-only">What happened to this message, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">What happened</th>
            </tr>
          </thead>
          <tbody>
            {story.events.map((e, n) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: the events are a fixed list, in the server's order
              <tr key={n}>
                <td className="when">
                  {e.at ? <When at={e.at} /> : <span className="muted">not recorded</span>}
                </td>
                <td>
                  <strong>{what(e)}</strong>
                  {(e.consumer_group || e.by) && (
                    <span className="muted">
                      {e.consumer_group && (
                        <>
                          {" "}
                          · group <span className="mono">{e.consumer_group}</span>
                        </>
                      )}
                      {e.by && (
                        <>
                          {" "}
                          · by <span className="mono">{e.by}</span>
                        </>
                      )}
                    </span>
                  )}
                  <Details event={e} named={named(story, e)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableWrap>
    </>
  );
}

const GROUP_STATES: Record<NonNullable<Story["consumer_groups"]>[number]["state"], string> = {
  pending: "owes it",
  processing: "processing",
  acked: "acked",
  dead_lettered: "dead-lettered",
  not_owed: "never owed it",
  expired: "expired",
};

function summary(story: Story): string {
  if (story.state === "stored" && story.message) {
    return `Stored in ${story.message.topic}, ${story.message.status}.`;
  }
  if (story.state === "acked") return "Acked: only its message log entry is left.";
  if (story.state === "deleted") return "Deleted.";
  return "No longer stored: what is below is from the audit trail.";
}

/** What happened, in words: "Attempt 2: nacked", "Dead-lettered to orders.dlq". */
export function what(e: StoryEvent): string {
  switch (e.kind) {
    case "attempt":
      return `Attempt ${e.attempt ?? "?"}: ${(e.outcome ?? "processing").replace("_", " ")}`;
    case "dead_lettered":
      return e.topic ? `Dead-lettered to ${e.topic}` : "Dead-lettered";
    case "enqueued":
      return e.topic ? `Enqueued to ${e.topic}` : "Enqueued";
    case "requeued":
      return e.topic ? `Requeued to ${e.topic}` : "Requeued";
    case "replayed":
      return "Replayed";
    default:
      return e.kind.charAt(0).toUpperCase() + e.kind.slice(1);
  }
}

/** How an event's other message is named: the one a replay or a dead letter came from, or the one it became. */
function named(story: Story, e: StoryEvent): string {
  if (e.kind === "enqueued") return story.replay_of ? "a replay of " : "as ";
  return "as ";
}

function Details({ event: e, named }: { event: StoryEvent; named: string }) {
  // The message an event names is in the event's topic (a dead letter in the DLQ, a replay in the topic).
  return (
    <>
      {e.error && <pre className="error-text">{e.error}</pre>}
      {e.message_id && e.topic && (
        <div>
          {named}
          <MessageLink id={e.message_id} topic={e.topic} />
        </div>
      )}
      {e.note && <div className="muted">{e.note}</div>}
      {e.kind === "attempt" && e.ended_at && (
        <div className="muted">ended {formatPreciseTime(e.ended_at)}</div>
      )}
    </>
  );
}

/** A time on two short lines, the day above the time of day (the drawer is narrow). */
function When({ at }: { at: string }) {
  const [day, ...time] = formatPreciseTime(at).split(" ");
  return (
    <time dateTime={at}>
      {day}
      <br />
      {time.join(" ")}
    </time>
  );
}

function MessageLink({ id, topic }: { id: string; topic: string }) {
  return (
    <Link to="/topics/$topic" params={{ topic }} search={{ message: id }} className="mono">
      {id}
    </Link>
  );
}

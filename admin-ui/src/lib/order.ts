// A topic's message list read from either end: what each end is called, and the order it shows, per status filter.
type Status = "pending" | "delayed" | "processing" | "failed" | "expired" | undefined;

interface Ends {
  /** The button that starts the list where dequeues start (the API's default order). */
  start: string;
  /** The button that starts it from the other end (`reverse`). */
  end: string;
  /** The order each way, in a sentence. */
  forward: string;
  backward: string;
}

const ENDS: Record<NonNullable<Status> | "all", Ends> = {
  all: {
    start: "Next to deliver",
    end: "Oldest finished",
    forward:
      "Live messages in delivery order (the next to be delivered first), then finished ones newest first.",
    backward: "Finished messages oldest first, then live ones from the last to be delivered (the newest).",
  },
  pending: {
    start: "Next to deliver",
    end: "Newest",
    forward: "The next to be delivered first (highest priority, then oldest).",
    backward: "The last to be delivered first (lowest priority, then newest).",
  },
  delayed: {
    start: "Due soonest",
    end: "Due last",
    forward: "Due soonest first.",
    backward: "Due last first.",
  },
  processing: {
    start: "Lease ends soonest",
    end: "Lease ends last",
    forward: "The lease that ends soonest first.",
    backward: "The lease that ends last first.",
  },
  failed: { start: "Newest", end: "Oldest", forward: "Newest first.", backward: "Oldest first." },
  expired: {
    start: "Newest",
    end: "Oldest",
    forward: "Marked expired newest first, then those past their TTL not yet marked.",
    backward: "Past their TTL and not yet marked first, then marked ones oldest first.",
  },
};

export function listEnds(status: Status): Ends {
  return ENDS[status ?? "all"];
}

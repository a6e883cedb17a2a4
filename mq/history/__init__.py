"""Message history: the message log of replayable topics (kept by the ack statements), its pages, trims and
replays, and the partitions that hold it."""

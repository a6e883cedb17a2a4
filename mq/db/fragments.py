"""SQL fragments both the data plane's statements (`mq.queue.sql`) and the operations' (`mq.db.sql`: the gauges)
build on, so that a message counts the same for the console, the API and the metrics."""

from __future__ import annotations

# What a message is for every reader (browse, get, stats, topics, purge and delete by status, the gauges), whatever
# a reaper has marked yet: a live message past its `expires_at` is `expired` (gone for every purpose), and a
# processing one whose visibility deadline passed (a lapsed lease) is `pending`, available exactly as a pending one
# is. The stored status changes when the message is next taken, or by the expiry reaper.
ALIVE = "(m.expires_at IS NULL OR m.expires_at > now())"
VIEW_STATUS = f"""CASE WHEN m.status IN ('pending', 'processing') AND NOT {ALIVE} THEN 'expired'
    WHEN m.status = 'processing' AND m.available_at <= now() THEN 'pending' ELSE m.status END"""

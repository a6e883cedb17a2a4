"""What the admin console needs beyond the queue's own operations: pausing topics, paging through a topic's
messages by keyset, bulk actions on a selection or a filter, and each topic's depth and rates over the last hour."""

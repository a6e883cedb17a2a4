"""Topic schemas (contract, "Topic schemas"): versions per topic, checked on every enqueue into the topic."""

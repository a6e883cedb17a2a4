"""The audit trail: who did what to which tenant, topic, message set, config, user, grant or schedule."""

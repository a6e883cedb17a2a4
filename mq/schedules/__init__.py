"""Periodic messages (contract, "Periodic messages"): a tenant's schedules, fired by the workers exactly once per
tick."""

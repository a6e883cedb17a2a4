"""The Skiplock process: the `skiplock` command composes the HTTP API (`api`), the scheduled jobs (`workers`) and,
for local runs, embedded Postgres and Redis servers (`skiplock.local`) on the core (`mq`)."""

// Schedules (periodic messages): the tenant's list, read by any of its users; tenant admins create, replace (turning
// one on or off too: the API has no partial update) and delete them. Components use these options and calls,
// never a key or a request of their own.
import { queryOptions } from "@tanstack/react-query";
import { api, type Schemas, unwrap } from "./client";
import { keys } from "./keys";

export type Schedule = Schemas["PeriodicScheduleView"];
export type ScheduleBody = Schemas["PeriodicScheduleBody"];

export const schedulesQuery = () =>
  queryOptions({ queryKey: keys.schedules.all(), queryFn: () => unwrap(api.GET("/api/schedules")) });

/** Create or replace: a replacement starts from its new cron; one that changes what is sent or when forgets its
 * last refusal (`last_error`), while enabling or disabling keeps it. */
export const putSchedule = (name: string, body: ScheduleBody) =>
  unwrap(api.PUT("/api/schedules/{name}", { params: { path: { name } }, body }));

export const deleteSchedule = (name: string) =>
  unwrap(api.DELETE("/api/schedules/{name}", { params: { path: { name } } }));

/** Enqueue the schedule's message once, now, as a producer's enqueue: its id (a refusal is this call's error). */
export const runSchedule = (name: string) =>
  unwrap(api.POST("/api/schedules/{name}/run", { params: { path: { name } } }));

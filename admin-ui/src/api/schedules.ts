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

/** Create or replace: a replacement starts from its new cron and forgets its last refusal (`last_error`). */
export const putSchedule = (name: string, body: ScheduleBody) =>
  unwrap(api.PUT("/api/schedules/{name}", { params: { path: { name } }, body }));

export const deleteSchedule = (name: string) =>
  unwrap(api.DELETE("/api/schedules/{name}", { params: { path: { name } } }));

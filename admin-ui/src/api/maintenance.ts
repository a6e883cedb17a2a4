// The scheduled jobs (platform admins): their calls and cache keys.
import { queryOptions } from "@tanstack/react-query";
import { api, unwrap } from "./client";
import { keys } from "./keys";

export const jobsQuery = () =>
  queryOptions({ queryKey: keys.maintenance.all(), queryFn: () => unwrap(api.GET("/api/admin/jobs")) });

/** The API's check of a cron schedule as it is typed, with its next runs. */
export const schedulePreviewQuery = (schedule: string) =>
  queryOptions({
    queryKey: keys.maintenance.preview(schedule),
    queryFn: () =>
      unwrap(api.GET("/api/admin/delete-reaper/schedule/preview", { params: { query: { schedule } } })),
    retry: false,
  });

export const runExpiryReaper = () => unwrap(api.POST("/api/admin/expiry-reaper/run"));

export const runDeleteReaper = () => unwrap(api.POST("/api/admin/delete-reaper/run"));

export const runArchiveReaper = () => unwrap(api.POST("/api/admin/archive-reaper/run"));

export const setDeleteSchedule = (schedule: string) =>
  unwrap(api.PUT("/api/admin/delete-reaper/schedule", { body: { schedule } }));

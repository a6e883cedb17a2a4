// @vitest-environment jsdom
// (it imports the API client, which reads window.location when loaded)
import { expect, it } from "vitest";
import { ApiError } from "../api/client";
import { fieldErrors } from "./fieldErrors";

it("places the API's validation message at its field", () => {
  const error = new ApiError(400, "invalid_request", "Expected `int` <= 1000 - at `$.max_retries`", "r1", [
    { code: "invalid_request", error: "Expected `int` <= 1000 - at `$.max_retries`" },
  ]);
  expect(fieldErrors(error)).toEqual({ max_retries: "Expected `int` <= 1000" });
  expect(fieldErrors(new ApiError(400, "invalid_request", "schedule: bad minute", "r2"))).toEqual({
    schedule: "schedule: bad minute",
  });
  expect(fieldErrors(new ApiError(409, "key_conflict", "taken", "r3"))).toEqual({});
});

it("places a refusal about one field by its code", () => {
  const taken = new ApiError(
    409,
    "group_exists",
    "This topic already has a consumer group of that name.",
    "r4",
  );
  expect(fieldErrors(taken, { group_exists: "consumer_group" })).toEqual({
    consumer_group: "This topic already has a consumer group of that name.",
  });
  expect(fieldErrors(taken)).toEqual({});
});

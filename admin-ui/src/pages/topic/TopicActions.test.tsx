import { describe, expect, it } from "vitest";
import { readPace } from "./TopicActions";

describe("readPace", () => {
  it("reads a pace, empty as full speed, and refuses anything else in words", () => {
    expect(readPace("")).toEqual({ rate: null });
    expect(readPace(" 20 ")).toEqual({ rate: 20 });
    for (const bad of ["0", "10001", "fast", "2.5", "-3"]) {
      expect(readPace(bad)).toHaveProperty("error");
    }
  });
});

import { describe, expect, it } from "vitest";
import { topicSearch } from "./search";

describe("topicSearch", () => {
  it("keeps a hand-written metadata filter, which the router hands over parsed", () => {
    expect(topicSearch({ metadata: { region: "eu" } }).metadata).toBe('{"region":"eu"}');
    expect(topicSearch({ metadata: '{"region": "eu"}' }).metadata).toBe('{"region": "eu"}');
    expect(topicSearch({ metadata: ["eu"] }).metadata).toBeUndefined();
  });
  it("reads a key that looks like a number or a boolean as the text it is", () => {
    expect(topicSearch({ key: 123 }).key).toBe("123");
    expect(topicSearch({ key: true }).key).toBe("true");
    expect(topicSearch({ log_key: 7 }).log_key).toBe("7");
  });
  it("drops what a page does not expect", () => {
    expect(topicSearch({ status: "nope", range: "5y", view: "x" })).toMatchObject({
      status: undefined,
      range: undefined,
      view: undefined,
    });
  });
});

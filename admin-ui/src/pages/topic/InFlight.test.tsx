// Where a topic's max_inflight shows beside its counts: "in flight N / limit" for a topic without consumer groups,
// the limit per group on a topic with groups, and "N / limit" on each group's row.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, within } from "@testing-library/react";
import type { ReactNode } from "react";
import { describe, expect, it, vi } from "vitest";
import type { Schemas } from "../../api/client";
import { ConsumerGroups } from "./ConsumerGroups";
import { InFlight } from "./InFlight";

type Groups = Schemas["ConsumerGroupsView"];

const api = vi.hoisted(() => ({ groups: { current: null as unknown } }));

vi.mock("@tanstack/react-router", () => ({
  Link: ({ children }: { children: ReactNode }) => <a href="/">{children}</a>,
}));
vi.mock("../../api/topics", () => ({
  consumerGroupsQuery: (topic: string) => ({
    queryKey: ["topics", topic, "groups"],
    queryFn: async () => api.groups.current,
  }),
  createConsumerGroup: vi.fn(),
  deleteConsumerGroup: vi.fn(),
}));

function group(name: string, processing: number): Groups["groups"][number] {
  return {
    consumer_group: name,
    created_at: "2026-01-01T00:00:00Z",
    dead: 0,
    oldest_pending_age_seconds: null,
    pending: 4,
    processing,
    start: "latest",
  };
}

function renderWith(groups: Groups, children: ReactNode) {
  api.groups.current = groups;
  const client = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(<QueryClientProvider client={client}>{children}</QueryClientProvider>);
}

const NO_GROUPS: Groups = { items: [], groups: [] };
const TWO_GROUPS: Groups = {
  items: ["billing", "shipping"],
  groups: [group("billing", 5), group("shipping", 2)],
};

describe("InFlight", () => {
  it("shows the topic's processing count against its limit", async () => {
    renderWith(
      NO_GROUPS,
      <dl>
        <InFlight topic="orders" processing={3} limit={1_000_000} />
      </dl>,
    );
    const count = await screen.findByText("3 / 1,000,000");
    expect(count.closest("div")?.textContent).toBe("in flight3 / 1,000,000");
    expect(count.getAttribute("title")).toBe("At most 1,000,000 messages leased at once");
  });

  it("shows the limit per group once, on a topic with consumer groups", async () => {
    renderWith(
      TWO_GROUPS,
      <dl>
        <InFlight topic="fanout" processing={0} limit={5} />
      </dl>,
    );
    expect(await screen.findByText("max 5 per group")).toBeTruthy();
    expect(screen.queryByText(/\d \/ 5/)).toBeNull();
  });
});

describe("ConsumerGroups", () => {
  const processing = async () => {
    const table = await screen.findByRole("table", { name: "Consumer groups of fanout" });
    // Cells after the group's name: start, pending, processing, ...
    const row = (name: string) => within(table).getByRole("rowheader", { name }).closest("tr") as HTMLElement;
    return ["billing", "shipping"].map((name) => within(row(name)).getAllByRole("cell")[2]?.textContent);
  };

  it("shows each group's processing count against the topic's limit", async () => {
    renderWith(TWO_GROUPS, <ConsumerGroups topic="fanout" admin={false} live={false} maxInflight={5} />);
    expect(await processing()).toEqual(["5 / 5", "2 / 5"]);
    expect(screen.getByRole("columnheader", { name: "Processing / max" })).toBeTruthy();
  });

  it("shows the counts alone without a limit", async () => {
    renderWith(TWO_GROUPS, <ConsumerGroups topic="fanout" admin={false} live={false} />);
    expect(await processing()).toEqual(["5", "2"]);
    expect(screen.getByRole("columnheader", { name: "Processing" })).toBeTruthy();
  });
});

// The topic configuration form as a tenant admin uses it, its router, session and API calls stubbed: the
// "Max in flight" field (max_inflight) read, checked and sent as the other number fields are.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { ReactNode } from "react";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError, type Schemas } from "../api/client";
import { TopicConfigPage } from "./TopicConfig";

type Settings = Schemas["TopicSettingsView"];

const api = vi.hoisted(() => ({ put: vi.fn(), settings: { current: null as unknown } }));

vi.mock("@tanstack/react-router", () => ({
  Link: ({ children }: { children: ReactNode }) => <a href="/">{children}</a>,
  useParams: () => ({ topic: "orders" }),
}));
vi.mock("../api/session", () => ({
  useMe: () => ({ data: { role: "tenant_admin", tenant: "shop", username: "owner@shop", grants: [] } }),
}));
vi.mock("../api/topics", () => ({
  topicConfigQuery: (topic: string) => ({
    queryKey: ["topics", topic, "config"],
    queryFn: async () => api.settings.current,
  }),
  putTopicConfig: api.put,
  resetTopicConfig: vi.fn(),
}));

const DEFAULTS: Settings["defaults"] = {
  dlq_enabled: true,
  expire_to_dlq: false,
  max_depth: null,
  max_inflight: null,
  max_retries: 3,
  message_ttl_seconds: 0,
  replay_window_seconds: null,
  replayable: false,
  retry_backoff_seconds: [1, 5, 30],
  throughput_limit: null,
  visibility_timeout_seconds: 30,
};

function settings(overrides: Schemas["TopicConfig"] | null): Settings {
  return {
    topic: "orders",
    paused: false,
    overrides,
    defaults: DEFAULTS,
    effective: {
      ...DEFAULTS,
      ...Object.fromEntries(Object.entries(overrides ?? {}).filter(([, v]) => v !== null)),
    },
  };
}

async function renderForm(overrides: Schemas["TopicConfig"] | null = null) {
  api.settings.current = settings(overrides);
  const client = new QueryClient({
    defaultOptions: { queries: { retry: false }, mutations: { retry: false } },
  });
  render(
    <QueryClientProvider client={client}>
      <TopicConfigPage />
    </QueryClientProvider>,
  );
  const form = await screen.findByRole("form", { name: "Topic configuration" });
  return { form: within(form), field: within(form).getByLabelText("Max in flight") as HTMLInputElement };
}

/** What the form sent: the body of its one PUT. */
function sent(): Schemas["TopicConfig"] {
  expect(api.put).toHaveBeenCalledTimes(1);
  expect(api.put.mock.calls[0]?.[0]).toBe("orders");
  return api.put.mock.calls[0]?.[1];
}

beforeEach(() => {
  api.put.mockReset();
  api.put.mockImplementation(async (_topic: string, body: Schemas["TopicConfig"]) => body);
});

describe("Max in flight", () => {
  it("says what it does and what is in force", async () => {
    const { field } = await renderForm();
    expect(field.value).toBe("");
    expect(field.getAttribute("placeholder")).toBe("global default: no limit");
    const hint = document.getElementById(field.getAttribute("aria-describedby") ?? "");
    expect(hint?.textContent).toBe(
      "At most this many messages leased at once, per consumer group on a topic with groups; empty = no limit." +
        " In force: no limit (global default).",
    );
  });

  it("saves a whole number from 1 to 1,000,000", async () => {
    const user = userEvent.setup();
    const { form, field } = await renderForm({ max_retries: 0 });
    await user.type(field, "5");
    await user.click(form.getByRole("button", { name: "Save" }));
    expect(await form.findByRole("status")).toHaveProperty("textContent", expect.stringContaining("Saved"));
    expect(sent()).toMatchObject({ max_inflight: 5, max_retries: 0, max_depth: null });

    api.put.mockClear();
    await user.clear(field);
    await user.type(field, "1000000");
    await user.click(form.getByRole("button", { name: "Save" }));
    await vi.waitFor(() => expect(api.put).toHaveBeenCalledTimes(1));
    expect(sent().max_inflight).toBe(1_000_000);
  });

  it("shows its override, and sends null (no limit) when emptied", async () => {
    const user = userEvent.setup();
    const { form, field } = await renderForm({ max_inflight: 7 });
    expect(field.value).toBe("7");
    expect(
      form.getByText(/empty = no limit\. In force: 7 \(override; the default is no limit\)\./),
    ).toBeTruthy();
    await user.clear(field);
    await user.click(form.getByRole("button", { name: "Save" }));
    await vi.waitFor(() => expect(api.put).toHaveBeenCalledTimes(1));
    const body = sent();
    expect(body).toHaveProperty("max_inflight", null);
    expect(Object.keys(body)).toContain("max_inflight");
  });

  it.each([
    ["0", "0 is out of range: 1 to 1,000,000"],
    ["1000001", "1,000,001 is out of range: 1 to 1,000,000"],
    ["2.5", '"2.5" is not a whole number'],
    ["five", '"five" is not a whole number'],
  ])("refuses %s at the field and sends nothing", async (typed, said) => {
    const user = userEvent.setup();
    const { form, field } = await renderForm();
    await user.type(field, typed);
    await user.click(form.getByRole("button", { name: "Save" }));
    expect((await form.findByRole("alert")).textContent).toContain(said);
    expect(field.getAttribute("aria-invalid")).toBe("true");
    expect(field.getAttribute("aria-describedby")).toContain(form.getByRole("alert").id);
    expect(api.put).not.toHaveBeenCalled();
    expect(form.queryByRole("status")).toBeNull();
  });

  it("shows the API's 400 about it at the field", async () => {
    const user = userEvent.setup();
    api.put.mockRejectedValue(
      new ApiError(400, "invalid_request", "Expected `int` <= 1000000 - at `$.max_inflight`", "req-7"),
    );
    const { form, field } = await renderForm();
    await user.type(field, "9");
    await user.click(form.getByRole("button", { name: "Save" }));
    expect((await form.findByRole("alert")).textContent).toBe("Expected `int` <= 1000000");
    expect(field.getAttribute("aria-invalid")).toBe("true");
  });
});

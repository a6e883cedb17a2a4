import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { Empty, ErrorNote, Field } from "./ui";

describe("ErrorNote", () => {
  it("shows the server's message, code and request id", () => {
    render(
      <ErrorNote error={new ApiError(409, "key_conflict", "A pending message has that key", "req-42")} />,
    );
    const alert = screen.getByRole("alert");
    expect(alert.textContent).toContain("A pending message has that key");
    expect(alert.textContent).toContain("key_conflict");
    expect(alert.textContent).toContain("req-42");
  });
  it("renders nothing without an error", () => {
    const { container } = render(<ErrorNote error={null} />);
    expect(container.textContent).toBe("");
  });
});

describe("Field", () => {
  it("labels its input and ties the error to it", () => {
    render(
      <Field label="Max retries" error="must be at most 1000">
        {(id, describedBy) => <input id={id} aria-describedby={describedBy} />}
      </Field>,
    );
    const input = screen.getByLabelText("Max retries");
    expect(input.getAttribute("aria-describedby")).toBeTruthy();
    expect(screen.getByRole("alert").textContent).toBe("must be at most 1000");
  });
});

describe("Empty", () => {
  it("says what to do", () => {
    render(<Empty title="No topics yet">Enqueue a message to create one.</Empty>);
    expect(screen.getByText("No topics yet")).toBeTruthy();
  });
});

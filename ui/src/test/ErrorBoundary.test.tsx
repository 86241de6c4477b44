import { render, screen } from "@testing-library/react";
import { describe, expect, it, vi } from "vitest";
import { ErrorBoundary } from "../components/ErrorBoundary";

function Broken(): never {
  throw new Error("cannot read the suite's epochs");
}

describe("ErrorBoundary", () => {
  it("shows a screen's render error instead of a blank window, and recovers on another route", () => {
    const quiet = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { rerender } = render(
      <ErrorBoundary resetKey="#/charts/x">
        <Broken />
      </ErrorBoundary>,
    );
    expect(screen.getByTestId("screen-error").textContent).toContain("cannot read the suite's epochs");
    rerender(
      <ErrorBoundary resetKey="#/suites">
        <p>suites</p>
      </ErrorBoundary>,
    );
    expect(screen.queryByTestId("screen-error")).toBeNull();
    expect(screen.getByText("suites")).toBeTruthy();
    quiet.mockRestore();
  });
});

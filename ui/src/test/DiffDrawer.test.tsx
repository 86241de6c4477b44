import { act, cleanup, fireEvent, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DiffDrawer } from "../components/DiffDrawer";
import type { LineDiff } from "../generated/LineDiff";
import { renderWithQueries as render } from "./render";

afterEach(cleanup);

// A diff as the server computes it (two lines changed out of four).
const diff: LineDiff = {
  artifact: "knobs",
  from_version: 1,
  to_version: 2,
  basis: "lines",
  added: 1,
  removed: 1,
  lines: [
    { tag: "equal", old_line: 1, new_line: 1, text: "{" },
    { tag: "delete", old_line: 2, new_line: null, text: '  "gain": 1.0,' },
    { tag: "insert", old_line: null, new_line: 2, text: '  "gain": 1.7,' },
    { tag: "equal", old_line: 3, new_line: 3, text: "}" },
  ],
};

describe("DiffDrawer", () => {
  it("loads the transition's diff and shows it unified, then side by side", async () => {
    const load = vi.fn(async () => diff);
    render(<DiffDrawer transition={{ artifact: "knobs", from: 1, to: 2, epoch: 4, type: "update" }} onClose={() => undefined} load={load} />);
    expect(load).toHaveBeenCalledWith("knobs", 1, 2);
    expect(screen.getByRole("heading").textContent).toBe("knobs v1→v2");
    await screen.findByTestId("diff");
    expect(screen.getByText("+1")).toBeTruthy();
    expect(screen.getByText("−1")).toBeTruthy();
    const rows = () => Array.from(document.querySelectorAll(".diff tr"));
    expect(rows()).toHaveLength(4);
    expect(rows()[1].className).toBe("diff-delete");
    fireEvent.click(screen.getByText("Side by side"));
    expect(screen.getByTestId("diff").dataset.mode).toBe("split");
    // The changed line pair now shares one row.
    expect(rows()).toHaveLength(3);
    expect(rows()[1].textContent).toContain('"gain": 1.0,');
    expect(rows()[1].textContent).toContain('"gain": 1.7,');
  });

  it("shows the server's error, and closes on Escape", async () => {
    const onClose = vi.fn();
    const load = vi.fn(async () => {
      throw new Error("artifact `knobs` has no version 9");
    });
    render(<DiffDrawer transition={{ artifact: "knobs", from: 0, to: 9, epoch: 1, type: "rollback" }} onClose={onClose} load={load} />);
    expect(await screen.findByText("artifact `knobs` has no version 9")).toBeTruthy();
    expect(screen.getByText(/Rolled back at the end of epoch 1/)).toBeTruthy();
    act(() => {
      window.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape" }));
    });
    expect(onClose).toHaveBeenCalled();
  });

  it("renders nothing without a transition", () => {
    const { container } = render(<DiffDrawer transition={null} onClose={() => undefined} load={async () => diff} />);
    expect(container.innerHTML).toBe("");
  });
});

import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PathInput } from "../components/PathInput";

afterEach(cleanup);

describe("PathInput", () => {
  it("offers no picker in a browser: the path is typed", () => {
    const onChange = vi.fn();
    render(<PathInput kind="suite" value="" onChange={onChange} testId="p" native={false} />);
    expect(screen.queryByTestId("browse")).toBeNull();
    fireEvent.change(screen.getByTestId("p"), { target: { value: "/x/a.suite.yaml" } });
    expect(onChange).toHaveBeenCalledWith("/x/a.suite.yaml");
  });

  it("fills the field with the picked path, and keeps it when the picker is cancelled", async () => {
    const onChange = vi.fn();
    const pick = vi.fn().mockResolvedValueOnce("/home/me/s.suite.yaml").mockResolvedValueOnce(null);
    render(<PathInput kind="suite" value="" onChange={onChange} native pick={pick} />);
    fireEvent.click(screen.getByTestId("browse"));
    await waitFor(() => expect(onChange).toHaveBeenCalledWith("/home/me/s.suite.yaml"));
    expect(pick).toHaveBeenCalledWith("suite");
    fireEvent.click(screen.getByTestId("browse"));
    await waitFor(() => expect(pick).toHaveBeenCalledTimes(2));
    expect(onChange).toHaveBeenCalledTimes(1);
  });

  it("shows why the picker failed", async () => {
    const pick = vi.fn().mockRejectedValue(new Error("no display"));
    render(<PathInput kind="folder" value="" onChange={() => undefined} native pick={pick} />);
    fireEvent.click(screen.getByTestId("browse"));
    expect(await screen.findByText("no display")).toBeTruthy();
    expect(pick).toHaveBeenCalledWith("folder");
  });
});

// Names the server writes in backticks are shown as code, never with the
// backticks; text whose backticks do not pair is shown as written.
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { Ticked } from "../components/common";

afterEach(cleanup);

describe("Ticked", () => {
  it("shows each backticked name as code", () => {
    const { container } = render(<Ticked text="update `knobs` from v3 (`gain`)" />);
    expect(container.textContent).toBe("update knobs from v3 (gain)");
    expect([...container.querySelectorAll("code")].map((c) => c.textContent)).toEqual(["knobs", "gain"]);
  });
  it("leaves text with an unpaired backtick as it is", () => {
    const { container } = render(<Ticked text="a ` lone tick" />);
    expect(container.textContent).toBe("a ` lone tick");
    expect(container.querySelectorAll("code")).toHaveLength(0);
  });
});

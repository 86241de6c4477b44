// The pill that says how a launch's runs ended (Live's cards, the Suites
// screen): its words for one run and for many, and when it says nothing.
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { Outcome } from "../components/common";

afterEach(cleanup);

describe("a launch's run outcome", () => {
  const said = (ended: number, failed: number) => render(<Outcome runs={{ ended, failed }} />).container.textContent;

  it("counts the failed runs, in words that fit one run as well as many", () => {
    expect(said(32, 32)).toBe("all 32 runs failed");
    expect(said(1, 1)).toBe("its one run failed");
    expect(said(5, 2)).toBe("2 of 5 runs failed");
  });

  it("says nothing when no run failed or none ended", () => {
    expect(said(4, 0)).toBe("");
    expect(said(0, 0)).toBe("");
    expect(render(<Outcome runs={null} />).container.textContent).toBe("");
  });
});

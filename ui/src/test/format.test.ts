import { describe, expect, it } from "vitest";
import { fmtCost, fmtModelSpend } from "../lib/format";
import { changedVersions } from "../components/ExampleFlips";

describe("model spend", () => {
  const spend = { calls: 2, prompt_tokens: 900, completion_tokens: 300, failures: 0, seconds: 4.25 };

  it("shows the cost beside the tokens with the digits that matter", () => {
    expect(fmtCost(0)).toBe("0");
    expect(fmtCost(12.345)).toBe("12.35");
    expect(fmtCost(0.0045)).toBe("0.004500");
    expect(fmtModelSpend({ ...spend, cost: 0.0045, unpriced_calls: 0 })).toBe("2 model calls, 1,200 tokens, cost 0.004500, 4.3 s");
  });

  it("says when the cost is unknown or only a lower bound", () => {
    expect(fmtModelSpend({ ...spend, cost: 0, unpriced_calls: 2 })).toContain("cost unknown (2 unpriced calls)");
    expect(fmtModelSpend({ ...spend, cost: 0.5, unpriced_calls: 1 })).toContain("cost ≥ 0.5000");
  });
});

describe("the versions two epochs ran with", () => {
  it("names only what changed", () => {
    expect(changedVersions({ prompt: 1, aso_config: 0 }, { prompt: 2, aso_config: 0 })).toBe("prompt v1 → v2");
    expect(changedVersions({ a: 0 }, { a: 0 })).toBe("the same artifact versions");
    expect(changedVersions({}, { new_one: 0 })).toBe("new_one v– → v0");
  });
});

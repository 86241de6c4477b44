import { describe, expect, it } from "vitest";
import { fmtCost, fmtEvidence, fmtModelSpend } from "../lib/format";
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

describe("paired evidence", () => {
  it("states the pairs, the interval and the sign test as the command line does", () => {
    const e = { pairs: 12, better: 7, worse: 2, tied: 3, mean_gain: 0.05, low: 0.01, high: 0.09, sign_p: 0.1797 };
    expect(fmtEvidence(e)).toBe("7 of 12 pairs better, 2 worse; gain +0.0500 (95% interval +0.0100 … +0.0900), sign test p = 0.18");
  });

  it("leaves out what one pair or no difference cannot say", () => {
    const one = { pairs: 1, better: 0, worse: 0, tied: 1, mean_gain: 0, low: 0, high: 0, sign_p: 1 };
    expect(fmtEvidence(one)).toBe("0 of 1 pair better, 0 worse; gain +0.0000");
    const worse = { pairs: 3, better: 0, worse: 3, tied: 0, mean_gain: -0.2, low: -0.3, high: -0.1, sign_p: 0.25 };
    expect(fmtEvidence(worse)).toContain("gain -0.2000 (95% interval -0.3000 … -0.1000)");
  });
});

describe("the versions two epochs ran with", () => {
  it("names only what changed", () => {
    expect(changedVersions({ prompt: 1, aso_config: 0 }, { prompt: 2, aso_config: 0 })).toBe("prompt v1 → v2");
    expect(changedVersions({ a: 0 }, { a: 0 })).toBe("the same artifact versions");
    expect(changedVersions({}, { new_one: 0 })).toBe("new_one v– → v0");
  });
});

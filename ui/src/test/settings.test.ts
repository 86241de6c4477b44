import { describe, expect, it } from "vitest";
import { refusedField, refusedFields } from "../screens/Settings";

describe("a settings refusal told in the form's words", () => {
  it("names a limit by its label and keeps the requirement", () => {
    expect(refusedField("the model-call limits are not usable: attempts must be from 1 to 10, not 0")).toEqual({
      field: "attempts",
      text: "Attempts per call must be from 1 to 10, not 0",
    });
  });

  it("maps a reply budget to its role's field", () => {
    expect(refusedField("the model-call limits are not usable: max_tokens.proposer must be from 1 to 200000, not 0")?.field).toBe(
      "tokens.proposer",
    );
  });

  it("names a price by its model and side, even when the model's name has dots", () => {
    expect(refusedField("the model prices are not usable: prices.gpt-4.1.output_per_million must be at least 0, not -1")).toEqual({
      field: "price.gpt-4.1.output",
      text: "Output price of gpt-4.1 must be at least 0, not -1",
    });
  });

  it("leaves a message about no field alone", () => {
    expect(refusedField("the LLM endpoint is not usable: no scheme")).toBeNull();
  });

  it("names every field of a refusal that lists several, one per line", () => {
    const { wrong, texts } = refusedFields(
      "the model-call limits are not usable: timeout_secs must be a number of seconds above 0 and at most 3600, not 0\n" +
        "the model-call limits are not usable: attempts must be from 1 to 10, not 0\n" +
        "the model prices are not usable: prices.big.input_per_million must be a price per million tokens from 0 to 1000, not -1",
    );
    expect(Object.keys(wrong).sort()).toEqual(["attempts", "price.big.input", "timeout_secs"]);
    expect(texts).toHaveLength(3);
  });
});

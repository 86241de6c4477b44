import { describe, expect, it } from "vitest";
import type { DiffLine } from "../generated/DiffLine";
import { fold, sideBySide } from "../lib/diff";

const eq = (n: number, text = `l${n}`): DiffLine => ({ tag: "equal", old_line: n, new_line: n, text });
const del = (n: number, text: string): DiffLine => ({ tag: "delete", old_line: n, new_line: null, text });
const ins = (n: number, text: string): DiffLine => ({ tag: "insert", old_line: null, new_line: n, text });

describe("sideBySide", () => {
  it("faces deletions with the insertions that follow them, line by line", () => {
    const rows = sideBySide([eq(1), del(2, "a"), del(3, "b"), ins(2, "A"), eq(4)]);
    expect(rows.map((r) => [r.left?.text ?? null, r.right?.text ?? null])).toEqual([
      ["l1", "l1"],
      ["a", "A"],
      ["b", null],
      ["l4", "l4"],
    ]);
  });
  it("puts a lone insertion against an empty cell", () => {
    expect(sideBySide([ins(1, "new")]).map((r) => [r.left, r.right?.text])).toEqual([[null, "new"]]);
  });
});

describe("fold", () => {
  it("keeps three lines of context around changes and counts what it hides", () => {
    const lines = [...Array.from({ length: 10 }, (_, i) => eq(i + 1)), ins(11, "x"), ...Array.from({ length: 5 }, (_, i) => eq(i + 11))];
    const out = fold(lines, (l) => l.tag !== "equal");
    expect(out[0]).toEqual({ kind: "fold", hidden: 7 });
    expect(out.filter((o) => o.kind === "row")).toHaveLength(7);
    expect(out[out.length - 1]).toEqual({ kind: "fold", hidden: 2 });
  });
  it("folds nothing when everything is near a change", () => {
    expect(fold([ins(1, "a"), eq(1)], (l) => l.tag !== "equal").every((o) => o.kind === "row")).toBe(true);
  });
});

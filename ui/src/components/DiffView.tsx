// A line diff, unified or side by side, with unchanged stretches folded.
import { useMemo } from "react";
import type { DiffLine } from "../generated/DiffLine";
import type { LineDiff } from "../generated/LineDiff";
import { fold, sideBySide, type SideRow } from "../lib/diff";

const mark = { equal: " ", delete: "−", insert: "+" } as const;

function Cell({ line }: { line: DiffLine | null }) {
  if (!line) return <td className="diff-empty" colSpan={2} />;
  const n = line.tag === "insert" ? line.new_line : line.old_line;
  return (
    <>
      <td className="diff-num">{n}</td>
      <td className={`diff-text diff-${line.tag}`}>{line.text || " "}</td>
    </>
  );
}

export function DiffView({ diff, mode }: { diff: LineDiff; mode: "unified" | "split" }) {
  const unified = useMemo(() => fold(diff.lines, (l) => l.tag !== "equal"), [diff]);
  const split = useMemo(() => fold(sideBySide(diff.lines), (r: SideRow) => r.left?.tag !== "equal" || r.right?.tag !== "equal"), [diff]);
  if (diff.added === 0 && diff.removed === 0) {
    return (
      <p className="muted">
        v{diff.from_version} and v{diff.to_version} have the same {diff.basis === "fields" ? "fields and values" : "content"}.
      </p>
    );
  }
  const foldRow = (hidden: number, cols: number, key: number) => (
    <tr key={key} className="diff-fold">
      <td colSpan={cols}>⋯ {hidden} unchanged line{hidden === 1 ? "" : "s"}</td>
    </tr>
  );
  return (
    <div className="diff" data-testid="diff" data-mode={mode} data-basis={diff.basis}>
      {diff.basis === "fields" && (
        <p className="muted small diff-basis" data-testid="diff-basis">
          Compared field by field: both versions are shown with their keys in sorted order, so a reordering is no change.
        </p>
      )}
      <table>
        <tbody>
          {mode === "unified"
            ? unified.map((f, i) =>
                f.kind === "fold" ? (
                  foldRow(f.hidden, 4, i)
                ) : (
                  <tr key={i} className={`diff-${f.row.tag}`}>
                    <td className="diff-num">{f.row.old_line ?? ""}</td>
                    <td className="diff-num">{f.row.new_line ?? ""}</td>
                    <td className="diff-mark">{mark[f.row.tag]}</td>
                    <td className={`diff-text diff-${f.row.tag}`}>{f.row.text || " "}</td>
                  </tr>
                ),
              )
            : split.map((f, i) =>
                f.kind === "fold" ? (
                  foldRow(f.hidden, 4, i)
                ) : (
                  <tr key={i}>
                    <Cell line={f.row.left} />
                    <Cell line={f.row.right} />
                  </tr>
                ),
              )}
        </tbody>
      </table>
    </div>
  );
}

export function DiffModeToggle({ mode, onChange }: { mode: "unified" | "split"; onChange: (m: "unified" | "split") => void }) {
  return (
    <div className="toggle" role="group" aria-label="diff layout">
      <button className={mode === "unified" ? "on" : ""} onClick={() => onChange("unified")}>
        Unified
      </button>
      <button className={mode === "split" ? "on" : ""} onClick={() => onChange("split")}>
        Side by side
      </button>
    </div>
  );
}

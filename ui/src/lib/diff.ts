// Shaping the server's line diff (computed once in Rust with `similar`) for
// the two views: unified, and side by side. Long unchanged stretches fold so
// the change stays on screen.
import type { DiffLine } from "../generated/DiffLine";

export interface SideRow {
  left: DiffLine | null;
  right: DiffLine | null;
}

/**
 * Pairs a diff's lines into side-by-side rows: an equal line sits on both
 * sides; a run of deletions faces the run of insertions that follows it, line
 * by line, and whatever is left over faces an empty cell.
 */
export function sideBySide(lines: DiffLine[]): SideRow[] {
  const rows: SideRow[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.tag === "equal") {
      rows.push({ left: line, right: line });
      i += 1;
      continue;
    }
    const deleted: DiffLine[] = [];
    const inserted: DiffLine[] = [];
    while (i < lines.length && lines[i].tag === "delete") deleted.push(lines[i++]);
    while (i < lines.length && lines[i].tag === "insert") inserted.push(lines[i++]);
    for (let k = 0; k < Math.max(deleted.length, inserted.length); k++) {
      rows.push({ left: deleted[k] ?? null, right: inserted[k] ?? null });
    }
  }
  return rows;
}

export type Folded<T> = { kind: "row"; row: T } | { kind: "fold"; hidden: number };

/**
 * Keeps `context` unchanged rows around every change and folds longer
 * unchanged stretches into one marker saying how many rows it hides.
 */
export function fold<T>(rows: T[], changed: (row: T) => boolean, context = 3): Folded<T>[] {
  const keep = rows.map(() => false);
  rows.forEach((r, i) => {
    if (changed(r)) for (let k = Math.max(0, i - context); k <= Math.min(rows.length - 1, i + context); k++) keep[k] = true;
  });
  const out: Folded<T>[] = [];
  let hidden = 0;
  rows.forEach((row, i) => {
    if (keep[i]) {
      if (hidden) out.push({ kind: "fold", hidden });
      hidden = 0;
      out.push({ kind: "row", row });
    } else {
      hidden += 1;
    }
  });
  if (hidden) out.push({ kind: "fold", hidden });
  return out;
}

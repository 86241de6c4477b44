// What the Watched Folders screen shows about each file, as pure functions:
// a file's state in words and the counts in each folder's header. Tested in ui/src/test/watch.test.ts.
import type { WatchedFileView } from "../generated/WatchedFileView";
import type { WatchedFolderView } from "../generated/WatchedFolderView";
import type { PlannedCommand } from "../generated/PlannedCommand";

/** The path of a file relative to its folder (the folder itself is the card's title). */
export function relativePath(path: string, folder: string): string {
  const prefix = folder.endsWith("/") ? folder : `${folder}/`;
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/** What a file's status means for a person, in a few words. */
export function statusText(f: WatchedFileView): string {
  switch (f.status) {
    case "invalid":
      return `${f.issues.length} issue${f.issues.length === 1 ? "" : "s"} — fix the file; it is checked again when saved`;
    case "failed":
      return f.error?.split("\n")[0] ?? "could not be registered";
    case "awaiting_approval":
      return `waits for a person to approve ${f.approval?.commands.length ?? 0} command${f.approval?.commands.length === 1 ? "" : "s"}`;
    case "rejected":
      return "running its commands was rejected; edit the file to ask again";
    case "ready":
      if (f.run_mode === "auto" && f.run) return `registered; its run is ${f.run.status}`;
      return f.approval ? "registered; its commands are approved" : "registered; runs no commands";
    case "removed":
      return "the file is gone; its suite and runs are kept";
    default:
      return f.status;
  }
}

/** The badge class of a status (reusing the colours of the other screens). */
export function statusClass(status: string): string {
  switch (status) {
    case "ready":
      return "finished";
    case "awaiting_approval":
      return "pending";
    case "invalid":
    case "failed":
      return "failed";
    case "rejected":
      return "cancelled";
    default:
      return status;
  }
}

export interface FolderCounts {
  total: number;
  ready: number;
  waiting: number;
  problems: number;
  removed: number;
}

/** How many of a folder's files are in each broad state. */
export function folderCounts(folder: WatchedFolderView, files: WatchedFileView[]): FolderCounts {
  const mine = files.filter((f) => f.folder_id === folder.id);
  const count = (p: (f: WatchedFileView) => boolean) => mine.filter(p).length;
  return {
    total: mine.length,
    ready: count((f) => f.status === "ready"),
    waiting: count((f) => f.status === "awaiting_approval"),
    problems: count((f) => f.status === "invalid" || f.status === "failed"),
    removed: count((f) => f.status === "removed"),
  };
}

/** Files with problems and pending approvals first, then by path; removed files last. */
export function sortFiles(files: WatchedFileView[]): WatchedFileView[] {
  const rank: Record<string, number> = { invalid: 0, failed: 0, awaiting_approval: 1, rejected: 2, ready: 3, removed: 4 };
  return [...files].sort((a, b) => (rank[a.status] ?? 3) - (rank[b.status] ?? 3) || a.path.localeCompare(b.path));
}

/** Who runs a command, e.g. `task alpha · overseer tests`. */
export function commandOrigin(c: PlannedCommand): string {
  return `task ${c.task} · ${c.role}${c.label ? ` ${c.label}` : ""}`;
}

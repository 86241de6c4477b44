import { cleanup, fireEvent, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { WatchedFileView } from "../generated/WatchedFileView";
import type { WatchedFolders } from "../generated/WatchedFolders";
import { issueText } from "../lib/format";
import { folderCounts, relativePath, sortFiles, statusText } from "../lib/watch";

const api = vi.hoisted(() => ({ watched: vi.fn(), add_watched_folder: vi.fn(), remove_watched_folder: vi.fn() }));
vi.mock("../api", () => ({ api, transport: { pickPath: vi.fn() }, inDesktopApp: () => false }));
import { Watch } from "../screens/Watch";

import { renderWithQueries as render } from "./render";

afterEach(cleanup);

const folder = { id: 1, path: "/drop", added_at: "2026-01-01T00:00:00Z", exists: true, files: 3 };

function file(over: Partial<WatchedFileView>): WatchedFileView {
  return {
    id: 1,
    folder_id: 1,
    path: "/drop/a.task.yaml",
    kind: "task",
    status: "ready",
    suite: "a",
    suite_id: 1,
    run_mode: "manual",
    content_hash: "0123456789ab",
    issues: [],
    error: null,
    approval: null,
    run: null,
    first_seen_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    removed_at: null,
    ...over,
  };
}

const invalid = file({
  id: 2,
  path: "/drop/nested/broken.suite.yaml",
  kind: "suite",
  status: "invalid",
  suite: null,
  suite_id: null,
  issues: [
    { file: "/drop/nested/broken.suite.yaml", line: 5, column: 14, field: "tasks[0].timeout", message: "-1 is not a positive number of seconds", hint: "use e.g. `timeout: 60`" },
  ],
});
const waiting = file({
  id: 3,
  path: "/drop/mark.task.yaml",
  status: "awaiting_approval",
  suite: "mark",
  run_mode: "auto",
  approval: { intervention_id: 7, status: "pending", commands: [{ task: "mark", role: "command", label: null, command: "python3 score.py --fast" }] },
});

describe("watched-file helpers", () => {
  it("write located issues the way editors link them", () => {
    expect(issueText(invalid.issues[0])).toBe("/drop/nested/broken.suite.yaml:5:14: field `tasks[0].timeout`: -1 is not a positive number of seconds");
    expect(relativePath("/drop/nested/x.task.yaml", "/drop")).toBe("nested/x.task.yaml");
    expect(relativePath("/elsewhere/x.task.yaml", "/drop")).toBe("/elsewhere/x.task.yaml");
  });

  it("say what each state means and count them per folder", () => {
    expect(statusText(invalid)).toMatch(/^1 issue — fix the file/);
    expect(statusText(waiting)).toBe("waits for a person to approve 1 command");
    expect(statusText(file({}))).toBe("registered; runs no commands");
    expect(statusText(file({ run_mode: "auto", run: { id: 1, status: "finished", launch_id: 2, suite_id: 1, queued_at: "", started_at: null, finished_at: null, error: null } }))).toBe(
      "registered; its run is finished",
    );
    const removed = file({ id: 4, status: "removed" });
    expect(folderCounts(folder, [file({}), invalid, waiting, removed])).toEqual({ total: 4, ready: 1, waiting: 1, problems: 1, removed: 1 });
    expect(sortFiles([removed, file({}), waiting, invalid]).map((f) => f.id)).toEqual([2, 3, 1, 4]);
  });
});

describe("the Watched Folders screen", () => {
  beforeEach(() => {
    api.watched.mockReset();
    api.add_watched_folder.mockReset();
  });

  it("shows an empty state that says how to start, and adds a folder", async () => {
    const empty: WatchedFolders = { watching: true, folders: [], files: [] };
    api.watched.mockResolvedValue(empty);
    api.add_watched_folder.mockResolvedValue(folder);
    render(<Watch />);
    expect((await screen.findByTestId("empty")).textContent).toMatch(/No watched folders yet[\s\S]*attractor watch DIR/);
    fireEvent.change(screen.getByTestId("watch-path"), { target: { value: " /drop " } });
    fireEvent.click(screen.getByTestId("watch-add"));
    await waitFor(() => expect(api.add_watched_folder).toHaveBeenCalledWith({ request: { path: "/drop" } }));
    expect(api.watched).toHaveBeenCalledTimes(2);
  });

  it("lists files with located issues and sends pending approvals to the inbox", async () => {
    api.watched.mockResolvedValue({ watching: true, folders: [folder], files: [file({}), invalid, waiting] });
    const { container } = render(<Watch />);
    await screen.findByTestId("files");
    const rows = [...container.querySelectorAll("tr[data-file]")].map((r) => r.getAttribute("data-file"));
    expect(rows).toEqual(["nested/broken.suite.yaml", "mark.task.yaml", "a.task.yaml"]);
    // Issues of an invalid file are open from the start.
    expect(screen.getByTestId("issues").textContent).toContain("/drop/nested/broken.suite.yaml:5:14: field `tasks[0].timeout`: -1 is not a positive number");
    const toInbox = screen.getByTestId("to-inbox");
    expect(toInbox.getAttribute("href")).toBe("#/inbox");
    expect(toInbox.textContent).toContain("#7");
    // The command list is one click away on the file itself.
    const row = container.querySelector('tr[data-file="mark.task.yaml"]') as HTMLElement;
    fireEvent.click(row.querySelector("button") as HTMLElement);
    expect(screen.getByTestId("commands").textContent).toContain("python3 score.py --fast");
    expect(screen.getByTestId("folder").textContent).toMatch(/3 files · 1 ready · 1 awaiting approval · 1 with problems/);
  });
});

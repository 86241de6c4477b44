// Watched Folders: the folders the watcher keeps an eye on, every suite or
// task file found in them with its state, invalid files' issues located to
// file:line:column, and approvals waiting in the inbox. Files update live.
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import { useLive } from "../App";
import { Commands } from "../components/Commands";
import { Confirm, Empty, ErrorNote } from "../components/common";
import { Issues } from "../components/Issues";
import { PathInput } from "../components/PathInput";
import type { WatchedFileView } from "../generated/WatchedFileView";
import type { WatchedFolders } from "../generated/WatchedFolders";
import type { WatchedFolderView } from "../generated/WatchedFolderView";
import { fmtTime } from "../lib/format";
import { useLiveQuery } from "../lib/query";
import { folderCounts, relativePath, sortFiles, statusClass, statusText } from "../lib/watch";

function FileRow({ file, folder }: { file: WatchedFileView; folder: string }) {
  const name = relativePath(file.path, folder);
  const [open, setOpen] = useState(file.status === "invalid");
  return (
    <>
      <tr data-file={name} data-status={file.status} className={file.status === "removed" ? "muted" : ""}>
        <td>
          <code>{name}</code>
          <div className="muted small">
            {file.kind} file · {file.content_hash}
            {file.run_mode === "auto" && <> · run: auto</>}
          </div>
        </td>
        <td>
          {file.suite ? (
            <a href={`#/charts/${encodeURIComponent(file.suite)}`}>
              <b>{file.suite}</b>
            </a>
          ) : (
            <span className="muted">–</span>
          )}
        </td>
        <td>
          <span className={`badge status-${statusClass(file.status)}`}>{file.status.replace("_", " ")}</span>
          <div className="small muted">{statusText(file)}</div>
        </td>
        <td>
          {file.approval?.status === "pending" && (
            <a className="button primary" href="#/inbox" data-testid="to-inbox" title="approve or reject in the inbox">
              Review #{file.approval.intervention_id} in the inbox
            </a>
          )}
          {file.approval && file.approval.status !== "pending" && (
            <span className="small">
              commands {file.approval.status} (#{file.approval.intervention_id})
            </span>
          )}
          {file.run && (
            <div className="small">
              run <span className={`badge status-${file.run.status}`}>{file.run.status}</span>
              {file.run.launch_id !== null && file.run.status === "running" && (
                <>
                  {" "}
                  <a href="#/live">watch it</a>
                </>
              )}
              {file.run.error && <div className="error">{file.run.error.split("\n")[0]}</div>}
            </div>
          )}
        </td>
        <td className="small muted">{fmtTime(file.updated_at)}</td>
        <td>
          {(file.issues.length > 0 || file.error || file.approval) && (
            <button onClick={() => setOpen((o) => !o)} aria-expanded={open}>
              {open ? "Hide" : "Details"}
            </button>
          )}
        </td>
      </tr>
      {open && (
        <tr className="details-row">
          <td colSpan={6}>
            {file.issues.length > 0 && (
              <Issues issues={file.issues} />
            )}
            {file.error && <p className="error">{file.error}</p>}
            {file.approval && (
              <>
                <p className="small muted">
                  Approving #{file.approval.intervention_id} allows exactly these commands for this content:
                </p>
                <Commands commands={file.approval.commands} />
              </>
            )}
          </td>
        </tr>
      )}
    </>
  );
}

function Folder({ folder, files, onRemove }: { folder: WatchedFolderView; files: WatchedFileView[]; onRemove: () => void }) {
  const counts = folderCounts(folder, files);
  const mine = sortFiles(files.filter((f) => f.folder_id === folder.id));
  return (
    <div className="card" data-testid="folder" data-path={folder.path}>
      <header className="screen-head">
        <h3>
          <code>{folder.path}</code>
        </h3>
        {!folder.exists && <span className="badge status-failed">missing on disk</span>}
        <span className="muted small">
          {counts.total} file{counts.total === 1 ? "" : "s"} · {counts.ready} ready
          {counts.waiting > 0 && <> · {counts.waiting} awaiting approval</>}
          {counts.problems > 0 && <span className="error"> · {counts.problems} with problems</span>}
          {counts.removed > 0 && <> · {counts.removed} removed</>}
        </span>
        <span className="spacer" />
        <button className="danger" onClick={onRemove}>
          Stop watching
        </button>
      </header>
      {mine.length === 0 ? (
        <p className="muted">
          No suite or task files here yet. Drop a <code>*.suite.yaml</code> or <code>*.task.yaml</code> into the folder and it appears
          at once.
        </p>
      ) : (
        <table className="table compact" data-testid="files">
          <thead>
            <tr>
              <th>File</th>
              <th>Suite</th>
              <th>Status</th>
              <th>Approval · run</th>
              <th>Checked</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {mine.map((f) => (
              <FileRow key={f.id} file={f} folder={folder.path} />
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function Watch() {
  const { tick } = useLive();
  const queries = useQueryClient();
  const { data, error: loadError } = useLiveQuery<WatchedFolders>(["watched"], tick, () => api.watched());
  const [error, setError] = useState<string | null>(null);
  const [path, setPath] = useState("");
  const [busy, setBusy] = useState(false);
  const [removing, setRemoving] = useState<WatchedFolderView | null>(null);
  // A change shows at once, before the live feed says so.
  const reload = () => queries.invalidateQueries({ queryKey: ["watched"] });

  const add = async () => {
    setBusy(true);
    setError(null);
    try {
      await api.add_watched_folder({ request: { path: path.trim() } });
      setPath("");
      await reload();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const remove = async (f: WatchedFolderView) => {
    setRemoving(null);
    try {
      await api.remove_watched_folder({ id: f.id });
      await reload();
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <section>
      <header className="screen-head">
        <h2>Watched folders</h2>
      </header>
      <form
        className="card form watch-add"
        onSubmit={(e) => {
          e.preventDefault();
          if (path.trim()) add();
        }}
      >
        <label>
          Folder to watch
          <PathInput
            kind="folder"
            testId="watch-path"
            value={path}
            onChange={setPath}
            placeholder="/path/to/a/folder of *.suite.yaml and *.task.yaml files"
          />
          <span className="hint">
            Remembered across restarts. New or changed files are validated and registered at once; a file that would run commands waits
            for your approval in the inbox.
          </span>
        </label>
        <div className="actions">
          <button className="primary" type="submit" data-testid="watch-add" disabled={busy || !path.trim()}>
            Watch folder
          </button>
        </div>
      </form>
      <ErrorNote error={error ?? loadError} />
      {data && !data.watching && (
        <p className="error">This server is not watching folders; start it with `attractor serve` to follow them.</p>
      )}
      {data && data.folders.length === 0 && (
        <Empty title="No watched folders yet">
          <p>
            Add a folder above (or run <code>attractor watch DIR</code>). Every <code>*.suite.yaml</code> and <code>*.task.yaml</code> dropped
            into it is checked and registered as a suite; mistakes are shown with their file, line and column, and the file is never
            changed.
          </p>
          <p>A task file is one task on its own, registered as a one-task suite named after the file:</p>
          <pre>{`# add.task.yaml
run: auto            # queue one run once its commands are approved
task: Add the two numbers the harness prints.
command: python3 "$ATTRACTOR_SUITE_DIR/add.py"`}</pre>
        </Empty>
      )}
      {data?.folders.map((f) => (
        <Folder key={f.id} folder={f} files={data.files} onRemove={() => setRemoving(f)} />
      ))}
      {removing && (
        <Confirm
          text={
            <p>
              Stop watching <code>{removing.path}</code>? Its suites, runs and answers stay; adding the folder again resumes it.
            </p>
          }
          confirm="Stop watching"
          onConfirm={() => remove(removing)}
          onCancel={() => setRemoving(null)}
        />
      )}
    </section>
  );
}

// The Suites screen's Export: the suite's report (loss curve, per-task loss
// and artifact timeline as SVG and PNG, with an index.html and the epoch
// table) — the same files `attractor report` writes.
//
// In a browser the server sends it as a zip archive to save. In the desktop
// app the shell writes the files into a folder the person chooses: typed
// into the inline field (a suggestion is filled in) or picked with the native
// folder dialog behind its Browse… button.
import { useState } from "react";
import { inDesktopApp, transport } from "../api";
import type { ReportWritten } from "../generated/ReportWritten";
import type { SuiteItem } from "../generated/SuiteItem";
import { saveFile, suggestedReportDir } from "../lib/export";

/** A question for a folder, answered by the inline field (or a dialog, later). */
interface FolderQuestion {
  suggested: string;
  answer: (dir: string | null) => void;
}

export function ExportReport({ suite, onError }: { suite: SuiteItem; onError: (message: string) => void }) {
  const [question, setQuestion] = useState<FolderQuestion | null>(null);
  const [busy, setBusy] = useState(false);
  const [written, setWritten] = useState<ReportWritten | null>(null);

  /**
   * Asks where the report goes; resolves with the folder, or null when the
   * person cancels. For now an inline path field answers it.
   */
  const pickFolder = (suggested: string) =>
    new Promise<string | null>((answer) => setQuestion({ suggested, answer }));

  const run = async () => {
    setWritten(null);
    if (!inDesktopApp()) {
      const { blob, fileName } = await transport.reportZip(suite.id, suite.name);
      saveFile(blob, fileName);
      return;
    }
    const dir = await pickFolder(suggestedReportDir(suite.name));
    if (!dir) return;
    setWritten(await transport.exportReport(suite.id, dir));
  };

  const start = () => {
    setBusy(true);
    run()
      .catch((e: Error) => onError(`Export of ${suite.name}: ${e.message}`))
      .finally(() => setBusy(false));
  };

  return (
    <>
      <button onClick={start} disabled={busy} data-testid="export" title="The charts and the epoch table as a report (SVG, PNG, index.html)">
        {busy && !question ? "Exporting…" : "Export"}
      </button>
      {question && (
        <FolderField
          suggested={question.suggested}
          onDone={(dir) => {
            setQuestion(null);
            question.answer(dir);
          }}
        />
      )}
      {written && (
        <div className="small muted export-done" data-testid="export-done">
          Report written: <code>{written.index}</code>
        </div>
      )}
    </>
  );
}

/** The folder question in the desktop app: a path field with the native picker behind Browse…, Write and Cancel. */
function FolderField({ suggested, onDone }: { suggested: string; onDone: (dir: string | null) => void }) {
  const [dir, setDir] = useState(suggested);
  return (
    <form
      className="export-folder"
      data-testid="export-folder"
      onSubmit={(e) => {
        e.preventDefault();
        onDone(dir.trim() || null);
      }}
    >
      <label>
        Folder for the report
        <input
          value={dir}
          onChange={(e) => setDir(e.target.value)}
          onKeyDown={(e) => e.key === "Escape" && onDone(null)}
          autoFocus
          spellCheck={false}
        />
      </label>
      <button
        type="button"
        data-testid="browse"
        onClick={() =>
          transport
            .pickPath("folder")
            .then((picked) => picked && setDir(picked))
            .catch(() => undefined)
        }
      >
        Browse…
      </button>
      <button type="submit" className="primary" disabled={!dir.trim()}>
        Write report
      </button>
      <button type="button" onClick={() => onDone(null)}>
        Cancel
      </button>
    </form>
  );
}

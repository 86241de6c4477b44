// Small shared pieces: empty states, errors, status badges (a launch's run
// outcome among them), confirmation, text with `code` spans.
import type { ReactNode } from "react";
import type { LaunchRuns } from "../generated/LaunchRuns";
import { Modal } from "./Modal";

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty" data-testid="empty">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

/**
 * Text the server writes with names in backticks ("update `knobs` from v3"),
 * the names shown as code rather than with the backticks.
 */
export function Ticked({ text }: { text: string }) {
  const parts = text.split("`");
  // An odd count of backticks: not a pairing to trust, shown as written.
  if (parts.length % 2 === 0) return <>{text}</>;
  return <>{parts.map((p, i) => (i % 2 === 1 ? <code key={i}>{p}</code> : p))}</>;
}

export function ErrorNote({ error }: { error: string | null }) {
  return error ? (
    <p className="error" role="alert">
      {error}
    </p>
  ) : null;
}

/**
 * How a launch's runs ended, beside its status: a launch can finish with
 * every run failed (a crashing command, a wrong path), which is not the
 * green "finished" of one that did its work.
 */
export function Outcome({ runs, title }: { runs: LaunchRuns | null; title?: string }) {
  if (runs === null || runs.ended === 0 || runs.failed === 0) return null;
  const every = runs.failed === runs.ended;
  return (
    <span className={`badge ${every ? "status-failed" : "status-partial"}`} title={title} data-testid="runs-outcome" data-every-failed={every}>
      {every ? (runs.ended === 1 ? "its one run failed" : `all ${runs.ended} runs failed`) : `${runs.failed} of ${runs.ended} runs failed`}
    </span>
  );
}

export function Status({ status }: { status: string }) {
  return <span className={`badge status-${status}`}>{status.replaceAll("_", " ")}</span>;
}

export function Confirm({ text, confirm, onConfirm, onCancel }: {
  text: ReactNode;
  confirm: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  // Esc and a click outside cancel, as in every dialog people know.
  return (
    <Modal label="confirm" onClose={onCancel}>
      <div>{text}</div>
      <div className="actions">
        <button onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button className="primary" onClick={onConfirm}>
          {confirm}
        </button>
      </div>
    </Modal>
  );
}

/**
 * "← Newer · where we are · Older →" over newest-first pages (page 0 the
 * newest); nothing when everything fits on one page.
 */
export function Pager({ label, testId, page, pages, onPage, children }: { label: string; testId: string; page: number; pages: number; onPage: (page: number) => void; children: ReactNode }) {
  if (pages <= 1) return null;
  return (
    <nav className="pager" aria-label={label} data-testid={testId}>
      <button onClick={() => onPage(page - 1)} disabled={page === 0}>
        ← Newer
      </button>
      <span className="muted small">{children}</span>
      <button onClick={() => onPage(page + 1)} disabled={page >= pages - 1}>
        Older →
      </button>
    </nav>
  );
}

// The side drawer the artifact timeline opens: the line diff of one
// transition (v{from}→v{to}) of one artifact, fetched from the server.
import { useEffect, useState } from "react";
import { api } from "../api";
import type { LineDiff } from "../generated/LineDiff";
import { DiffModeToggle, DiffView } from "./DiffView";

export interface Transition {
  artifact: string;
  from: number;
  to: number;
  epoch: number;
  type: "update" | "rollback";
  /** Replaces "Updated at the end of epoch N" where that is not what happened (a tree node). */
  caption?: string;
}

/** The server's diff; one function for the drawer's whole life (its effect reloads when `load` changes). */
const serverDiff = (name: string, from: number, to: number) => api.artifact_diff({ name, from, to });

export function DiffDrawer({ transition, onClose, load = serverDiff }: {
  transition: Transition | null;
  onClose: () => void;
  load?: (name: string, from: number, to: number) => Promise<LineDiff>;
}) {
  const [diff, setDiff] = useState<LineDiff | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [mode, setMode] = useState<"unified" | "split">("unified");

  useEffect(() => {
    setDiff(null);
    setError(null);
    if (!transition) return;
    let live = true;
    load(transition.artifact, transition.from, transition.to)
      .then((d) => live && setDiff(d))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [transition, load]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  if (!transition) return null;
  return (
    <aside className="drawer" role="dialog" aria-label="artifact diff" data-testid="diff-drawer">
      <header>
        <div>
          <h3>
            {transition.artifact} v{transition.from}→v{transition.to}
          </h3>
          <p className="muted">
            {transition.caption ??
              `${transition.type === "rollback" ? "Rolled back" : "Updated"} at the end of epoch ${transition.epoch}`}
            {diff && (
              <>
                {" · "}
                <span className="added">+{diff.added}</span> <span className="removed">−{diff.removed}</span>
              </>
            )}
          </p>
        </div>
        <button className="close" onClick={onClose} aria-label="close">
          ×
        </button>
      </header>
      <DiffModeToggle mode={mode} onChange={setMode} />
      {error && <p className="error">{error}</p>}
      {!diff && !error && <p className="muted">Loading the diff…</p>}
      {diff && <DiffView diff={diff} mode={mode} />}
      <p>
        <a href={`#/artifacts/${encodeURIComponent(transition.artifact)}`}>Open the artifact's history</a>
      </p>
    </aside>
  );
}

// The side drawer the artifact timeline opens: the line diff of one
// transition (v{from}→v{to}) of one artifact, fetched from the server.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api";
import type { LineDiff } from "../generated/LineDiff";
import { DiffModeToggle, DiffView } from "./DiffView";
import { Modal } from "./Modal";

export interface Transition {
  artifact: string;
  from: number;
  to: number;
  epoch: number;
  type: "update" | "rollback";
  /** Replaces "Updated at the end of epoch N" where that is not what happened (a tree node). */
  caption?: string;
}

/** The server's diff (tests give the drawer their own `load`). */
const serverDiff = (name: string, from: number, to: number) => api.artifact_diff({ name, from, to });

export function DiffDrawer({ transition, onClose, load = serverDiff }: {
  transition: Transition | null;
  onClose: () => void;
  load?: (name: string, from: number, to: number) => Promise<LineDiff>;
}) {
  const [mode, setMode] = useState<"unified" | "split">("unified");
  // A version's content never changes, so neither does a diff between two.
  const query = useQuery({
    queryKey: ["diff", transition?.artifact, transition?.from, transition?.to],
    queryFn: () => (transition ? load(transition.artifact, transition.from, transition.to) : Promise.reject(new Error("no transition"))),
    enabled: !!transition,
  });
  const diff = query.data ?? null;
  const error = query.error ? query.error.message : null;

  if (!transition) return null;
  return (
    <Modal label={`diff of ${transition.artifact} v${transition.from} to v${transition.to}`} onClose={onClose} className="drawer" backdrop="drawer-backdrop" testId="diff-drawer">
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
    </Modal>
  );
}

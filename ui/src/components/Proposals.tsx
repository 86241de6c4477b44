// The optimizer's proposals for one suite: a calibration chart (predicted
// against observed loss reduction of every applied proposal) and the full
// list, rejected ones with the rule that dropped them, judged winners with
// the task-by-task evidence their keep-or-roll-back decision saw.
import { useMemo, useState } from "react";
import { api } from "../api";
import type { ProposalItem } from "../generated/ProposalItem";
import { calibrationOption, calibrationPoints } from "../lib/charts";
import { useLiveQuery } from "../lib/query";
import { useDark } from "../lib/theme";
import { EChart } from "./EChart";
import { Pager } from "./common";

/** Proposals per page of the table: a long run's hundreds stay one screen. */
const PROPOSALS_PER_PAGE = 25;

const signed = (v: number | null) => (v === null ? "–" : `${v >= 0 ? "+" : ""}${v.toFixed(4)}`);

export function Proposals({ suite, tick }: { suite: string; tick: number }) {
  const dark = useDark();
  const [showRejected, setShowRejected] = useState(false);
  const [page, setPage] = useState(0);
  const { data, error } = useLiveQuery(["proposals", suite], tick, () => api.suite_proposals({ key: String(suite) }));
  const items: ProposalItem[] | null = data?.proposals ?? null;
  const points = useMemo(() => calibrationPoints(items ?? []), [items]);
  const option = useMemo(() => calibrationOption(points), [points]);

  if (error) return <p className="error">{error}</p>;
  if (!items) return null;
  if (items.length === 0) {
    return (
      <p className="muted">
        No proposals yet. Launch with <code>textgrad</code> (a model rewrites one artifact per epoch) or <code>evolve</code> and
        every proposal appears here with what it predicted and what the next epoch observed.
      </p>
    );
  }
  const rejected = items.filter((p) => p.outcome === "rejected").length;
  // Newest first, a page at a time.
  // (A stable sort: within an epoch the store's order — the winner first — stays.)
  const listed = (showRejected ? items : items.filter((p) => p.outcome !== "rejected")).slice().sort((a, b) => b.epoch_num - a.epoch_num);
  const pages = Math.max(1, Math.ceil(listed.length / PROPOSALS_PER_PAGE));
  const at = Math.min(page, pages - 1);
  const shown = listed.slice(at * PROPOSALS_PER_PAGE, (at + 1) * PROPOSALS_PER_PAGE);
  const pager = (
    <Pager label="proposal pages" testId="proposals-pager" page={at} pages={pages} onPage={setPage}>
      {at * PROPOSALS_PER_PAGE + 1}–{at * PROPOSALS_PER_PAGE + shown.length} of {listed.length} proposals (epochs {shown[0]?.epoch_num}–
      {shown[shown.length - 1]?.epoch_num}) · page {at + 1} of {pages}
    </Pager>
  );
  return (
    <>
      {points.length > 0 && (
        <EChart
          id="proposal-calibration"
          option={option}
          label={`Predicted against observed loss reduction for ${points.length} proposal${points.length === 1 ? "" : "s"}; each is a row of the table below`}
          points={points.length}
          height={260}
          dark={dark}
        />
      )}
      {pager}
      <table className="table proposals">
        <thead>
          <tr>
            <th>epoch</th>
            <th>artifact</th>
            <th>outcome</th>
            <th>predicted</th>
            <th>confidence</th>
            <th>observed</th>
            <th>why</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((p) => (
            <tr key={p.id} className={`outcome-${p.outcome}`}>
              <td>{p.epoch_num}</td>
              <td>
                {p.artifact}
                {p.applied_version !== null && <span className="muted"> v{p.parent_version}→v{p.applied_version}</span>}
              </td>
              <td>{p.rolled_back ? "winner, rolled back" : p.outcome}</td>
              <td>{signed(p.expected_loss_reduction)}</td>
              <td>{p.confidence === null ? "–" : p.confidence.toFixed(2)}</td>
              <td>
                {signed(p.observed_loss_reduction)}
                {p.decision_summary && (
                  <div className="muted evidence" data-testid="decision-evidence" title="what the decision to keep or roll back saw, task by task">
                    {p.outcome === "rejected"
                      ? "discarded"
                      : p.outcome === "candidate"
                        ? "not chosen"
                        : p.rolled_back
                          ? "rolled back"
                          : "kept"}{" "}
                    on {p.decision_summary}
                  </div>
                )}
              </td>
              <td className="why">
                {p.edited_by_person && (
                  <b className="edited" data-testid="edited-by-person">
                    edited by a person in the Inbox; proposed:{" "}
                  </b>
                )}
                {p.rejection ?? p.rationale ?? ""}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {pager}
      {rejected > 0 && (
        <label className="muted toggle">
          <input type="checkbox" checked={showRejected} onChange={(e) => setShowRejected(e.target.checked)} /> show the {rejected}{" "}
          rejected proposal{rejected === 1 ? "" : "s"} (with the rule that dropped each)
        </label>
      )}
    </>
  );
}

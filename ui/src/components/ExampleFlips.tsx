// Which examples of a dataset harness flipped between two epochs: a mean
// that moved by one example may hide several fixed and several broken, and
// reading them is how a person judges a new prompt. Shown only for suites
// whose harness lists its examples (run_completion.json `examples`).
import { useState } from "react";
import { api } from "../api";
import type { ExampleFlip } from "../generated/ExampleFlip";
import { useLiveQuery } from "../lib/query";

/** What differs between the versions two epochs ran with: `prompt v1 → v2`. */
export function changedVersions(from: Record<string, number | undefined>, to: Record<string, number | undefined>): string {
  const names = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort();
  const changed = names.filter((n) => from[n] !== to[n]).map((n) => `${n} v${from[n] ?? "–"} → v${to[n] ?? "–"}`);
  return changed.length === 0 ? "the same artifact versions" : changed.join(", ");
}

export function ExampleFlips({ suite, epochs, tick }: { suite: string; epochs: number[]; tick: number }) {
  const last = epochs.length - 1;
  const [from, setFrom] = useState<number | null>(null);
  const [to, setTo] = useState<number | null>(null);
  const a = from ?? epochs[Math.max(0, last - 1)];
  const b = to ?? epochs[last];
  const { data, error } = useLiveQuery(["flips", suite, a, b], tick, () =>
    a === undefined || b === undefined ? Promise.resolve(null) : api.suite_flips({ key: suite, from: a, to: b }),
  );
  if (error) return <p className="error">{error}</p>;
  // A harness that lists no examples: nothing to compare.
  if (!data || (data.compared === 0 && from === null && to === null)) return null;
  const fixed = data.flips.filter((f) => f.fixed).length;
  const broken = data.flips.length - fixed;
  const pick = (value: number, set: (n: number) => void, label: string) => (
    <select value={value} onChange={(e) => set(Number(e.target.value))} aria-label={label}>
      {epochs.map((n) => (
        <option key={n} value={n}>
          epoch {n}
        </option>
      ))}
    </select>
  );
  const row = (f: ExampleFlip) => (
    <tr key={`${f.task}/${f.id}`} className={f.fixed ? "flip-fixed" : "flip-broken"}>
      <td>{f.fixed ? "fixed" : "broken"}</td>
      <td>
        {f.task}
        {f.holdout && <span className="muted"> (held out)</span>}
        <div className="muted">{f.id}</div>
      </td>
      <td className="why">{f.input ?? "–"}</td>
      <td>{f.expected ?? "–"}</td>
      <td>
        {f.before_output ?? "–"} → {f.after_output ?? "–"}
        {f.feedback && <div className="muted">{f.feedback}</div>}
      </td>
    </tr>
  );
  return (
    <div className="card" data-testid="example-flips">
      <h3>Examples that flipped</h3>
      <p>
        {pick(a, setFrom, "from epoch")} against {pick(b, setTo, "to epoch")} (
        <span data-testid="flip-versions">{changedVersions(data.from_versions, data.to_versions)}</span>):{" "}
        <b data-testid="flip-counts">
          {fixed} fixed, {broken} broken
        </b>{" "}
        of {data.compared} examples both scored.
      </p>
      {data.flips.length > 0 && (
        <table className="table flips">
          <thead>
            <tr>
              <th>flip</th>
              <th>task / example</th>
              <th>input</th>
              <th>expected</th>
              <th>output before → after</th>
            </tr>
          </thead>
          <tbody>{data.flips.map(row)}</tbody>
        </table>
      )}
    </div>
  );
}

// Small formatting helpers shared by the screens.
import type { ModelSpend } from "../generated/ModelSpend";
import type { SuiteIssueView } from "../generated/SuiteIssueView";

export function fmtLoss(x: number | null | undefined): string {
  return x === null || x === undefined || Number.isNaN(x) ? "–" : x.toFixed(4);
}

/**
 * An axis tick with the digits that matter: 0.25, 1.5e-5, 3.2e7 — never
 * 0.000000000000000000001 or a 17-digit float.
 */
export function fmtTick(v: number): string {
  if (v === 0 || !Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace("e+", "e").replace(".0e", "e");
  return String(Number(v.toPrecision(4)));
}

export function fmtDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** An amount with the digits that matter: 0.004500, 12.35 (as the CLI prints it). */
export function fmtCost(amount: number): string {
  if (amount === 0) return "0";
  if (amount >= 1) return amount.toFixed(2);
  const digits = Math.min(12, Math.max(2, 3 - Math.floor(Math.log10(amount))));
  return amount.toFixed(digits);
}

/** "3 model calls, 2,410 tokens, cost 0.0123, 41.2 s" — what an epoch's optimizer calls cost. */
export function fmtModelSpend(m: ModelSpend): string {
  const failed = m.failures > 0 ? ` (${m.failures} failed or unusable)` : "";
  const tokens = (m.prompt_tokens + m.completion_tokens).toLocaleString("en-US");
  const cost =
    m.unpriced_calls === 0
      ? `cost ${fmtCost(m.cost)}`
      : m.cost === 0
        ? `cost unknown (${m.unpriced_calls} unpriced call${m.unpriced_calls === 1 ? "" : "s"})`
        : `cost ≥ ${fmtCost(m.cost)}`;
  return `${m.calls} model call${m.calls === 1 ? "" : "s"}${failed}, ${tokens} tokens, ${cost}, ${m.seconds.toFixed(1)} s`;
}

/** A located issue in the command line's words (`file:line:column: field
 * `x`: message`), the way editors and terminals link it. */
export function issueText(i: SuiteIssueView): string {
  const field = i.field ? `field \`${i.field}\`: ` : "";
  return `${i.file}:${i.line}:${i.column}: ${field}${i.message}`;
}

/** "1 run", "3 runs": a count with its noun (`many` for an irregular plural). */
export function counted(n: number, noun: string, many = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : many}`;
}

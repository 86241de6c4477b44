// Small formatting helpers shared by the screens.

export function fmtLoss(x: number | null | undefined): string {
  return x === null || x === undefined || Number.isNaN(x) ? "–" : x.toFixed(4);
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

/** "3 model calls, 2,410 tokens, 41.2 s" — what an epoch's optimizer calls cost. */
export function fmtModelSpend(m: { calls: number; prompt_tokens: number; completion_tokens: number; failures: number; seconds: number }): string {
  const failed = m.failures > 0 ? ` (${m.failures} failed or unusable)` : "";
  const tokens = (m.prompt_tokens + m.completion_tokens).toLocaleString("en-US");
  return `${m.calls} model call${m.calls === 1 ? "" : "s"}${failed}, ${tokens} tokens, ${m.seconds.toFixed(1)} s`;
}

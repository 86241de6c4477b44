// Server data through TanStack Query: one cache for the screens, requests
// deduplicated, and an answer for an older key (another suite, another
// artifact) never shown under the current one — what each screen used to do
// by hand with a `current` flag in an effect.
//
// The live feed decides when data is stale (a suite's epoch finished, a run
// ended), so queries are not refetched on focus or retried on their own: a
// screen puts the live version in its query key instead.
import { QueryClient, useQuery, type QueryKey } from "@tanstack/react-query";
import { useEffect, useState } from "react";

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: { retry: false, refetchOnWindowFocus: false, staleTime: Infinity, gcTime: 5 * 60_000 },
  },
});

/**
 * A `placeholderData` that keeps showing the previous answer while a newer
 * version of the *same* thing loads — the previous query's key starts with
 * `prefix` — so a live refresh does not blank the screen; another thing's
 * answer is never kept.
 */
function keepWhileSame(prefix: QueryKey) {
  return <T>(previous: T | undefined, query: { queryKey: QueryKey } | undefined): T | undefined =>
    query && prefix.every((x, i) => query.queryKey[i] === x) ? previous : undefined;
}

/**
 * Server data the live feed makes stale: `key` names it, `version` (the live
 * tick, or a suite's epochs version) says which answer is current, and the
 * previous answer stays on screen while the same thing refreshes (the first
 * `same` parts of `key` name the thing). Nothing is fetched while `enabled`
 * is false.
 */
export function useLiveQuery<T>(
  key: QueryKey,
  version: number,
  fetch: () => Promise<T>,
  enabled = true,
  same = key.length,
  initial?: () => T | undefined,
) {
  // `same`: how many leading parts of the key make it "the same thing" (a
  // page of a suite's epochs keeps the last page on screen while the next loads).
  // `initial`: an answer already at hand (preloaded) for a query not in the
  // cache yet; nothing is fetched then.
  const q = useQuery({
    queryKey: [...key, version],
    queryFn: fetch,
    enabled,
    placeholderData: keepWhileSame(key.slice(0, same)),
    initialData: initial,
  });
  return { data: q.data ?? null, error: q.error ? q.error.message : null };
}

/**
 * `value` once it has stopped changing for `ms` (what a form asks the server
 * about while a person types: the last settled text, not every keystroke).
 * For strings and numbers: a new object each render would never settle.
 */
export function useSettled<T extends string | number>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

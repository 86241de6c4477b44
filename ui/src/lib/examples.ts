// Where the bundled example suites are on the machine the app talks to (a
// checkout's examples/, or an installed package's copy), so the first-run
// hints name a file that is there.
import { api } from "../api";
import { useLive } from "../App";
import { useLiveQuery } from "./query";

/** The path of a bundled example (`examples/FILE` until the server has said where they are). */
export function useExample(file: string): string {
  // The same query as the Inbox badge's: one request for both.
  const { tick } = useLive();
  const dir = useLiveQuery(["overview"], tick, () => api.overview()).data?.examples_dir;
  return `${dir ?? "examples"}/${file}`;
}

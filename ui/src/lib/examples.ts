// Where the bundled example suites are on the machine the app talks to (a
// checkout's examples/, or an installed package's copy), so the first-run
// hints name a file that is there.
import { useQuery } from "@tanstack/react-query";
import { api } from "../api";

/** The path of a bundled example (`examples/FILE` until the server has said where they are). */
export function useExample(file: string): string {
  const dir = useQuery({ queryKey: ["examples-dir"], queryFn: () => api.overview().then((o) => o.examples_dir) }).data;
  return `${dir ?? "examples"}/${file}`;
}

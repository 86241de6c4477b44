// Light and dark themes follow the operating system's setting.
import { useEffect, useState } from "react";

const QUERY = "(prefers-color-scheme: dark)";

export function useDark(): boolean {
  const [dark, setDark] = useState(() => typeof window !== "undefined" && !!window.matchMedia?.(QUERY).matches);
  useEffect(() => {
    const query = window.matchMedia?.(QUERY);
    if (!query) return;
    const on = (e: MediaQueryListEvent) => setDark(e.matches);
    query.addEventListener("change", on);
    return () => query.removeEventListener("change", on);
  }, []);
  return dark;
}

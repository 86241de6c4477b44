// A path field: typed in a browser (the path is on the machine running
// Attractor), and in the desktop app also picked with the native file or
// folder dialog through the shell's `pick_path` command.
import { useState } from "react";
import { inDesktopApp, transport } from "../api";

interface Props {
  kind: "suite" | "folder";
  value: string;
  onChange: (path: string) => void;
  placeholder?: string;
  testId?: string;
  autoFocus?: boolean;
  /** Whether the native picker is offered (the desktop app by default). */
  native?: boolean;
  pick?: (kind: "suite" | "folder") => Promise<string | null>;
}

export function PathInput({ kind, value, onChange, placeholder, testId, autoFocus, native = inDesktopApp(), pick = transport.pickPath }: Props) {
  const [error, setError] = useState<string | null>(null);
  const browse = async () => {
    setError(null);
    try {
      const picked = await pick(kind);
      if (picked) onChange(picked);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <span className="path-input">
      <input
        data-testid={testId}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        placeholder={placeholder}
        spellCheck={false}
        autoFocus={autoFocus}
      />
      {native && (
        <button type="button" onClick={browse} data-testid="browse">
          Browse…
        </button>
      )}
      {error && <span className="error small">{error}</span>}
    </span>
  );
}

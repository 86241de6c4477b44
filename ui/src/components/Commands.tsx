// The exact commands an execution approval allows, one per line, each with
// the task and role it belongs to: what a person reads before approving.
import type { PlannedCommand } from "../generated/PlannedCommand";
import { commandOrigin } from "../lib/watch";

export function Commands({ commands }: { commands: PlannedCommand[] }) {
  return (
    <ol className="commands" data-testid="commands">
      {commands.map((c, i) => (
        <li key={i}>
          <span className="muted small">{commandOrigin(c)}</span>
          <pre className="command">{c.command}</pre>
        </li>
      ))}
    </ol>
  );
}

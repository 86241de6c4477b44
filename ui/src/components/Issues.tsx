// A file's problems, each as the command line prints it — place, field,
// message — with its hint: the Launch and Watched Folders screens show a
// refused file the same way `attractor validate` does.
import type { SuiteIssueView } from "../generated/SuiteIssueView";
import { issueText } from "../lib/format";

export function Issues({ issues }: { issues: SuiteIssueView[] }) {
  return (
    <ul className="issues" data-testid="issues">
      {issues.map((i, k) => (
        <li key={k} className="issue">
          <code>{issueText(i)}</code>
          {i.hint && <div className="hint">hint: {i.hint}</div>}
        </li>
      ))}
    </ul>
  );
}

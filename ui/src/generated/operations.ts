// Generated from crates/service/src/service/operations.rs by `ATTRACTOR_UPDATE_GENERATED=1 cargo test --lib ts_export`; do not edit.

import type { AnswerRequest } from "./AnswerRequest";
import type { ApiKeyRequest } from "./ApiKeyRequest";
import type { ArtifactHistory } from "./ArtifactHistory";
import type { ArtifactItem } from "./ArtifactItem";
import type { ExampleFlips } from "./ExampleFlips";
import type { Inbox } from "./Inbox";
import type { InterventionItem } from "./InterventionItem";
import type { LaunchPreview } from "./LaunchPreview";
import type { LaunchView } from "./LaunchView";
import type { LineDiff } from "./LineDiff";
import type { LlmCheck } from "./LlmCheck";
import type { MemoryItem } from "./MemoryItem";
import type { Overview } from "./Overview";
import type { RollbackRequest } from "./RollbackRequest";
import type { RunDetail } from "./RunDetail";
import type { RunEpoch } from "./RunEpoch";
import type { RunRequest } from "./RunRequest";
import type { SettingsUpdate } from "./SettingsUpdate";
import type { SettingsView } from "./SettingsView";
import type { SimilarRequest } from "./SimilarRequest";
import type { SimilarTrajectories } from "./SimilarTrajectories";
import type { SuiteCharts } from "./SuiteCharts";
import type { SuiteEpochs } from "./SuiteEpochs";
import type { SuiteGraph } from "./SuiteGraph";
import type { SuiteItem } from "./SuiteItem";
import type { SuiteProposals } from "./SuiteProposals";
import type { TrajectoryStats } from "./TrajectoryStats";
import type { UpdateDecision } from "./UpdateDecision";
import type { ValidateRequest } from "./ValidateRequest";
import type { Validation } from "./Validation";
import type { WatchFolderRequest } from "./WatchFolderRequest";
import type { WatchedFolderView } from "./WatchedFolderView";
import type { WatchedFolders } from "./WatchedFolders";
import type { WorkersView } from "./WorkersView";

/** Every operation of the service facade: its arguments and its answer. */
export interface Operations {
  /**
   * Counts and the latest activity across every suite.
   */
  overview: { args: {}; answer: Overview };
  /**
   * Every suite with its latest epoch and its lease.
   */
  suites: { args: {}; answer: Array<SuiteItem> };
  /**
   * A page of a suite's epochs (by id or name), newest page first: `limit` epochs (20 unless
   * said, at most 500) after skipping `offset` newest ones; `runs: false` leaves the run lists
   * out (most of the payload); `launch` keeps to the epochs that launch ran.
   */
  suite_epochs: { args: { key: string; runs?: boolean | null; offset?: number | null; limit?: number | null; launch?: number | null }; answer: SuiteEpochs };
  /**
   * What the Charts screen draws, shaped on the server: one column per finished epoch.
   */
  suite_charts: { args: { key: string }; answer: SuiteCharts };
  /**
   * The suite's experiment graph (the tree search's nodes, or its epochs).
   */
  suite_graph: { args: { key: string }; answer: SuiteGraph };
  /**
   * Every proposal the optimizer considered, with predicted and observed effect.
   */
  suite_proposals: { args: { key: string }; answer: SuiteProposals };
  /**
   * The examples a dataset harness got right in one epoch and wrong in the other.
   */
  suite_flips: { args: { key: string; from: number; to: number }; answer: ExampleFlips };
  /**
   * A run with its output tails, its trajectories and its ASO telemetry.
   */
  run_detail: { args: { id: number }; answer: RunDetail };
  /**
   * The epoch and suite a run belongs to.
   */
  run_epoch: { args: { id: number }; answer: RunEpoch };
  /**
   * Every artifact with its active version.
   */
  artifacts: { args: {}; answer: Array<ArtifactItem> };
  /**
   * An artifact's versions, oldest first, with what made each.
   */
  artifact_versions: { args: { name: string }; answer: ArtifactHistory };
  /**
   * The diff of two versions of an artifact: by line for text, by field for JSON (keys sorted,
   * so a reordering is no change).
   */
  artifact_diff: { args: { name: string; from: number; to: number }; answer: LineDiff };
  /**
   * Makes an earlier version of an artifact the active one.
   */
  rollback_artifact: { args: { name: string; request: RollbackRequest }; answer: ArtifactItem };
  /**
   * The inbox: open questions, notices and the answered history.
   */
  interventions: { args: {}; answer: Inbox };
  /**
   * Answers an open question (once).
   */
  answer: { args: { id: number; request: AnswerRequest }; answer: InterventionItem };
  /**
   * Decides a gated artifact update (question `id`): approve it as proposed or edited, or reject it.
   */
  decide_update: { args: { id: number; request: UpdateDecision }; answer: InterventionItem };
  /**
   * Dismisses a notice (what a run told a person without waiting for them); a question cannot
   * be dismissed, a notice not answered.
   */
  dismiss: { args: { id: number }; answer: InterventionItem };
  /**
   * Reads a suite or task file and reports every issue with its place.
   */
  validate: { args: { request: ValidateRequest }; answer: Validation };
  /**
   * What a launch would do and may cost; nothing runs.
   */
  preview: { args: { request: RunRequest }; answer: LaunchPreview };
  /**
   * Every launch on the database, from any process.
   */
  launches: { args: {}; answer: Array<LaunchView> };
  /**
   * The workers on the database and the runs queued for them.
   */
  workers: { args: {}; answer: WorkersView };
  /**
   * Queues a run of a suite (a `RunRequest`: `attractor run`'s options as JSON); this process
   * works it at once. A field out of its bounds is a 400 naming it; an invalid suite file a 422
   * with its issues.
   */
  launch: { args: { request: RunRequest }; answer: LaunchView };
  /**
   * One launch.
   */
  launch_view: { args: { id: number }; answer: LaunchView };
  /**
   * A suite's latest launch however long ago it was (`null`: never launched), whose settings
   * "Launch again" and "Resume" start from.
   */
  suite_last_launch: { args: { key: string }; answer: LaunchView | null };
  /**
   * Cancels a launch, whichever process works it.
   */
  cancel: { args: { id: number }; answer: LaunchView };
  /**
   * The settings in force and where each comes from (never a secret).
   */
  settings: { args: {}; answer: SettingsView };
  /**
   * Changes and saves settings.
   */
  update_settings: { args: { update: SettingsUpdate }; answer: SettingsView };
  /**
   * Asks the configured model one short question.
   */
  test_llm: { args: {}; answer: LlmCheck };
  /**
   * Keeps the API key in the operating system's keychain; the answer only says where a key comes from.
   */
  set_api_key: { args: { request: ApiKeyRequest }; answer: SettingsView };
  /**
   * Removes the API key from the keychain.
   */
  delete_api_key: { args: {}; answer: SettingsView };
  /**
   * The trajectory repository's aggregates, of one task category or of all.
   */
  trajectory_stats: { args: { category?: string | null }; answer: TrajectoryStats };
  /**
   * Finished trajectories whose task is most like a run's, a trajectory's or a described one.
   */
  similar_trajectories: { args: { request: SimilarRequest }; answer: SimilarTrajectories };
  /**
   * The newest convergence memories, of one category or of all.
   */
  memories: { args: { category?: string | null; limit?: number | null }; answer: Array<MemoryItem> };
  /**
   * The watched folders and their files.
   */
  watched: { args: {}; answer: WatchedFolders };
  /**
   * Watches a folder (remembered across restarts).
   */
  add_watched_folder: { args: { request: WatchFolderRequest }; answer: WatchedFolderView };
  /**
   * Stops watching a folder.
   */
  remove_watched_folder: { args: { id: number }; answer: WatchedFolders };
}

/** Where HTTP finds an argument: a path segment, a query parameter, the whole query, the body. */
export type Source = "path" | "query" | "params" | "body";

/** How each operation travels over HTTP (under `/api`). */
export const OPERATIONS: {
  [K in keyof Operations]: { verb: "GET" | "POST" | "PUT" | "DELETE"; path: string; params: { [A in keyof Operations[K]["args"]]-?: Source } };
} = {
  overview: { verb: "GET", path: "/overview", params: {} },
  suites: { verb: "GET", path: "/suites", params: {} },
  suite_epochs: { verb: "GET", path: "/suites/{key}/epochs", params: { key: "path", runs: "query", offset: "query", limit: "query", launch: "query" } },
  suite_charts: { verb: "GET", path: "/suites/{key}/charts", params: { key: "path" } },
  suite_graph: { verb: "GET", path: "/suites/{key}/graph", params: { key: "path" } },
  suite_proposals: { verb: "GET", path: "/suites/{key}/proposals", params: { key: "path" } },
  suite_flips: { verb: "GET", path: "/suites/{key}/flips", params: { key: "path", from: "query", to: "query" } },
  run_detail: { verb: "GET", path: "/runs/{id}", params: { id: "path" } },
  run_epoch: { verb: "GET", path: "/runs/{id}/epoch", params: { id: "path" } },
  artifacts: { verb: "GET", path: "/artifacts", params: {} },
  artifact_versions: { verb: "GET", path: "/artifacts/{name}/versions", params: { name: "path" } },
  artifact_diff: { verb: "GET", path: "/artifacts/{name}/diff", params: { name: "path", from: "query", to: "query" } },
  rollback_artifact: { verb: "POST", path: "/artifacts/{name}/rollback", params: { name: "path", request: "body" } },
  interventions: { verb: "GET", path: "/interventions", params: {} },
  answer: { verb: "POST", path: "/interventions/{id}/answer", params: { id: "path", request: "body" } },
  decide_update: { verb: "POST", path: "/interventions/{id}/decide", params: { id: "path", request: "body" } },
  dismiss: { verb: "POST", path: "/interventions/{id}/dismiss", params: { id: "path" } },
  validate: { verb: "POST", path: "/validate", params: { request: "body" } },
  preview: { verb: "POST", path: "/launches/preview", params: { request: "body" } },
  launches: { verb: "GET", path: "/launches", params: {} },
  workers: { verb: "GET", path: "/workers", params: {} },
  launch: { verb: "POST", path: "/launches", params: { request: "body" } },
  launch_view: { verb: "GET", path: "/launches/{id}", params: { id: "path" } },
  suite_last_launch: { verb: "GET", path: "/suites/{key}/launches/latest", params: { key: "path" } },
  cancel: { verb: "POST", path: "/launches/{id}/cancel", params: { id: "path" } },
  settings: { verb: "GET", path: "/settings", params: {} },
  update_settings: { verb: "PUT", path: "/settings", params: { update: "body" } },
  test_llm: { verb: "POST", path: "/settings/test-llm", params: {} },
  set_api_key: { verb: "PUT", path: "/settings/api-key", params: { request: "body" } },
  delete_api_key: { verb: "DELETE", path: "/settings/api-key", params: {} },
  trajectory_stats: { verb: "GET", path: "/trajectories/stats", params: { category: "query" } },
  similar_trajectories: { verb: "GET", path: "/trajectories/similar", params: { request: "params" } },
  memories: { verb: "GET", path: "/memories", params: { category: "query", limit: "query" } },
  watched: { verb: "GET", path: "/watch", params: {} },
  add_watched_folder: { verb: "POST", path: "/watch/folders", params: { request: "body" } },
  remove_watched_folder: { verb: "DELETE", path: "/watch/folders/{id}", params: { id: "path" } },
};

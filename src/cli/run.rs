//! `attractor run`: its flags (a [`RunRequest`] spelled as a command line)
//! and the verb itself — validate, preview the plan and the model's use, then
//! work the request in this process as a queue worker would.

use super::*;

/// `attractor run`'s flags: a [`RunRequest`] spelled as a command line
/// (bounds are checked once, by the request), plus where run folders go.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The suite file (YAML).
    pub suite: PathBuf,
    /// A folder outside the suite's own that its paths may lead into (repeatable).
    #[arg(long = "allow-outside", value_name = "DIR")]
    pub allow_outside: Vec<PathBuf>,
    /// Epochs to run; the same command after a stopped run finishes the
    /// epochs it planned (an unfinished epoch counts as one).
    #[arg(long, default_value_t = 1)]
    pub epochs: u32,
    /// How artifacts move between epochs.
    #[arg(long, value_enum, default_value_t = OptimizerKind::Baseline)]
    pub optimizer: OptimizerKind,
    /// Step size η in [0, 1]; halves after every rollback.
    #[arg(long, default_value_t = 0.5)]
    pub learning_rate: f64,
    /// Keep updates even when the mean loss gets worse.
    #[arg(long)]
    pub no_rollback: bool,
    /// Runs in flight at once (1 to 256).
    #[arg(long, default_value_t = 2)]
    pub concurrency: u32,
    /// Base seed for the optimizer's random choices [default: random, printed and recorded].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run optimize tasks on heuristics alone, even when an LLM is configured
    /// (ATTRACTOR_LLM_MODEL).
    #[arg(long)]
    pub no_llm: bool,
    /// Where run directories go [default: `runs/<database name>` beside the database].
    #[arg(long, env = "ATTRACTOR_RUNS_DIR", value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// Only put the run in the database's queue, for `attractor worker`
    /// (or an app open on the database) to run; print its id.
    #[arg(long)]
    pub queue: bool,
    /// How far the held-out mean loss may rise over the previous epoch's
    /// before the update behind it is rolled back [default: 0.01].
    #[arg(long)]
    pub holdout_tolerance: Option<f64>,
    /// Settings of agent tasks as JSON over the defaults (engine numbers,
    /// overseer retries, intent verifier, how long a question waits).
    #[arg(long, value_name = "FILE")]
    pub agent_config: Option<PathBuf>,
    /// Run agent tasks' overseers and command executors without the
    /// sandbox, with your full rights (also ATTRACTOR_SANDBOX=off).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Seconds one model call may take (each attempt) [default: 120].
    #[arg(long, value_name = "SECS")]
    pub llm_timeout: Option<f64>,
    /// HTTP attempts per model call, the first included [default: 3].
    #[arg(long, value_name = "N")]
    pub llm_attempts: Option<u32>,
    /// Seconds of model time the whole run may spend [default: no limit].
    #[arg(long, value_name = "SECS")]
    pub max_model_secs: Option<f64>,
    /// A reply budget per role, e.g. `--max-tokens proposer=1024`
    /// (roles: proposer, executor, verifier, decomposer, supervisor, ideation).
    #[arg(long, value_name = "ROLE=N", value_parser = parse_role_tokens)]
    pub max_tokens: Vec<(crate::llm::CallRole, u32)>,
    /// The largest model reply accepted, in bytes [default: 262144].
    #[arg(long, value_name = "BYTES")]
    pub max_reply_bytes: Option<usize>,
    /// What the run may spend on model calls, at the prices in the settings
    /// file (`model_prices`; a model on this machine is free). The run stops
    /// cleanly, keeping what it finished, before a call that could go over
    /// [default: no limit].
    #[arg(long, value_name = "AMOUNT")]
    pub max_cost: Option<f64>,
    /// Tree search: children per round (1 to 64).
    #[arg(long, default_value_t = 3)]
    pub width: u32,
    /// Tree search: rounds without a new best before stopping.
    #[arg(long, default_value_t = 3)]
    pub stall: u32,
    /// Evaluations behind each decision: every tree node, or the epochs after
    /// a textgrad/evolve update (1 to 20) [default: the suite's `verify_repeats`,
    /// 3 on a `noisy: true` suite, else 1].
    #[arg(long)]
    pub verify_repeats: Option<u32>,
    /// Whether each winning artifact update waits in the Inbox for a person
    /// to approve, edit or reject it: `wait` (the run waits too), `continue`
    /// (it goes on with the versions it has) or `off` [default: the suite's
    /// `approve_updates`, else off].
    #[arg(long, value_enum, value_name = "MODE")]
    pub approve_updates: Option<ApprovalMode>,
    /// Tree search: ideation calls (frontier extrapolation, failure analysis)
    /// before stopping on stall, each feeding one more round; 0 turns them off.
    #[arg(long, default_value_t = 1)]
    pub ideation_rounds: u32,
    /// Tree search: how parents are picked from the frontier.
    #[arg(long, value_enum, default_value_t = SelectionName::Pareto)]
    pub selection: SelectionName,
    /// Tree search: children one brief may make in a round, each from the
    /// last one committed (the per-branch budget); 1 turns deepening off.
    #[arg(long, default_value_t = 5)]
    pub branch_depth: u32,
}

impl RunArgs {
    /// The run these flags ask for (everything but `--runs-dir`, which is
    /// this machine's business).
    pub fn request(&self) -> RunRequest {
        RunRequest {
            suite_path: self.suite.display().to_string(),
            allow_outside: self.allow_outside.iter().map(|p| p.display().to_string()).collect(),
            epochs: self.epochs,
            optimizer: self.optimizer,
            learning_rate: self.learning_rate,
            rollback: !self.no_rollback,
            concurrency: self.concurrency,
            seed: self.seed,
            no_llm: self.no_llm,
            holdout_tolerance: self.holdout_tolerance,
            verify_repeats: self.verify_repeats,
            approve_updates: self.approve_updates,
            tree: TreeRequest {
                width: self.width,
                stall: self.stall,
                ideation_rounds: self.ideation_rounds,
                selection: self.selection,
                branch_depth: self.branch_depth,
            },
            agent_config: self.agent_config.as_ref().map(|p| p.display().to_string()),
            no_sandbox: self.no_sandbox,
            model: crate::llm::LlmLimits {
                timeout_secs: self.llm_timeout,
                attempts: self.llm_attempts,
                max_model_secs: self.max_model_secs,
                max_tokens: self.max_tokens.iter().copied().collect(),
                max_reply_bytes: self.max_reply_bytes,
                max_stored_chars: None,
                max_cost: self.max_cost,
            },
        }
    }
}

/// The pre-run preview of the model's use: calls, tokens and cost at most.
fn model_line(
    suite: &crate::suite::Suite,
    registry: &Registry,
    req: &RunRequest,
    agent: &crate::task::agent::AgentConfig,
    model: &crate::llm::LlmClient,
) -> Option<String> {
    let run = crate::outer::estimate::PlannedRun {
        suite,
        optimizer: req.optimizer,
        epochs: req.epochs,
        proposal_candidates: crate::outer::estimate::proposal_candidates(suite, registry),
        ideation_rounds: req.tree.ideation_rounds,
        agent,
        supervisor_tier: !req.no_llm,
    };
    crate::outer::estimate::preview_line(&run, model)
}

pub(super) async fn run(g: &Global, args: &RunArgs) -> Result<u8, Failure> {
    let req = args.request().absolute();
    req.validate().map_err(|e| Failure::input(e.to_string()))?;
    // Loaded here for its located errors before anything is queued, and
    // its name; the worker loads it again from the same path.
    let suite = load_suite(&args.suite, &req.outside())?;
    let db = db_path(g)?;
    let store = Store::open(&db).await?;

    if args.queue {
        // What the database would refuse, before the request waits for a
        // worker (the model is the worker machine's to have).
        crate::outer::preflight::refusals(&suite, true, &store.declarations().await?)
            .map_err(|e| Failure::input(e.to_string()))?;
        return worker::enqueue(g, &store, &suite.name, &req).await;
    }
    // The LLM tier is on when a model is configured; without one, the
    // coordinator's heuristics answer every step. `--no-llm` turns the tier
    // off but leaves a model-driven optimizer its model.
    let app = worker::settings()?;
    let machine = worker::machine(&db, args.runs_dir.as_ref(), &app)?;
    // The labels this machine offers (ATTRACTOR_WORKER_OFFERS, else the
    // settings file's worker_offers) for the runs it works itself; other
    // workers take the rest.
    let offers =
        crate::queue::offers::from_env(|n| std::env::var(n).ok(), &app.worker_offers).map_err(Failure::input)?;

    let bus = Bus::new();
    let persister = bus::persist(&bus, store.clone());
    // Read-only: it only adds alerts to the bus (agent tasks' trajectories).
    let auditor = crate::auditor::spawn(&bus, crate::auditor::AuditConfig::default());
    let show = !g.quiet && !g.json;
    let renderer = progress::spawn(&bus, show, args.epochs, suite.tasks.len());
    let worker = crate::queue::Worker::new(store.clone(), bus.clone(), machine, "attractor run").with_offers(offers);
    // The request goes into the store's queue as this process's own, so an
    // app open on the same database shows the run live.
    let row = match worker.enqueue_own(&suite.name, &req).await? {
        Ok(id) => store.queued_request(id).await?.ok_or_else(|| Failure::runtime(format!("request {id} vanished")))?,
        Err(busy) => {
            bus.close();
            return Err(RunnerError::Busy {
                suite: suite.name.clone(),
                holder: busy.holder.unwrap_or_else(|| format!("a queued request ({})", busy.id)),
                since: busy.started_at.unwrap_or(busy.enqueued_at),
            }
            .into());
        }
    };

    // Ctrl-C or SIGTERM: stop launching runs, kill the ones in flight (they
    // are marked cancelled and run again on resume), close the epoch books
    // cleanly.
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let ctrl_c = tokio::spawn(async move {
        crate::process::termination().await;
        eprintln!("\ninterrupted: stopping the runs in flight; run the same command again to resume");
        let _ = cancel_tx.send(true);
    });

    // Every model client of the run shares these counters (clones of one client).
    let mut usage = None;
    let started = std::time::Instant::now();
    let worked = worker
        .work_with(&row, cancel_rx, |p, registry| {
            usage = p.model.as_ref().map(|c| std::sync::Arc::clone(c.usage()));
            if show {
                eprintln!(
                    "{}",
                    req.plan_line(&p.suite, crate::outer::estimate::proposal_candidates(&p.suite, registry))
                );
                if p.suite.tasks.iter().any(|t| matches!(t.kind, crate::suite::TaskKind::Agent(_))) {
                    eprintln!("sandbox: {}", p.agent.sandbox.describe());
                }
                if let Some(line) = p.model.as_ref().and_then(|m| model_line(&p.suite, registry, &req, &p.agent, m)) {
                    eprintln!("{line}");
                }
            }
        })
        .await;
    let result = worked.outcome;
    ctrl_c.abort();
    bus.close();
    let _ = auditor.await;
    let _ = persister.await;
    let _ = renderer.await;
    // What did not succeed, for the exit code: a suite whose runs failed
    // or were aborted did not do its job, whatever the loss says.
    let mut unsuccessful = Vec::new();
    if let Ok(s) = &result {
        for e in &s.epochs {
            unsuccessful.extend(store.unsuccessful_runs(e.epoch_id).await.unwrap_or_default());
        }
    }
    store.close().await;

    let by_role = usage.map(|u| u.by_role()).unwrap_or_default();
    let model_use = crate::llm::model_use_line(&by_role, started.elapsed());
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            // What the model cost is worth knowing most when the run failed.
            if let Some(line) = &model_use {
                eprintln!("{line}");
            }
            return Err(e.into());
        }
    };
    if g.json {
        let mut value = serde_json::to_value(&summary).unwrap_or_default();
        value["model_use"] = serde_json::to_value(&by_role).unwrap_or_default();
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else if !g.quiet {
        let first = summary.epochs.first().and_then(|e| e.mean_loss);
        // A tree search's last evaluation is often a child it rejected: its
        // line ends on the best it kept, an epoch loop's on where it stands.
        let (last, ending) = if req.optimizer == OptimizerKind::Tree {
            (summary.epochs.iter().filter_map(|e| e.mean_loss).min_by(f64::total_cmp), " (best)")
        } else {
            (summary.epochs.last().and_then(|e| e.mean_loss), "")
        };
        let done = summary.epochs.len() as u64;
        let done = if req.optimizer == OptimizerKind::Tree {
            crate::counted(done, "evaluation")
        } else {
            crate::counted(done, "epoch")
        };
        if let (Some(a), Some(b)) = (first, last) {
            println!(
                "suite `{}`: {done}, mean loss {a:.4} → {b:.4}{ending}, learning rate now {}, seed {}",
                summary.suite, summary.learning_rate, summary.seed
            );
        }
        if let Some(settled) = &summary.settled {
            println!("{}", settled.describe());
        }
        if let Some(line) = &model_use {
            println!("{line}");
        }
        if let Some(reason) = &summary.stopped {
            println!("stopped after {done}: {reason}");
        }
        println!("database: {}", store::shown_location(&db).display());
    }
    if summary.interrupted {
        return Ok(130);
    }
    if !unsuccessful.is_empty() {
        if !g.quiet {
            let runs: Vec<String> =
                unsuccessful.iter().map(|r| format!("{} (run {}, {})", r.task_name, r.id, r.status)).collect();
            eprintln!(
                "{} failed or {} aborted: {}\n  hint: `attractor inspect {}` shows each run's error",
                crate::counted(unsuccessful.len() as u64, "run"),
                if unsuccessful.len() == 1 { "was" } else { "were" },
                runs.join(", "),
                summary.suite
            );
        }
        return Ok(EXIT_RUNS_FAILED);
    }
    Ok(0)
}

/// `ROLE=N` for `--max-tokens`.
fn parse_role_tokens(s: &str) -> Result<(crate::llm::CallRole, u32), String> {
    let (role, n) = s.split_once('=').ok_or_else(|| format!("`{s}` is not ROLE=N (e.g. proposer=1024)"))?;
    let role = crate::llm::CallRole::ALL.into_iter().find(|r| r.as_str() == role.trim()).ok_or_else(|| {
        let names: Vec<&str> = crate::llm::CallRole::ALL.iter().map(|r| r.as_str()).collect();
        format!("unknown role `{}`; use one of {}", role.trim(), names.join(", "))
    })?;
    let n: u32 = n.trim().parse().map_err(|_| format!("`{}` is not a whole number of tokens", n.trim()))?;
    if !(1..=crate::llm::MAX_TOKENS_LIMIT).contains(&n) {
        return Err(format!("{n} tokens is out of range (1 to {})", crate::llm::MAX_TOKENS_LIMIT));
    }
    Ok((role, n))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    fn run_args(extra: &[&str]) -> RunArgs {
        let mut argv = vec!["attractor", "run", "s.suite.yaml"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Run(args)) => args,
            other => panic!("not a run: {other:?}"),
        }
    }

    /// Each flag of `attractor run` but `--runs-dir` (where this machine
    /// keeps run folders) is an option of the run request, so the app's
    /// launch form and the API can ask for everything the CLI can.
    #[test]
    fn every_run_flag_but_the_machines_own_changes_the_run_request() {
        let samples: &[(&str, &str)] = &[
            ("allow-outside", "/tmp/x"),
            ("epochs", "4"),
            ("optimizer", "tree"),
            ("learning-rate", "0.25"),
            ("no-rollback", ""),
            ("concurrency", "3"),
            ("seed", "9"),
            ("no-llm", ""),
            ("holdout-tolerance", "0.2"),
            ("agent-config", "a.json"),
            ("no-sandbox", ""),
            ("llm-timeout", "9"),
            ("llm-attempts", "2"),
            ("max-model-secs", "50"),
            ("max-tokens", "proposer=99"),
            ("max-reply-bytes", "4096"),
            ("max-cost", "1.5"),
            ("width", "2"),
            ("stall", "1"),
            ("verify-repeats", "2"),
            ("approve-updates", "wait"),
            ("ideation-rounds", "0"),
            ("selection", "argmax"),
            ("branch-depth", "1"),
        ];
        let machine = ["runs-dir", "queue"];
        let cli = Cli::command();
        let run = cli.find_subcommand("run").expect("a run subcommand");
        let flags: Vec<&str> = run.get_arguments().filter_map(|a| a.get_long()).collect();
        assert!(flags.len() > 20, "{flags:?}");
        for flag in &flags {
            assert!(
                machine.contains(flag) || samples.iter().any(|(f, _)| f == flag),
                "`--{flag}` is neither in the run request nor the machine's own"
            );
        }
        let plain = run_args(&[]).request();
        assert_eq!(plain, RunRequest::new("s.suite.yaml"), "the CLI's defaults are the request's");
        for (flag, value) in samples {
            let long = format!("--{flag}");
            let args: Vec<&str> = if value.is_empty() { vec![&long] } else { vec![&long, value] };
            let req = run_args(&args).request();
            assert_ne!(req, plain, "`{long} {value}` did not reach the request");
            assert!(req.validate().is_ok(), "`{long} {value}`: {:?}", req.validate());
        }
    }

    #[test]
    fn a_flag_out_of_bounds_is_refused_by_the_request_with_the_flag_named() {
        let e = run_args(&["--width", "0", "--learning-rate", "2"]).request().validate().unwrap_err().to_string();
        assert!(e.contains("field `tree.width` (--width): 0 is outside the range 1 to 64"), "{e}");
        assert!(e.contains("field `learning_rate` (--learning-rate): 2 is outside [0, 1]"), "{e}");
    }
}

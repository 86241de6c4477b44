//! `attractor report` end to end: a suite really run by the `attractor`
//! binary into a temporary SQLite file, its report drawn by the binary, and
//! the files read back — the SVGs parsed to count every epoch's marker, the
//! page checked for its table and for names that carry markup.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use attractor::service::types::{ArtifactEvent, SuiteEpochs};
use attractor::service::{Service, ServiceConfig};
use attractor::store::{EpochClose, Store};
use quick_xml::XmlVersion;
use quick_xml::events::Event;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/app").join(name).display().to_string()
}

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World { dir: tempfile::tempdir().unwrap() }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("attractor.db")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cli(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_attractor"))
            .arg("--db")
            .arg(self.db())
            .args(args)
            .env("ATTRACTOR_RUNS_DIR", self.path("runs"))
            .env("ATTRACTOR_SETTINGS", self.path("settings.json"))
            .env("KNOBS_DELAY", "0")
            .env_remove("ATTRACTOR_LLM_MODEL")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert!(out.status.success(), "attractor {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// The view the report is drawn from, read through the facade.
    async fn view(&self, suite: &str) -> SuiteEpochs {
        let config = ServiceConfig {
            db_path: self.db(),
            settings_path: self.path("settings.json"),
            runs_root: None,
            env: Arc::new(|_| None),
        };
        let service = Service::open(config).await.unwrap();
        let all = attractor::service::types::EpochPageArgs { offset: None, limit: Some(500), launch: None };
        let view = service.suite_epochs(suite, false, all).await.unwrap();
        service.shutdown().await;
        view
    }
}

/// Every element of one SVG with its attributes.
fn elements(svg: &str) -> Vec<(String, HashMap<String, String>)> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut out = Vec::new();
    loop {
        match reader.read_event().unwrap() {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => {
                let name = e.name().as_ref().to_string();
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        let value = a.normalized_value(XmlVersion::Implicit1_0).unwrap().into_owned();
                        (a.key.as_ref().to_string(), value)
                    })
                    .collect();
                out.push((name, attrs));
            }
            _ => {}
        }
    }
    out
}

/// How many `<tag>` elements have each fill colour.
fn fills(svg: &str, tag: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for (name, attrs) in elements(svg) {
        if name == tag {
            *counts.entry(attrs.get("fill").cloned().unwrap_or_default()).or_insert(0) += 1;
        }
    }
    counts
}

/// The text of every `<text>` element of an SVG, references resolved.
fn texts(svg: &str) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    loop {
        match reader.read_event().unwrap() {
            Event::Eof => break,
            Event::Start(e) if e.name().as_ref() == "text" => current = Some(String::new()),
            Event::End(e) if e.name().as_ref() == "text" => {
                out.extend(current.take().map(|t| t.trim().to_string()));
            }
            Event::Text(t) => {
                if let Some(c) = current.as_mut() {
                    c.push_str(&t.xml10_content());
                }
            }
            // `&lt;` and friends arrive as references of their own.
            Event::GeneralRef(r) => {
                if let Some(c) = current.as_mut() {
                    let resolved = match r.resolve_char_ref().unwrap() {
                        Some(ch) => ch,
                        None => match &*r {
                            "lt" => '<',
                            "gt" => '>',
                            "amp" => '&',
                            "quot" => '"',
                            "apos" => '\'',
                            other => panic!("unknown entity {other}"),
                        },
                    };
                    c.push(resolved);
                }
            }
            _ => {}
        }
    }
    out
}

const GREEN: &str = "#2E9D4F";
const RED: &str = "#D64545";
const GREY: &str = "#9AA0A6";
const BLUE: &str = "#3B6FD8";
const ORANGE: &str = "#E08A1E";

#[tokio::test]
async fn the_report_of_a_real_run_draws_a_marker_for_every_epoch_and_every_change() {
    let w = World::new();
    w.ok(&["run", &fixture("knobs.suite.yaml"), "--epochs", "8", "--optimizer", "evolve", "--seed", "1", "--quiet"]);
    let out = w.path("report");
    let printed = w.ok(&["report", "knobs", "--out", out.to_str().unwrap()]);
    assert!(printed.contains("7 files") && printed.contains("index.html"), "{printed}");
    for name in attractor::service::report::FILES {
        assert!(out.join(name).is_file(), "{name} written");
    }
    for png in ["loss-curve.png", "task-loss.png", "artifact-timeline.png"] {
        let bytes = std::fs::read(out.join(png)).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{png} is a PNG");
    }

    let view = w.view("knobs").await;
    let done: Vec<_> = view.epochs.iter().filter(|e| e.completed_at.is_some()).collect();
    assert_eq!(done.len(), 8);
    let moves = |kind: &str| {
        done.iter()
            .filter(|e| {
                let rollback = e.events.iter().any(|x| matches!(x, ArtifactEvent::Rollback { .. }));
                let update = e.events.iter().any(|x| matches!(x, ArtifactEvent::Update { .. }));
                match kind {
                    "rollback" => rollback,
                    "update" => update && !rollback,
                    _ => !update && !rollback,
                }
            })
            .count()
    };
    let events = |rollback: bool| {
        done.iter().flat_map(|e| &e.events).filter(|x| matches!(x, ArtifactEvent::Rollback { .. }) == rollback).count()
    };
    assert!(moves("update") > 0 && moves("rollback") > 0, "evolve on knobs both updates and rolls back");

    // Loss curve: one dot per epoch in its move's colour; a held-out diamond per epoch.
    let loss = std::fs::read_to_string(out.join("loss-curve.svg")).unwrap();
    let dots = fills(&loss, "circle");
    assert_eq!(dots.values().sum::<usize>(), 8, "{dots:?}");
    assert_eq!(dots.get(GREEN).copied().unwrap_or(0), moves("update"));
    assert_eq!(dots.get(RED).copied().unwrap_or(0), moves("rollback"));
    assert_eq!(dots.get(GREY).copied().unwrap_or(0), moves("none"));
    let held = done.iter().filter(|e| e.holdout_mean_loss.is_some()).count();
    assert_eq!(held, 8, "knobs has a held-out task");
    assert_eq!(fills(&loss, "polygon").get(ORANGE).copied(), Some(held));
    // The dots go left to right, one per epoch column.
    let xs: Vec<f64> =
        elements(&loss).into_iter().filter(|(n, _)| n == "circle").map(|(_, a)| a["cx"].parse().unwrap()).collect();
    assert!(xs.windows(2).all(|w| w[1] > w[0]), "{xs:?}");
    assert!(texts(&loss).iter().any(|t| t == "Loss curve · knobs"));

    // Per-task loss: a median per epoch, a diamond per held-out task and epoch.
    let spread = std::fs::read_to_string(out.join("task-loss.svg")).unwrap();
    assert_eq!(fills(&spread, "circle").get(BLUE).copied(), Some(8));
    let held_runs: usize = done.iter().map(|e| e.tasks.iter().filter(|t| t.holdout).count()).sum();
    assert_eq!(fills(&spread, "polygon").get(ORANGE).copied(), Some(held_runs));

    // Timeline: a circle per update, a red × per rollback, a row named after the artifact.
    let timeline = std::fs::read_to_string(out.join("artifact-timeline.svg")).unwrap();
    assert_eq!(fills(&timeline, "circle").get(GREEN).copied().unwrap_or(0), events(false));
    assert_eq!(fills(&timeline, "polygon").get(RED).copied().unwrap_or(0), events(true));
    assert!(texts(&timeline).iter().any(|t| t == "knobs"), "the artifact's row is labelled");

    // The page: the three charts and a table row per epoch naming its changes.
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    for stem in ["loss-curve", "task-loss", "artifact-timeline"] {
        assert!(page.contains(&format!("<img src=\"{stem}.svg\"")), "{stem} shown");
        assert!(page.contains(&format!("href=\"{stem}.png\"")), "{stem} PNG linked");
    }
    for e in &done {
        let row = page
            .lines()
            .find(|l| l.starts_with(&format!("<tr data-epoch=\"{}\"", e.epoch_num)))
            .unwrap_or_else(|| panic!("epoch {} has a row", e.epoch_num));
        assert!(row.contains(&format!("{:.4}", e.mean_loss.unwrap())), "{row}");
        assert!(row.contains(&format!("{:.4}", e.holdout_mean_loss.unwrap())), "{row}");
        for ev in &e.events {
            let (kind, from, to) = match ev {
                ArtifactEvent::Update { from_version, to_version, .. } => ("update", from_version, to_version),
                ArtifactEvent::Rollback { from_version, to_version, .. } => ("rollback", from_version, to_version),
            };
            assert!(row.contains(&format!("{kind} knobs v{from}→v{to}")), "{row}");
        }
    }

    // --json says what was written; a second report replaces the first.
    let json: serde_json::Value =
        serde_json::from_str(&w.ok(&["--json", "report", "knobs", "--out", out.to_str().unwrap()])).unwrap();
    assert_eq!(json["files"].as_array().unwrap().len(), 7);
    assert_eq!(json["index"], out.join("index.html").display().to_string());
    let leftovers: Vec<_> = std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 7, "no partial files left behind: {leftovers:?}");
}

/// A suite and artifact whose names carry markup, written straight into the
/// store (a suite file could not name them so, but a database can hold them).
async fn suite_with_markup(db: &Path, suite: &str, artifact: &str) {
    let store = Store::open(db).await.unwrap();
    let tasks = serde_json::json!([
        { "name": "<b>bold</b>", "kind": "command" },
        { "name": "quiet", "kind": "command", "holdout": true }
    ]);
    let id = store.upsert_suite(suite, &tasks.to_string(), "{}", None).await.unwrap();
    for num in 1..=2 {
        let epoch = store.insert_epoch(id, num, "{}").await.unwrap();
        for (task, loss) in [("<b>bold</b>", 0.4), ("quiet", 0.2)] {
            let run = store.insert_run(id, epoch.id, task, "command", "runs/x", None).await.unwrap();
            let end = attractor::store::RunEnd {
                task_name: task.into(),
                status: "complete".into(),
                loss: Some(loss / num as f64),
                scores_json: Some("{}".into()),
                ..Default::default()
            };
            store.finish_run(run, epoch.id, &end).await.unwrap();
        }
        let child = serde_json::json!({
            "artifacts": { artifact: num },
            "events": [{ "type": "update", "artifact": artifact, "from_version": num - 1, "to_version": num,
                         "rationale": "\"quoted\" <i>why</i>" }]
        });
        store
            .complete_epoch(epoch.id, Some(0.4 / num as f64), &EpochClose::default(), |_| child.to_string())
            .await
            .unwrap();
    }
    store.close().await;
}

#[tokio::test]
async fn names_that_carry_markup_are_escaped_in_the_page_and_in_the_charts() {
    let w = World::new();
    let suite = "<script>alert('suite')</script>";
    let artifact = "<img src=x onerror=alert(1)>";
    suite_with_markup(&w.db(), suite, artifact).await;
    let out = w.path("report");
    w.ok(&["report", suite, "--out", out.to_str().unwrap()]);

    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(!page.contains("<script"), "no script element in the page");
    assert!(!page.contains("<img src=x"), "no injected image");
    assert!(!page.contains("<b>bold"), "task names are text");
    assert!(page.contains("&lt;script&gt;alert(&#39;suite&#39;)&lt;/script&gt;"));
    assert!(page.contains("update &lt;img src=x onerror=alert(1)&gt; v0→v1"));
    assert!(page.contains("title=\"&quot;quoted&quot; &lt;i&gt;why&lt;/i&gt;\""));
    assert!(page.contains("&lt;b&gt;bold&lt;/b&gt;"));
    assert!(page.contains("Content-Security-Policy"), "the page forbids scripts itself");

    // The SVGs stay well-formed XML with the names as text, not elements.
    for svg in ["loss-curve.svg", "task-loss.svg", "artifact-timeline.svg"] {
        let text = std::fs::read_to_string(out.join(svg)).unwrap();
        let tags: Vec<String> = elements(&text).into_iter().map(|(n, _)| n).collect();
        assert!(!tags.iter().any(|t| t == "script" || t == "img"), "{svg}: {tags:?}");
    }
    let timeline = std::fs::read_to_string(out.join("artifact-timeline.svg")).unwrap();
    assert!(texts(&timeline).iter().any(|t| t.starts_with("<img src=x")), "the row label reads as the name");
}

#[tokio::test]
async fn unknown_suites_empty_suites_and_unwritable_folders_are_refused_with_a_hint() {
    let w = World::new();
    w.ok(&["run", &fixture("knobs.suite.yaml"), "--epochs", "1", "--seed", "1", "--quiet"]);

    let out = w.cli(&["report", "no-such-suite", "--out", w.path("r").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no suite `no-such-suite`") && err.contains("known suites: knobs"), "{err}");

    // A suite whose only epoch never finished has nothing to chart.
    let store = Store::open(&w.db()).await.unwrap();
    let id = store.upsert_suite("fresh", "[]", "{}", None).await.unwrap();
    store.insert_epoch(id, 1, "{}").await.unwrap();
    store.close().await;
    let out = w.cli(&["report", "fresh", "--out", w.path("r").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`fresh` has no finished epoch") && err.contains("hint:"), "{err}");
    assert!(!w.path("r").exists(), "nothing written");

    // A file where the folder should be.
    let blocker = w.path("taken");
    std::fs::write(&blocker, "a file").unwrap();
    let out = w.cli(&["report", "knobs", "--out", blocker.join("inside").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write the report into") && err.contains("hint: choose a folder"), "{err}");
    let out = w.cli(&["report", "knobs", "--out", blocker.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("it is a file, not a folder"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

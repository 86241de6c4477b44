//! A run ends on its best.
//!
//! Every epoch but the last is followed by a measurement of what it changed;
//! the last epoch's proposal is made and nobody measures it. Left active, a
//! run would hand the user an untested prompt as its result — and on a small
//! model most proposals are worse than what they replace. So when an epoch
//! loop ends, the artifacts are set to the versions the run measured best:
//! the lowest mean training loss among the version sets the loop did not
//! roll back (its own judgement, noise included, stands) whose held-out mean
//! was no worse than where the run started (within the held-out tolerance).
//! A version set measured more than once (a noisy suite's repeats, a
//! rollback measured again) counts with the mean of its epochs. The versions
//! left behind stay in the history; the closing line says which are active
//! and why.
//!
//! A proposal set back without being measured is *pending*, not forgotten:
//! the next run of the suite takes it up and measures it first — unless a
//! person moved the artifact meanwhile — so a suite run one epoch at a time
//! learns as one run of many epochs does.

use crate::domain::{ArtifactEvent, EpochEvent};
use std::collections::BTreeMap;

use serde::Serialize;

use super::{EpochSummary, RunnerError, SuiteRunner};
use crate::bus::{ArtifactMove, Event};
use crate::store::EpochRow;

/// The kind of the event a settled run records.
const RUN_SETTLED: &str = "run_settled";

/// The versions a run ended on, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settled {
    /// The suite's last epoch when the run ended.
    pub after_epoch: i64,
    /// The active version of every artifact the run changed.
    pub versions: BTreeMap<String, i64>,
    /// The epochs that measured them.
    pub epochs: Vec<i64>,
    pub mean_loss: f64,
    pub holdout_mean: Option<f64>,
    /// Artifacts set back at the end: what was active, and whether the run
    /// had measured it.
    pub moved: Vec<ArtifactMove>,
}

impl Settled {
    /// The closing line: which versions are active and why.
    pub fn describe(&self) -> String {
        let epochs: Vec<String> = self.epochs.iter().map(i64::to_string).collect();
        let measured = format!(
            "the best this run measured (epoch{} {}: mean loss {:.4}{})",
            if self.epochs.len() == 1 { "" } else { "s" },
            epochs.join(", "),
            self.mean_loss,
            self.holdout_mean.map(|h| format!(", held-out {h:.4}")).unwrap_or_default()
        );
        if self.moved.is_empty() {
            if self.versions.is_empty() {
                return format!("active: the versions the run started with — {measured}");
            }
            let active: Vec<String> = self.versions.iter().map(|(n, v)| format!("{n} v{v}")).collect();
            return format!("active: {} — {measured}", active.join(", "));
        }
        let moves: Vec<String> = self
            .moved
            .iter()
            .map(|m| {
                let why = match m.from_mean_loss {
                    Some(l) => format!("measured at mean loss {l:.4}"),
                    None => "proposed last, never measured; pending for the next run".to_string(),
                };
                format!("{} v{} (not v{}: {why})", m.artifact, m.to_version, m.from_version)
            })
            .collect();
        format!("active: {} — {measured}", moves.join(", "))
    }
}

/// One version set as the run measured it.
struct Measured {
    versions: BTreeMap<String, i64>,
    epochs: Vec<i64>,
    losses: Vec<f64>,
    holdouts: Vec<f64>,
}

impl Measured {
    fn mean_loss(&self) -> f64 {
        // Never empty: a set is made with its first epoch's loss.
        crate::loss::mean(&self.losses).unwrap_or(f64::INFINITY)
    }

    fn holdout_mean(&self) -> Option<f64> {
        crate::loss::mean(&self.holdouts)
    }
}

/// The version sets `summaries` measured (with the versions each epoch ran
/// on), in the order first measured.
fn measured_sets(epochs: &[(&EpochSummary, BTreeMap<String, i64>)]) -> Vec<Measured> {
    let mut sets: Vec<Measured> = Vec::new();
    for (s, versions) in epochs {
        let Some(loss) = s.mean_loss else { continue };
        let i = match sets.iter().position(|m| &m.versions == versions) {
            Some(i) => i,
            None => {
                sets.push(Measured {
                    versions: versions.clone(),
                    epochs: Vec::new(),
                    losses: Vec::new(),
                    holdouts: Vec::new(),
                });
                sets.len() - 1
            }
        };
        sets[i].epochs.push(s.epoch_num);
        sets[i].losses.push(loss);
        sets[i].holdouts.extend(s.holdout_mean_loss);
    }
    sets
}

/// The best of `sets`: the lowest mean loss among those whose held-out mean
/// is within `tolerance` of the first set's (the state the run started
/// from, which always qualifies); on a tie, `current` if it is among them,
/// else the one measured first.
fn best<'a>(sets: &'a [Measured], current: &BTreeMap<String, i64>, tolerance: f64) -> Option<&'a Measured> {
    let start = sets.first()?.holdout_mean();
    let passes = |m: &Measured| match (start, m.holdout_mean()) {
        (Some(s), Some(h)) => h <= s + tolerance,
        _ => true,
    };
    let mut best: Option<&Measured> = None;
    for m in sets.iter().filter(|m| passes(m)) {
        best = match best {
            None => Some(m),
            Some(b) if m.mean_loss() < b.mean_loss() => Some(m),
            Some(b) if m.mean_loss() == b.mean_loss() && &m.versions == current => Some(m),
            keep => keep,
        };
    }
    best
}

impl SuiteRunner {
    /// Sets every artifact to the version the run measured best (see the
    /// module doc); `None` when the run measured nothing.
    pub(super) async fn settle_on_best(
        &self,
        suite_id: i64,
        summaries: &[EpochSummary],
    ) -> Result<Option<Settled>, RunnerError> {
        // The versions each epoch ran on, read in one query.
        let rows = self.store.epochs(suite_id).await?;
        let epochs: Vec<(&EpochSummary, BTreeMap<String, i64>)> = summaries
            .iter()
            .filter_map(|s| {
                let row = rows.iter().find(|r| r.id == s.epoch_id)?;
                Some((s, serde_json::from_str(&row.parent_artifacts_json).unwrap_or_default()))
            })
            .collect();
        // A set the loop itself rolled back (worse, or no better than its
        // noise) is not reinstated by its raw mean: the loop's judgement of
        // it stands.
        let rolled_back: Vec<(String, i64)> = summaries
            .iter()
            .flat_map(|s| &s.events)
            .filter_map(|e| match e {
                EpochEvent::Artifact(ArtifactEvent::Rollback { artifact, from_version, .. }) => {
                    Some((artifact.clone(), *from_version))
                }
                _ => None,
            })
            .collect();
        let mut sets = measured_sets(&epochs);
        let first = sets.first().map(|m| m.versions.clone());
        sets.retain(|m| {
            Some(&m.versions) == first.as_ref() || !rolled_back.iter().any(|(name, v)| m.versions.get(name) == Some(v))
        });
        let current = self.snapshot().await?;
        let Some(best) = best(&sets, &current, self.config.holdout_tolerance) else { return Ok(None) };
        let mut moved = Vec::new();
        for (name, &version) in &best.versions {
            let Some(&from) = current.get(name) else { continue };
            if from == version {
                continue;
            }
            // Told as part of the run_settled event, not as a person's move.
            self.registry.set_active(name, version).await?;
            moved.push(ArtifactMove {
                artifact: name.clone(),
                from_version: from,
                to_version: version,
                from_mean_loss: sets.iter().find(|m| m.versions == current).map(Measured::mean_loss),
            });
        }
        // The line names what this run changed, not every artifact there is.
        let changed = |name: &str| {
            sets.iter().any(|m| m.versions.get(name) != best.versions.get(name))
                || moved.iter().any(|m| m.artifact == name)
        };
        let versions: BTreeMap<String, i64> =
            best.versions.iter().filter(|(n, _)| changed(n)).map(|(n, v)| (n.clone(), *v)).collect();
        let after_epoch = summaries.iter().map(|s| s.epoch_num).max().unwrap_or(0);
        let settled = Settled {
            after_epoch,
            versions,
            epochs: best.epochs.clone(),
            mean_loss: best.mean_loss(),
            holdout_mean: best.holdout_mean(),
            moved,
        };
        self.record_settled(suite_id, &settled).await?;
        Ok(Some(settled))
    }

    /// Records the settle where the next run looks for it: written to the
    /// store at once (the bus's own writer may lag behind a run that starts
    /// right after) and shown on the bus as already written.
    async fn record_settled(&self, suite_id: i64, s: &Settled) -> Result<(), RunnerError> {
        let event = Event::RunSettled {
            suite_id,
            after_epoch: s.after_epoch,
            epochs: s.epochs.clone(),
            mean_loss: s.mean_loss,
            holdout_mean_loss: s.holdout_mean,
            moved: s.moved.clone(),
            line: s.describe(),
        };
        let occurred_at = crate::now_rfc3339();
        crate::bus::record(&self.store, &event, &occurred_at).await?;
        self.bus.replay(event, occurred_at);
        Ok(())
    }

    /// Takes up the proposals the suite's last run set back unmeasured (see
    /// the module doc): made active again when nothing ran since and the
    /// artifact is still where that run left it.
    pub(super) async fn take_up_pending(&self, suite_id: i64, last: &EpochRow) -> Result<(), RunnerError> {
        let Some(row) = self.store.last_event_of_suite(suite_id, RUN_SETTLED).await? else { return Ok(()) };
        let Ok(Event::RunSettled { after_epoch, moved, .. }) = serde_json::from_str::<Event>(&row.event.payload_json)
        else {
            return Ok(());
        };
        if after_epoch != last.epoch_num {
            return Ok(());
        }
        let chosen = self.store.events_after(row.id, "artifact_activated").await?;
        let chosen_by_person = |artifact: &str| {
            chosen.iter().any(|e| {
                matches!(serde_json::from_str::<Event>(&e.event.payload_json), Ok(Event::ArtifactActivated { artifact: a, .. }) if a == artifact)
            })
        };
        for m in moved.iter().filter(|m| m.from_mean_loss.is_none()) {
            let active = self.registry.get_active(&m.artifact).await?.version;
            if active != m.to_version || chosen_by_person(&m.artifact) {
                tracing::info!(artifact = %m.artifact, pending = m.from_version, active, "a person moved the artifact since the last run; its pending proposal stays inactive");
                continue;
            }
            tracing::info!(artifact = %m.artifact, version = m.from_version, "taking up the proposal the last run left unmeasured");
            self.registry.set_active(&m.artifact, m.from_version).await?;
            self.bus.publish(Event::ArtifactActivated {
                artifact: m.artifact.clone(),
                from_version: m.to_version,
                to_version: m.from_version,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: i64, epochs: &[i64], losses: &[f64], holdouts: &[f64]) -> Measured {
        Measured {
            versions: BTreeMap::from([("prompt".to_string(), v)]),
            epochs: epochs.to_vec(),
            losses: losses.to_vec(),
            holdouts: holdouts.to_vec(),
        }
    }

    #[test]
    fn the_lowest_training_loss_wins_unless_its_held_out_loss_rose_past_the_tolerance() {
        let sets = vec![set(0, &[1], &[0.5], &[0.5]), set(1, &[2], &[0.3], &[0.7]), set(2, &[3], &[0.4], &[0.52])];
        let current = BTreeMap::from([("prompt".to_string(), 3)]);
        // v1 trains best but lost on held-out; v2 is within 0.05 of the start.
        assert_eq!(best(&sets, &current, 0.05).unwrap().versions["prompt"], 2);
        // Without held-out tasks, the training loss alone decides.
        let plain = vec![set(0, &[1], &[0.5], &[]), set(1, &[2], &[0.3], &[])];
        assert_eq!(best(&plain, &current, 0.0).unwrap().versions["prompt"], 1);
    }

    #[test]
    fn a_tie_keeps_what_is_active_else_the_first_measured() {
        let sets = vec![set(0, &[1], &[0.4], &[]), set(1, &[2], &[0.4], &[])];
        let on_v1 = BTreeMap::from([("prompt".to_string(), 1)]);
        assert_eq!(best(&sets, &on_v1, 0.0).unwrap().versions["prompt"], 1);
        let on_v2 = BTreeMap::from([("prompt".to_string(), 2)]);
        assert_eq!(best(&sets, &on_v2, 0.0).unwrap().versions["prompt"], 0);
    }

    #[test]
    fn the_closing_line_says_what_is_active_and_why() {
        let s = Settled {
            after_epoch: 3,
            versions: BTreeMap::from([("prompt".to_string(), 1)]),
            epochs: vec![2, 3],
            mean_loss: 0.25,
            holdout_mean: Some(0.3),
            moved: vec![ArtifactMove {
                artifact: "prompt".into(),
                from_version: 2,
                to_version: 1,
                from_mean_loss: None,
            }],
        };
        let line = s.describe();
        assert!(
            line.starts_with("active: prompt v1 (not v2: proposed last, never measured; pending for the next run)"),
            "{line}"
        );
        assert!(line.contains("epochs 2, 3: mean loss 0.2500, held-out 0.3000"), "{line}");
    }
}

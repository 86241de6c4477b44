//! The coordinator's settings (`ASOConfig`, seed 000 §2.1) and the thresholds
//! its diagnostics use (`DiagnosticThresholds`).
//!
//! The settings are the learnable `aso_config` artifact: its active version is
//! read as JSON over these defaults, so `evolve` can tune the tier-1
//! thresholds across a suite and a missing key simply keeps its default.

use serde::{Deserialize, Serialize};

/// When the LLM tier is consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SupervisionMode {
    /// Every step (the costly mode the tiered design replaces; kept to measure against).
    EveryStep,
    /// Every `supervision_interval` steps.
    Periodic,
    /// Only on significant events (stagnation, feasibility, divergence, a worsening constraint).
    EventTriggered,
    /// Never: tier 1 answers every step (beyond the seed — for a task whose
    /// model should do the work, not the supervising, and to measure the
    /// heuristics alone).
    HeuristicsOnly,
}

/// How the evaluation budget is split across trajectories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetSplit {
    Equal,
    /// Budget left by a trajectory that stopped early goes to those still running.
    Adaptive,
}

/// What a local trajectory does when its SQP descent ends without settling
/// (out of iterations, or stuck twice at an unconverged point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsettledDescent {
    /// The augmented Lagrangian goes on from the descent's best point.
    Alm,
    /// The trajectory ends there: its best point gets the end's polish (a
    /// second SLSQP run, with a fresh quasi-Newton model), and the round's
    /// other starts go on searching.
    End,
}

/// Settings of the ASO coordinator, with the seed's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AsoConfig {
    pub supervision_mode: SupervisionMode,
    pub supervision_interval: u32,
    pub feasibility_threshold: f64,
    pub stagnation_objective_threshold: f64,
    pub stagnation_violation_threshold: f64,
    pub max_stagnation_steps: u32,
    pub violation_increase_threshold: f64,
    pub violation_decrease_threshold: f64,
    pub min_violation_for_trend: f64,
    /// Trajectories run side by side: an agent task's samples under
    /// `supervision: aso`, and a numeric run's trajectories per round
    /// unless `round_trajectories` says otherwise.
    pub n_trajectories: u32,
    pub trajectory_budget_split: BudgetSplit,
    pub max_constraint_weight: f64,
    pub max_penalty_parameter: f64,
    pub llm_timeout_seconds: f64,
    pub llm_max_retries: u32,
    pub use_heuristic_fallback: bool,
    /// Consecutive LLM failures after which a human is asked (tier 3).
    pub llm_failures_before_human: u32,
    /// Beyond the seed: rounds of trajectories in a row that do not improve
    /// the best feasible point, after which the coordinator stops with budget
    /// left. Higher spends more of the budget hunting for a better basin.
    pub max_stalled_rounds: u32,
    /// Beyond the seed: rounds in a row without a better feasible point after
    /// which a population trajectory (εDE, [`crate::numeric::population`])
    /// takes over; 0 never. Equal to `max_stalled_rounds` by default, so the
    /// population spends budget the rounds would have left unused (above
    /// `max_stalled_rounds` it never comes: the rounds stop first).
    pub population_after_stalled_rounds: u32,
    /// Problems with at least this many variables start a population
    /// trajectory once a round's trajectories end in different optima (a
    /// rugged landscape, where multistart local search scales worst); 0 never.
    pub population_min_dimension: u32,
    /// Rounds of local trajectories a problem gets before that check.
    pub population_after_rounds: u32,
    /// Share of the budget left that a population trajectory may use. All of
    /// it by default: a population that started is the best use of what is
    /// left, and one cut short wastes what it was given.
    pub population_budget_share: f64,
    /// Population trajectories one coordinator run may start.
    pub max_population_trajectories: u32,
    /// Members per variable. εDEag uses 4; on g02 (100 seeds) 4 let the
    /// population settle in a neighbouring basin in 5 % of runs and 5 in
    /// none, but over 600 seeds 5 did in 21 runs (3.5 %) and 6 in 8 (1.3 %;
    /// median evaluations to success 41,500 → 48,200); 7 in 11 of 300
    /// (bench/HISTORY.md, 2026-11-30). No other bundled problem's run
    /// changed over 100 seeds: only g02's start a population.
    pub population_size_per_dimension: f64,
    /// Differential weight F the members start with.
    pub population_scale_factor: f64,
    /// Crossover rate CR the members start with.
    pub population_crossover_rate: f64,
    /// Generations per chunk: one diagnostics, directive and telemetry row each.
    pub population_chunk_generations: u32,
    /// Relative improvement of the population's best since its last polish
    /// that earns it a new SQP polish. A tenth of a percent (was 1 %): on
    /// g02 a polish from the population's best lands in the basin that best
    /// is in, and the basins near the optimum are closer than 1 % apart, so
    /// polishing more often finds the optimum's sooner — 286 of 300 runs
    /// against 285 (seeds 13 and 177 solved, 136 lost), 20 of seeds 1–20
    /// against 19, the same evaluations in all (bench/HISTORY.md,
    /// 2026-11-27 "The first Hessian's scale").
    pub population_polish_gain: f64,
    /// Probability that an infeasible child gets a gradient repair.
    pub population_repair_probability: f64,
    /// Beyond the seed — a trajectory's own termination: judged steps in a
    /// row, all feasible, over which its objective and its best point must
    /// stop changing (by `stop_objective_tolerance` relative to the
    /// objective's size, `stop_step_tolerance` relative to each variable's
    /// range) for it to stop as converged; 0 never.
    pub stop_window: u32,
    pub stop_objective_tolerance: f64,
    pub stop_step_tolerance: f64,
    /// Beyond the seed — the run's termination: once at least `agreement`
    /// trajectories have ended on the best value (within
    /// `agreement_tolerance`, relative) and `stop_after_agreed_rounds`
    /// rounds in a row did not improve it, the hops around the best stop
    /// and every start is global (or on a constraint's boundary); 0 never
    /// (then only `max_stalled_rounds` and the budget stop the run). One,
    /// with four rounds of global starts after it: once descents stop at
    /// the minima they reach (`join_radius`), a round of hops that did not
    /// pay is enough and a global start costs little; over 100 seeds × 24
    /// problems 2,399 successes against 2,398 with three hop rounds and
    /// three global ones (g01 100 against 99), 3.7 % fewer evaluations (g14
    /// 5,748 → 4,221 median, g11 2,414 → 1,866, speed reducer 2,047 →
    /// 1,841), and over 300 seeds of g01, g03, g08, g09, g11, g13, g14,
    /// g17, g18, g24, the pressure vessel and the speed reducer no run lost
    /// (g01 299 against 298; bench/HISTORY.md, 2026-11-30).
    pub stop_after_agreed_rounds: u32,
    pub agreement: u32,
    pub agreement_tolerance: f64,
    /// The run stops once the independent starts say at most this share of
    /// the region leads to a minimum no start has reached (Boender and
    /// Rinnooy Kan's posterior expectation w(w + 1)/(N(N − 1)) for w
    /// distinct minima from N starts: the chance a further start finds one
    /// unseen). 0.02: one distinct minimum needs 11 starts, three 25.
    pub max_unseen_share: f64,
    /// …or once they say fewer than this many minima are probably unseen
    /// (their estimate w(N − 1)/(N − w − 2) − w); 0, the default, leaves
    /// the decision to the share alone. Many minima each found once keep
    /// this estimate up for hundreds of starts (Townsend's function: 12
    /// from 120 starts, still 1.5 unseen), long after the share is small.
    pub max_unseen_minima: f64,
    /// …or once the chance that a further start finds an unseen minimum
    /// better than every one seen is at most this
    /// (`BasinEvidence::better_share`, w/(N(N − 1)): the unseen minimum's
    /// value ranked at random among the w + 1); 0 leaves it out. 0.005:
    /// one minimum still needs the share's 11 starts (15 by this rule), but
    /// five need 32 rather than 39 and ten 46 rather than 75 — over 300
    /// seeds g08's evaluations fell 3,614 → 2,342 a run, g24's 1,469 →
    /// 1,207, g01's 2,567 → 2,266, no success lost. At 0.01 g01 fell to
    /// 293 of 300 and g08 to 299; at 0.02 in place of the share (with one
    /// hop round and one global round) to 266 and 291 — the ranking is
    /// wrong where the best minimum has the smallest basin
    /// (bench/HISTORY.md, 2026-11-29).
    pub max_better_share: f64,
    /// Whether a population trajectory (if none ran yet) gets its look
    /// before the run stops on agreement. Off by default: it takes what is
    /// left of the budget, which on a small one is all of it. On finds
    /// basins the starts rarely reach (g17: 10 of 20 runs against 5 with 100,000
    /// evaluations; spending 51 % of the budget against 36 %, see bench/HISTORY.md).
    pub population_before_stopping: bool,
    /// Beyond the seed — rounds of global starts only (no hops) the run
    /// makes once the hops around the agreed best have stopped paying,
    /// before the estimate of unseen minima may stop it. One: over 100
    /// seeds g17 95 of 100 runs against 87 with none (its failures had
    /// stopped at the second basin right after the hops, on the hop rounds'
    /// two global starts each), for 7 % more evaluations in all; two gave
    /// no more (bench/HISTORY.md, 2026-11-27). Three since the descents are
    /// as long as SciPy's (`descent_iterations`): g17's optimum is then
    /// reached from one global start in five, and its runs that stopped
    /// agreed on the second basin (8,927.6) after twenty trajectories were
    /// 6 of 300 with one round, 2 with two, none with three — for 6 % and
    /// 15 % more evaluations in all, no median to success changed (the
    /// rounds come after the best is found; bench/HISTORY.md, 2026-11-27 "A
    /// descent as long as SciPy's"). Four since one round of hops stops them
    /// (`stop_after_agreed_rounds`): the global starts before the estimate
    /// may stop a run are as many as before (22), in fewer rounds.
    pub global_rounds_before_stopping: u32,
    /// A local trajectory whose first SQP descent from its seed settles at
    /// a feasible point ends there, without the augmented Lagrangian.
    pub stop_after_descent: bool,
    /// What a local trajectory does when its SQP descent does not settle.
    /// `end`: nearly every such descent was stuck twice (SLSQP's line
    /// search found no step), either at its start far outside the feasible
    /// region (g09: a violation of 350–600 after 15 evaluations) or close to
    /// a minimum it could not verify (speed reducer: 2,994.47 against
    /// 2,994.42); the augmented Lagrangian after it cost 500–5,500
    /// evaluations a trajectory where the polish, or the next start, does
    /// as well. Over 20 seeds × 24 problems: no success lost (nor over 300
    /// seeds of g01, g08, g13, g17, g18, g24), evaluations in all −13 %
    /// (g09 29,885 → 6,173 median, pressure vessel 13,619 → 9,605, speed
    /// reducer 5,308 → 2,778; bench/HISTORY.md, 2026-11-29). `alm` was the
    /// behaviour before.
    pub unsettled_descent: UnsettledDescent,
    /// Beyond the seed — SLSQP iterations a local trajectory's SQP descent
    /// may take in one run (each about dimension + 1 evaluations); 0: the
    /// polish's `POLISH_ITERATIONS` (60). 250: on g17 SLSQP crawls along the
    /// jump of the piecewise cost at x₂ = 100 to the optimum in 100–250
    /// iterations from one start in five (SciPy's SLSQP in the bench's
    /// multistart likewise, its iterations unbounded); cut at 60 the crawl
    /// stopped 6e-4 to 6e-3 above the optimum and the augmented Lagrangian
    /// after it did not close the gap. Over 300 seeds × 24 problems g17
    /// 294 of 300 runs against 276, its median evaluations to success 664
    /// against 10,094 (multistart SLSQP 1,348), evaluations in all −27 %;
    /// no problem lost a success, 150 gave the same but for g17's median
    /// (740) (bench/HISTORY.md, 2026-11-27 "A descent as long as SciPy's").
    /// Descents that do not settle are rare elsewhere: they went on to the
    /// augmented Lagrangian after 60 iterations before and now later.
    pub descent_iterations: u32,
    /// A round's local trajectories take turns for their SQP descents (the
    /// ALM phases run together, after all of them): a multistart of SQP,
    /// where the first seed's descent is done before the second's starts —
    /// on an easy problem the first answer comes after one SLSQP run.
    pub descents_in_turn: bool,
    /// Beyond the seed — the first round gives one descent the lead (with
    /// `descents_in_turn`): it evaluates only its own `seed_oversampling`
    /// samples and descends from the better at once; the round's other
    /// trajectories evaluate the rest of its samples (one batch) when their
    /// turns come. Over 100 seeds × 24 problems the median evaluations to
    /// success fell on 15 problems (g04 26 → 20, g11 24 → 20, g23 168 →
    /// 142, welded beam 54 → 48) and rose on 9 (g24 33 → 49, pressure
    /// vessel 120 → 172, g13 308 → 342: their first start is the better of
    /// two samples, not the best of eight); 14 problems at or under
    /// multistart SLSQP's against 11 (bench/HISTORY.md, 2026-11-27).
    pub lead_descent: bool,
    /// Beyond the seed — local trajectories per round of a numeric run
    /// (0: `n_trajectories`). Four, with two of them hopping around the
    /// best (`hops_per_round`): over 100 seeds × 24 problems 2,357
    /// successes against 2,343 with three and one hop — g17 62 of 100
    /// against 48, g18's median evaluations to success 234 against 296 —
    /// for 6 % more evaluations in all (bench/HISTORY.md, 2026-11-27 "Four
    /// starts a round, two of them hops"). Its own field because agent
    /// tasks read `n_trajectories` as their number of samples.
    pub round_trajectories: u32,
    /// How many of a round's starts hop around the best point once one is
    /// known (at most the round's trajectories − 1); the others are global
    /// starts. Two of four: the hops close in on g17's optimum, which sits
    /// on a jump of its piecewise cost where descents stop short of it, and
    /// two global starts a round keep g01's (with two hops of three, g01
    /// fell to 97 of 100 runs and its median to success rose 359 → 442).
    pub hops_per_round: u32,
    /// Once the hops have stopped paying, how many starts of each round lie
    /// on the surface of a constraint active at the best point (the rest
    /// are global samples), while they find new minima
    /// (`dry_boundary_starts`): a basin in the corner of a narrow feasible
    /// band is reached along its boundary far more often than from the box.
    pub boundary_starts_per_round: u32,
    /// Boundary starts in a row that settle on a value already seen (or do
    /// not settle) before the rounds stop taking them, until a better best
    /// brings them back (0: every round takes them). One: the first that
    /// finds nothing new ends them — on g18 five boundary starts with their
    /// projections onto the constraint cost a quarter of a run. Over 100
    /// seeds × 24 problems no success lost and evaluations −3.5 % (g18
    /// 4,839 → 3,874 median, pressure vessel 4,669 → 3,852, g24 917 → 738,
    /// g04 807 → 625); ending them after one global round instead lost g01
    /// two runs of 100, whose boundary starts reach new minima on the way to
    /// the optimum; counting unsettled ends as new kept the pressure
    /// vessel's going (bench/HISTORY.md, 2026-11-30).
    pub dry_boundary_starts: u32,
    /// Whether a local trajectory stops once it is feasible at a minimum an
    /// earlier one ended at (same value within `agreement_tolerance`, its
    /// point within a thousandth of each range): the rest of its search
    /// would find that minimum again.
    pub stop_at_known_minima: bool,
    /// With `stop_at_known_minima`, a global start's SQP descent stops as
    /// soon as its best point is feasible and within this share of a known
    /// minimum — of each variable's range, and of the minimum's value — and
    /// counts as having reached it (multi-level single linkage's rule, along
    /// the descent): the rest of the descent would converge there again.
    /// Hops around the best are exempt (theirs is to close in on it); 0
    /// waits for the descent's end (then a thousandth of each range and the
    /// agreement tolerance). 0.01: over 100 seeds × 24 problems no success
    /// lost and 10 % fewer evaluations in all (pressure vessel 8,865 → 4,724
    /// median, g14 10,745 → 5,748, g01 2,189 → 1,527, g04 1,259 → 870);
    /// counted by its own value, not the minimum's, a stopped descent looked
    /// like a new minimum to the basin evidence whenever that value was off
    /// by more than the agreement tolerance (bench/HISTORY.md, 2026-11-30).
    pub join_radius: f64,
    /// Samples drawn and evaluated per global start of a round, the best
    /// kept (the first SQP descent reuses its start's evaluation). Two:
    /// with one, every sample is a start and the first descent begins three
    /// evaluations sooner, but over 100 seeds × 24 problems the unchosen
    /// starts cost more than that — g13 97 of 100 runs against 100 (median
    /// to success 743 against 368), g24 52 against 27, spring 309 against
    /// 170 — for gains on g01 and g08 (bench/HISTORY.md, 2026-11-27).
    pub seed_oversampling: u32,
    /// Beyond the seed — the max violation at which a result counts as
    /// feasible: the best point reported, the loss, the run's agreement, and
    /// every SQP polish, which drives points to it. A problem file's
    /// `tolerance` overrides it for that problem.
    pub feasibility_tolerance: f64,
    /// The looser violation the search itself works to (the augmented
    /// Lagrangian's penalty updates, the population's ε level): reaching the
    /// last digits of feasibility is the polish's job, at a fraction of the cost.
    pub search_tolerance: f64,
}

impl Default for AsoConfig {
    fn default() -> Self {
        AsoConfig {
            supervision_mode: SupervisionMode::EventTriggered,
            supervision_interval: 5,
            feasibility_threshold: 1e-3,
            stagnation_objective_threshold: 1e-5,
            stagnation_violation_threshold: 0.05,
            max_stagnation_steps: 5,
            violation_increase_threshold: 0.05,
            violation_decrease_threshold: 0.05,
            min_violation_for_trend: 1e-3,
            n_trajectories: 3,
            trajectory_budget_split: BudgetSplit::Equal,
            max_constraint_weight: 1000.0,
            max_penalty_parameter: 1e6,
            llm_timeout_seconds: 60.0,
            llm_max_retries: 2,
            use_heuristic_fallback: true,
            llm_failures_before_human: 3,
            max_stalled_rounds: 40,
            population_after_stalled_rounds: 40,
            population_min_dimension: 15,
            population_after_rounds: 1,
            population_budget_share: 1.0,
            max_population_trajectories: 1,
            population_size_per_dimension: 6.0,
            population_scale_factor: 0.5,
            population_crossover_rate: 0.9,
            population_chunk_generations: 25,
            population_polish_gain: 0.001,
            population_repair_probability: 0.1,
            stop_window: 3,
            stop_objective_tolerance: 1e-9,
            stop_step_tolerance: 1e-7,
            stop_after_agreed_rounds: 1,
            agreement: 3,
            agreement_tolerance: 1e-4,
            max_unseen_minima: 0.0,
            max_better_share: 0.005,
            max_unseen_share: 0.02,
            population_before_stopping: false,
            global_rounds_before_stopping: 4,
            stop_after_descent: true,
            unsettled_descent: UnsettledDescent::End,
            descent_iterations: 250,
            descents_in_turn: true,
            lead_descent: true,
            round_trajectories: 4,
            hops_per_round: 2,
            boundary_starts_per_round: 1,
            dry_boundary_starts: 1,
            stop_at_known_minima: true,
            join_radius: 0.01,
            seed_oversampling: 2,
            feasibility_tolerance: 1e-6,
            search_tolerance: 1e-4,
        }
    }
}

impl AsoConfig {
    /// Reads the `aso_config` artifact's JSON over the defaults.
    pub fn from_json(text: &str) -> Result<AsoConfig, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Local trajectories in one round of a numeric run: `round_trajectories`,
    /// else `n_trajectories` (at least one).
    pub fn round_size(&self) -> usize {
        let n = if self.round_trajectories > 0 { self.round_trajectories } else { self.n_trajectories };
        n.max(1) as usize
    }

    /// SLSQP iterations of a local trajectory's descent.
    pub fn descent_iterations(&self) -> u64 {
        if self.descent_iterations > 0 {
            u64::from(self.descent_iterations)
        } else {
            crate::aso::finishing::POLISH_ITERATIONS
        }
    }

    /// The ALM settings a coordinator with this configuration runs with:
    /// the defaults, under this configuration's penalty ceiling.
    pub fn alm_settings(&self) -> crate::numeric::alm::AlmSettings {
        let defaults = crate::numeric::alm::AlmSettings::default();
        let search = Some(self.search_tolerance).filter(|t| t.is_finite() && *t > 0.0 && *t < 1.0);
        crate::numeric::alm::AlmSettings {
            max_penalty: self.max_penalty_parameter,
            feasibility_tolerance: search.unwrap_or(defaults.feasibility_tolerance),
            ..defaults
        }
    }

    /// The max violation at which a result on `problem` counts as feasible:
    /// the problem's own tolerance if it declares one, else this
    /// configuration's (brought into (0, 1); 1e-6 if it is not a number there).
    pub fn tolerance_for(&self, problem: &dyn crate::numeric::Problem) -> f64 {
        let valid = |t: f64| t.is_finite() && t > 0.0 && t < 1.0;
        problem
            .feasibility_tolerance()
            .filter(|t| valid(*t))
            .or(Some(self.feasibility_tolerance).filter(|t| valid(*t)))
            .unwrap_or(1e-6)
    }

    /// The population optimizer's settings under this configuration: the
    /// published defaults with this configuration's size, F, CR and repair
    /// probability (each brought into its meaningful range), and the ALM's
    /// feasibility tolerance.
    pub fn population_settings(&self) -> crate::numeric::population::PopulationSettings {
        let defaults = crate::numeric::population::PopulationSettings::default();
        let finite_or = |v: f64, d: f64| if v.is_finite() { v } else { d };
        crate::numeric::population::PopulationSettings {
            size_per_dimension: finite_or(self.population_size_per_dimension, defaults.size_per_dimension)
                .clamp(0.0, 100.0),
            scale_factor: finite_or(self.population_scale_factor, defaults.scale_factor).clamp(0.05, 2.0),
            crossover_rate: finite_or(self.population_crossover_rate, defaults.crossover_rate).clamp(0.0, 1.0),
            repair_probability: finite_or(self.population_repair_probability, defaults.repair_probability)
                .clamp(0.0, 1.0),
            feasibility_tolerance: self.alm_settings().feasibility_tolerance,
            ..defaults
        }
    }

    pub fn thresholds(&self) -> DiagnosticThresholds {
        DiagnosticThresholds {
            feasibility: self.feasibility_threshold,
            stagnation_objective: self.stagnation_objective_threshold,
            stagnation_violation: self.stagnation_violation_threshold,
            trend_increase: self.violation_increase_threshold,
            trend_decrease: self.violation_decrease_threshold,
            min_violation: self.min_violation_for_trend,
        }
    }
}

/// The thresholds diagnostics are judged by, extracted so they can be tested
/// on their own (seed 000 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticThresholds {
    pub feasibility: f64,
    pub stagnation_objective: f64,
    pub stagnation_violation: f64,
    pub trend_increase: f64,
    pub trend_decrease: f64,
    pub min_violation: f64,
}

impl Default for DiagnosticThresholds {
    fn default() -> Self {
        AsoConfig::default().thresholds()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_s_own_tolerance_wins_and_a_nonsense_one_is_ignored() {
        struct Declares(Option<f64>);
        impl crate::numeric::Problem for Declares {
            fn name(&self) -> &str {
                "d"
            }
            fn dimension(&self) -> usize {
                1
            }
            fn bounds(&self) -> Vec<(f64, f64)> {
                vec![(0.0, 1.0)]
            }
            fn inequality_names(&self) -> Vec<String> {
                vec![]
            }
            fn equality_names(&self) -> Vec<String> {
                vec![]
            }
            fn evaluate(&self, _: &[f64]) -> Result<crate::numeric::Evaluation, crate::numeric::EvalError> {
                Err(crate::numeric::EvalError("not evaluated here".into()))
            }
            fn best_known(&self) -> Option<crate::numeric::BestKnown> {
                None
            }
            fn feasibility_tolerance(&self) -> Option<f64> {
                self.0
            }
        }
        let c = AsoConfig::default();
        assert_eq!(c.tolerance_for(&Declares(None)), 1e-6);
        assert_eq!(c.tolerance_for(&Declares(Some(1e-3))), 1e-3);
        assert_eq!(c.tolerance_for(&Declares(Some(f64::NAN))), 1e-6);
        let odd = AsoConfig { feasibility_tolerance: -1.0, search_tolerance: 5.0, ..AsoConfig::default() };
        assert_eq!(odd.tolerance_for(&Declares(None)), 1e-6, "out of (0, 1): the default");
        assert_eq!(odd.alm_settings().feasibility_tolerance, 1e-4, "the search keeps its default too");
    }

    #[test]
    fn defaults_follow_the_seed() {
        let c = AsoConfig::default();
        assert_eq!(c.supervision_mode, SupervisionMode::EventTriggered);
        assert_eq!((c.supervision_interval, c.max_stagnation_steps, c.n_trajectories), (5, 5, 3));
        assert_eq!((c.feasibility_threshold, c.stagnation_objective_threshold), (1e-3, 1e-5));
        assert_eq!((c.max_constraint_weight, c.max_penalty_parameter), (1000.0, 1e6));
        assert_eq!((c.llm_timeout_seconds, c.llm_max_retries, c.use_heuristic_fallback), (60.0, 2, true));
        let t = DiagnosticThresholds::default();
        assert_eq!((t.trend_increase, t.trend_decrease, t.min_violation), (0.05, 0.05, 1e-3));
    }

    #[test]
    fn a_default_numeric_round_has_four_starts_two_of_them_global() {
        let c = AsoConfig::default();
        assert_eq!((c.round_size(), c.hops_per_round), (4, 2));
        assert_eq!(c.n_trajectories, 3, "agent tasks keep their three samples");
        // Only without a round size of its own does a run follow n_trajectories.
        let follows = AsoConfig { round_trajectories: 0, n_trajectories: 5, ..AsoConfig::default() };
        assert_eq!(follows.round_size(), 5);
        let none = AsoConfig { round_trajectories: 0, n_trajectories: 0, ..AsoConfig::default() };
        assert_eq!(none.round_size(), 1, "a round has at least one start");
    }

    #[test]
    fn partial_json_keeps_the_other_defaults_and_typos_are_errors() {
        let c = AsoConfig::from_json(r#"{"max_stagnation_steps": 9, "supervision_mode": "every_step"}"#).unwrap();
        assert_eq!(c.max_stagnation_steps, 9);
        assert_eq!(c.supervision_mode, SupervisionMode::EveryStep);
        assert_eq!(c.n_trajectories, 3);
        assert!(AsoConfig::from_json(r#"{"max_stagnaton_steps": 9}"#).is_err());
    }

    #[test]
    fn population_settings_follow_the_config_within_their_ranges() {
        let p = AsoConfig::default().population_settings();
        assert_eq!((p.size_per_dimension, p.scale_factor, p.crossover_rate), (6.0, 0.5, 0.9));
        assert_eq!(p.feasibility_tolerance, AsoConfig::default().alm_settings().feasibility_tolerance);
        let odd = AsoConfig {
            population_size_per_dimension: f64::INFINITY,
            population_scale_factor: -3.0,
            population_crossover_rate: 7.0,
            ..AsoConfig::default()
        };
        let p = odd.population_settings();
        assert_eq!((p.size_per_dimension, p.scale_factor, p.crossover_rate), (4.0, 0.05, 1.0));
    }

    #[test]
    fn a_population_s_best_is_polished_again_once_it_gained_a_tenth_of_a_percent() {
        use crate::aso::solver::polish_due;
        let gain = AsoConfig::default().population_polish_gain;
        assert!(polish_due(-0.795, None, gain), "the first feasible best is polished");
        assert!(polish_due(-0.7950, Some(-0.7940), gain), "0.13 % better: polished again");
        assert!(!polish_due(-0.7941, Some(-0.7940), gain), "0.013 % better: not yet");
        assert!(!polish_due(-0.7940, Some(-0.7940), gain));
    }

    #[test]
    fn the_builtin_aso_config_artifact_parses() {
        let b = crate::artifact::builtin::find("aso_config").unwrap();
        let c = AsoConfig::from_json(b.content).unwrap();
        assert_eq!(c, AsoConfig::default());
    }
}

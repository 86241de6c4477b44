//! Tests of the SQP polish (`polish.rs`): the vendored SLSQP through it,
//! its stop and feasibility rules, the KKT test and the restoration.

use super::*;
use crate::numeric::builtin;

#[test]
fn polishing_near_the_optimum_of_g10_reaches_it_within_budget() {
    let p = builtin("g10").unwrap();
    let best = p.best_known().unwrap();
    // Start 0.5 % away from the optimum.
    let x0: Vec<f64> = best.x.unwrap().iter().map(|v| v * 1.005).collect();
    let out = polish(p.as_ref(), &x0, 4000, 1e-4);
    let b = out.best.unwrap();
    assert!(out.evals_used <= 4000);
    assert!(b.max_violation <= 1e-4, "{b:?}");
    assert!((b.objective - best.value).abs() / best.value < 1e-4, "{b:?}");
}

#[test]
fn the_kkt_residual_lets_an_active_bound_absorb_the_gradient_only_in_its_own_direction() {
    let e = Evaluation { objective: 0.0, inequalities: vec![], equalities: vec![], gradients: None };
    let g = vec![vec![1.0]];
    let bounds = [(0.0, 1.0)];
    assert_eq!(kkt_residual(&[0.5], &bounds, &e, &g, 1e-6), 1.0, "interior: the whole gradient is left");
    assert!(kkt_residual(&[0.0], &bounds, &e, &g, 1e-6) < 1e-12, "at the lower bound f only grows inward");
    assert_eq!(kkt_residual(&[1.0], &bounds, &e, &g, 1e-6), 1.0, "at the upper bound f falls inward");
    // An active inequality x − 0.5 ≤ 0 with ∇f = −1: its multiplier 1 balances it.
    let e = Evaluation { objective: 0.0, inequalities: vec![0.0], equalities: vec![], gradients: None };
    let g = vec![vec![-1.0], vec![1.0]];
    assert!(kkt_residual(&[0.5], &bounds, &e, &g, 1e-6) < 1e-12);
    // The same constraint with ∇f = +1 would need a negative multiplier.
    let g = vec![vec![1.0], vec![1.0]];
    assert_eq!(kkt_residual(&[0.5], &bounds, &e, &g, 1e-6), 1.0);
    // A constraint 0.01 away (x − 100.01 ≤ 0 at x = 100) is not one the
    // point is on: it must not absorb a gradient that points at it.
    let e = Evaluation { objective: 0.0, inequalities: vec![-0.01], equalities: vec![], gradients: None };
    let g = vec![vec![-1.0], vec![1.0]];
    assert_eq!(kkt_residual(&[100.0], &[(0.0, 1000.0)], &e, &g, 1e-6), 1.0);
}

#[test]
fn a_polish_stuck_short_of_a_local_optimum_is_not_converged_and_one_stuck_at_one_is() {
    use rand::SeedableRng;
    let ends = |name: &str, kinds: &[PolishEnd]| {
        let p = builtin(name).unwrap();
        let n = p.dimension() as u64;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        crate::numeric::seeds::latin_hypercube(&p.bounds(), 10, &mut rng)
            .iter()
            .map(|x| polish(p.as_ref(), x, 60 * (n + 1), 1e-6))
            .filter(|r| kinds.contains(&r.end))
            .map(|r| (r.best.unwrap().objective, r.converged))
            .collect::<Vec<_>>()
    };
    let stuck_ends = |name: &str| ends(name, &[PolishEnd::Stuck]);
    // The pressure vessel's SLSQP sticks at feasible points far above the
    // optimum (5885.33): those must not count as settled.
    let vessel = stuck_ends("pressure_vessel");
    assert!(vessel.iter().any(|&(f, converged)| !converged && f > 6000.0), "{vessel:?}");
    // (Within finite-difference accuracy a point 0.02 % above it can pass.)
    assert!(vessel.iter().filter(|e| e.1).all(|&(f, _)| f < 5885.33 * 1.001), "{vessel:?}");
    assert!(vessel.iter().any(|e| e.1), "{vessel:?}");
    // g01's local optima are vertices of its linear constraints: there
    // SLSQP settles on its tolerances (now that a point a hair outside
    // an active constraint counts as feasible for its stop test) or is
    // stuck, and either way it has converged (−15 is the global one,
    // −12.66 and −13.83 local).
    let g01 = ends("g01", &[PolishEnd::Stuck, PolishEnd::Settled]);
    assert!(g01.len() >= 5, "{g01:?}");
    assert!(g01.iter().all(|e| e.1), "{g01:?}");
}

#[test]
fn polishing_an_equality_problem_keeps_the_equalities_within_tolerance() {
    let p = builtin("g13").unwrap();
    let x0 = vec![-1.7, 1.6, 1.8, -0.8, -0.8];
    let out = polish(p.as_ref(), &x0, 3000, 1e-4);
    let b = out.best.unwrap();
    assert!(b.max_violation <= 1e-4, "{b:?}");
}

#[test]
fn the_vendored_slsqp_solves_equality_constrained_problems_to_the_last_digits() {
    // min x² + y² subject to x + y = 1: (½, ½).
    let objective = |x: &[f64], g: Option<&mut [f64]>, _: &mut ()| {
        if let Some(g) = g {
            g.copy_from_slice(&[2.0 * x[0], 2.0 * x[1]]);
        }
        x[0] * x[0] + x[1] * x[1]
    };
    let line = |x: &[f64], g: Option<&mut [f64]>, _: &mut ()| {
        if let Some(g) = g {
            g.copy_from_slice(&[1.0, 1.0]);
        }
        x[0] + x[1] - 1.0
    };
    let none: Vec<&dyn slsqp::Func<()>> = vec![];
    let stop = slsqp::StopTols { ftol_rel: 1e-14, ..slsqp::StopTols::default() };
    let bounds = [(-5.0, 5.0), (-5.0, 5.0)];
    let (_, x, f) = slsqp::minimize_with_equalities(
        objective,
        &[3.0, -2.0],
        &bounds,
        &none,
        &[],
        &[&line as &dyn slsqp::Func<()>],
        &[1e-10],
        (),
        100,
        Some(stop.clone()),
    )
    .unwrap();
    assert!((x[0] - 0.5).abs() < 1e-8 && (x[1] - 0.5).abs() < 1e-8, "{x:?}");
    assert!((f - 0.5).abs() < 1e-12, "{f}");
    // min x + y on the circle x² + y² = 2 (a curved equality the band
    // of two inequalities used to stand in for): (−1, −1).
    let sum = |x: &[f64], g: Option<&mut [f64]>, _: &mut ()| {
        if let Some(g) = g {
            g.copy_from_slice(&[1.0, 1.0]);
        }
        x[0] + x[1]
    };
    let circle = |x: &[f64], g: Option<&mut [f64]>, _: &mut ()| {
        if let Some(g) = g {
            g.copy_from_slice(&[2.0 * x[0], 2.0 * x[1]]);
        }
        x[0] * x[0] + x[1] * x[1] - 2.0
    };
    let (_, x, _) = slsqp::minimize_with_equalities(
        sum,
        &[0.5, -1.2],
        &bounds,
        &none,
        &[],
        &[&circle as &dyn slsqp::Func<()>],
        &[1e-10],
        (),
        100,
        Some(stop),
    )
    .unwrap();
    assert!((x[0] + 1.0).abs() < 1e-6 && (x[1] + 1.0).abs() < 1e-6, "{x:?}");
    assert!((x[0] * x[0] + x[1] * x[1] - 2.0).abs() < 1e-10, "{x:?}");
}

#[test]
fn the_vendored_slsqp_asks_for_a_gradient_only_at_points_its_line_search_accepted() {
    // Rosenbrock's valley: many full steps are rejected. A gradient at a
    // trial point the search then rejects costs a polish n evaluations
    // for nothing (NLopt asked for the first trial's at once); each
    // gradient must come after the point's value, at that same point.
    let calls: std::cell::RefCell<Vec<(Vec<f64>, bool)>> = Default::default();
    let rosenbrock = |x: &[f64], g: Option<&mut [f64]>, _: &mut ()| {
        calls.borrow_mut().push((x.to_vec(), g.is_some()));
        if let Some(g) = g {
            g[0] = -2.0 * (1.0 - x[0]) - 400.0 * x[0] * (x[1] - x[0] * x[0]);
            g[1] = 200.0 * (x[1] - x[0] * x[0]);
        }
        (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2)
    };
    let none: Vec<&dyn slsqp::Func<()>> = vec![];
    let (_, x, _) = slsqp::minimize_with_equalities(
        rosenbrock,
        &[-1.2, 1.0],
        &[(-5.0, 5.0), (-5.0, 5.0)],
        &none,
        &[],
        &none,
        &[],
        (),
        500,
        Some(slsqp::StopTols { ftol_rel: 1e-14, ..slsqp::StopTols::default() }),
    )
    .unwrap();
    assert!((x[0] - 1.0).abs() < 1e-4 && (x[1] - 1.0).abs() < 1e-4, "{x:?}");
    let calls = calls.into_inner();
    let backtracks = calls.windows(2).filter(|w| !w[0].1 && !w[1].1).count();
    assert!(backtracks > 0, "the line search never backtracked: the test proves nothing");
    for (i, w) in calls.windows(2).enumerate() {
        if w[1].1 {
            assert!(w[0].0 == w[1].0 && !w[0].1, "call {}: a gradient at a point not evaluated just before", i + 1);
        }
    }
}

#[test]
fn polishing_near_g03s_optimum_holds_its_equality_to_a_tenth_of_the_tolerance() {
    // g03: the product of ten variables on the unit sphere, one
    // equality; its optimum −1 at every xᵢ = 1/√10. From points a few
    // percent off it, on and off the sphere, SLSQP must end on the
    // sphere (to a tenth of the tolerance, as the polish ranks its
    // points) at the optimum.
    let p = builtin("g03").unwrap();
    let optimum = 1.0 / 10f64.sqrt();
    for (k, scale) in [0.97, 1.02, 1.0].into_iter().enumerate() {
        let x0: Vec<f64> = (0..10).map(|i| optimum * scale * if (i + k) % 2 == 0 { 1.03 } else { 0.98 }).collect();
        let out = polish(p.as_ref(), &x0, 60 * 11, 1e-6);
        let b = out.best.clone().unwrap();
        let h = p.evaluate(&b.x).unwrap().equalities[0];
        assert!(h.abs() <= 1e-7, "|h| = {h:e} from {x0:?}: {out:?}");
        assert!(b.objective <= -1.0 + 1e-6, "{b:?} from {x0:?}");
    }
}

#[test]
fn a_non_finite_step_ends_the_polish_without_blaming_the_problem() {
    use rand::{Rng, SeedableRng};
    // From some starts SLSQP's subproblem is singular and it steps to a
    // NaN point; that must end the polish quietly, not reach the problem.
    let p = builtin("g01").unwrap();
    let bounds = p.bounds();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for _ in 0..300 {
        let x0: Vec<f64> = bounds.iter().map(|(lo, hi)| rng.random_range(*lo..*hi)).collect();
        let out = polish(p.as_ref(), &x0, 14 * 60, 1e-4);
        assert_eq!(out.error, None, "from {x0:?}");
    }
}

#[test]
fn a_tiny_budget_does_nothing() {
    let p = builtin("g01").unwrap();
    let out = polish(p.as_ref(), &vec![0.5; 13], 5, 1e-4);
    assert_eq!(out.evals_used, 0);
    assert!(out.best.is_none());
}

#[test]
fn restoring_a_point_that_rides_the_tolerance_makes_it_feasible_at_a_tenth_of_it() {
    // The pressure vessel's optimum scaled by 1 − 1e-6: infeasible by
    // 3e-6, its objective below the optimum; SLSQP stops at once there.
    let p = builtin("pressure_vessel").unwrap();
    let best = p.best_known().unwrap();
    let x0: Vec<f64> = best.x.unwrap().iter().map(|v| v * (1.0 - 1e-6)).collect();
    assert!(p.evaluate(&x0).unwrap().max_violation() > 1e-6);
    let out = restore(p.as_ref(), &x0, 100, 1e-6);
    let b = out.best.expect("restored");
    assert!(b.max_violation <= 1e-7, "{b:?}");
    assert!(b.objective >= best.value - 1e-7 * best.value, "{} below the optimum {}", b.objective, best.value);
    assert!(out.evals_used <= 100);
}

#[test]
fn polishes_of_g18_reach_its_optimum_where_a_product_constraint_vanishes_on_a_bound() {
    use rand::SeedableRng;
    // g18's optimum has x₉ = 0 (its lower bound), where −x₃x₉ ≤ 0 and
    // x₅x₉ ≤ 0 are active. Shifted a margin inside (−x₃x₉ ≤ −ε) they had
    // no feasible point on that bound and SLSQP's subproblem failed there:
    // from 200 random starts 21 polishes ended so, against 2 unshifted.
    // (This test pinned one such start, a lead descent's of the bench;
    // since SLSQP's first Hessian is scaled its path from there fails
    // elsewhere, so it counts over 100 starts: 2 fail, 63 reach the
    // optimum; 1 and 65 before the scaling.)
    let p = builtin("g18").unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let outs: Vec<_> = crate::numeric::seeds::latin_hypercube(&p.bounds(), 100, &mut rng)
        .iter()
        .map(|x| polish(p.as_ref(), x, 600, 1e-6))
        .collect();
    let failed = outs.iter().filter(|o| o.end == PolishEnd::Failed).count();
    let solved = outs
        .iter()
        .filter(|o| o.converged)
        .filter_map(|o| o.best.as_ref())
        .filter(|b| b.max_violation <= 1e-7 && (b.objective + 0.8660254038).abs() < 1e-6)
        .count();
    assert!(failed <= 4 && solved >= 55, "{failed} failed, {solved} of 100 at the optimum");
}

#[test]
fn a_polish_stops_once_its_steps_change_the_objective_by_less_than_1e_8() {
    // g01 from a uniform start (numpy's default_rng(2), as multistart
    // SLSQP's second seed): SLSQP reaches a vertex (a local optimum,
    // −12.66 here) with its first steps and confirms it with one
    // gradient more; at 1e-12 it took 56 evaluations, SciPy's SLSQP 42.
    let p = builtin("g01").unwrap();
    let x0 = vec![
        0.2616121342493164,
        0.2984911434141233,
        0.8142257405942803,
        0.0919159421350969,
        0.600100525965654,
        0.7285605268117946,
        0.18790107336660344,
        0.05514662733306819,
        0.2749693679060381,
        65.74330148755926,
        56.2265662780428,
        15.006226330533611,
        0.43263079080478717,
    ];
    let out = polish(p.as_ref(), &x0, 60 * 14, 1e-6);
    assert!(out.converged, "{:?}", out.end);
    assert!(matches!(out.end, PolishEnd::Settled), "stopped on its own tolerances, not {:?}", out.end);
    assert!(out.evals_used <= 3 * 14, "{} evaluations", out.evals_used);
}

#[test]
fn a_polish_stops_where_the_objective_is_next_to_nothing_and_no_longer_moves() {
    // g08 from a lead descent's start of the bench (seed 39): SLSQP drifts
    // to where sin(2πx₁) → 0 and the objective is about 1e-29, each step
    // changing it by a large relative amount, so the relative test never
    // stopped it: it ran to its budget (600 evaluations of 750).
    let p = builtin("g08").unwrap();
    let x0 = [0.6686066206652003, 5.811759561399099];
    let out = polish(p.as_ref(), &x0, 750, 1e-6);
    assert!(matches!(out.end, PolishEnd::Settled), "stopped on its own tolerances, not {:?}", out.end);
    assert!(out.evals_used < 300, "{} evaluations", out.evals_used);
}

#[test]
fn slsqp_s_first_hessian_shrinks_to_a_flat_problem_s_curvature() {
    use rand::SeedableRng;
    // Polishes from the same 20 Latin-hypercube starts, at a local
    // trajectory's descent budget: (evaluations in all, starts solved).
    let run = |name: &str| {
        let p = builtin(name).unwrap();
        let n = p.dimension() as u64;
        let best = p.best_known().unwrap().value;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let outs: Vec<_> = crate::numeric::seeds::latin_hypercube(&p.bounds(), 20, &mut rng)
            .iter()
            .map(|x| polish(p.as_ref(), x, 250 * (n + 1), 1e-6))
            .collect();
        let solved = |o: &&Polished| {
            o.best.as_ref().is_some_and(|b| b.max_violation <= 1e-6 && (b.objective - best) / best.abs() <= 1e-4)
        };
        (outs.iter().map(|o| o.evals_used).sum::<u64>(), outs.iter().filter(solved).count())
    };
    // The curvature of g21's and g05's Lagrangians along the first step
    // (s'y / s's) is far below the identity's 1: from the identity (as
    // Kraft's, NLopt's and SciPy's SLSQP start) these polishes took 3,600
    // and 1,091 evaluations; with the first estimate shrunk to it, 2,682
    // and 1,047, every g05 start solved either way.
    let (g21, _) = run("g21");
    assert!(g21 < 3000, "g21: {g21} evaluations");
    let (g05, solved) = run("g05");
    assert!(g05 < 1070 && solved == 20, "g05: {g05} evaluations, {solved} of 20 solved");
}

#[test]
fn a_descent_stops_once_its_best_point_reaches_a_known_minimum_and_not_before() {
    use rand::SeedableRng;
    let p = builtin("g04").unwrap();
    let n = p.dimension() as u64;
    let budget = 250 * (n + 1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let starts = crate::numeric::seeds::latin_hypercube(&p.bounds(), 8, &mut rng);
    // The minimum every descent from these starts reaches, polished.
    let reference = polish(p.as_ref(), &starts[0], budget, 1e-6);
    assert!(reference.converged, "{reference:?}");
    let minimum = reference.best.clone().unwrap();
    let known = KnownMinima { points: vec![minimum.clone()], radius: 0.01 };
    let (mut joined, mut saved) = (0, 0i64);
    for x in &starts[1..] {
        let full = polish(p.as_ref(), x, budget, 1e-6);
        let cut = descend(p.as_ref(), x, None, budget, 1e-6, Some(&known));
        if !full.converged
            || (full.best.as_ref().unwrap().objective - minimum.objective).abs() > 1e-4 * minimum.objective.abs()
        {
            continue;
        }
        assert_eq!(cut.end, PolishEnd::Joined, "a descent into the known basin stops there");
        let b = cut.best.unwrap();
        assert!(
            known.reached_one(&b, &p.bounds(), 1e-6).is_some(),
            "it stopped at the minimum: {b:?} against {minimum:?}"
        );
        joined += 1;
        saved += full.evals_used as i64 - cut.evals_used as i64;
    }
    assert!(joined >= 3, "only {joined} of 7 descents reached the reference minimum");
    assert!(saved > 0, "stopping at the known minimum saved no evaluations");

    // A minimum elsewhere (its point moved by a tenth of each range) is not
    // reached: the descent runs to its own end.
    let bounds = p.bounds();
    let elsewhere = Candidate {
        x: minimum.x.iter().zip(&bounds).map(|(v, (lo, hi))| (v + 0.1 * (hi - lo)).min(*hi)).collect(),
        ..minimum.clone()
    };
    let far = KnownMinima { points: vec![elsewhere], ..known.clone() };
    assert_ne!(descend(p.as_ref(), &starts[1], None, budget, 1e-6, Some(&far)).end, PolishEnd::Joined);
    // Nor is one whose value differs by more than the radius (2 %) at
    // that very point.
    let higher = Candidate { objective: minimum.objective + 0.02 * minimum.objective.abs(), ..minimum.clone() };
    let above = KnownMinima { points: vec![higher], ..known };
    assert_ne!(descend(p.as_ref(), &starts[1], None, budget, 1e-6, Some(&above)).end, PolishEnd::Joined);
}

#[test]
fn a_known_minimum_near_zero_is_reached_only_within_a_share_of_its_own_value() {
    // g08's minima: −0.0958 (the optimum) and −0.0291, among others. With
    // an absolute slack of 1 % of 1 below |f| = 1 the second would take in
    // points on their way to values a third lower.
    let bounds = [(0.0, 10.0), (0.0, 10.0)];
    let known = KnownMinima {
        points: vec![Candidate { x: vec![1.2, 4.2], objective: -0.0291, max_violation: 0.0 }],
        radius: 0.01,
    };
    let at = |objective: f64| Candidate { x: vec![1.25, 4.2], objective, max_violation: 0.0 };
    assert!(known.reached_one(&at(-0.02911), &bounds, 1e-6).is_some());
    assert!(known.reached_one(&at(-0.035), &bounds, 1e-6).is_none());
    // Two hundredths of the range away in one variable is somewhere else.
    let away = Candidate { x: vec![1.4, 4.2], ..at(-0.0291) };
    assert!(known.reached_one(&away, &bounds, 1e-6).is_none());
    // Infeasible points are at no minimum.
    let outside = Candidate { max_violation: 1e-3, ..at(-0.0291) };
    assert!(known.reached_one(&outside, &bounds, 1e-6).is_none());
}

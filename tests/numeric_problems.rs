//! The built-in numeric problems: the CEC 2006 set against its report and
//! against pygmo's reference implementation, the engineering designs against
//! their published optima.

use attractor::numeric::{Problem, builtin, builtin_names, feasible_reference};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

fn problem(name: &str) -> Box<dyn Problem> {
    builtin(name).unwrap_or_else(|| panic!("`{name}` is not a built-in problem"))
}

fn rel_err(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(f64::MIN_POSITIVE)
}

/// The equality-constrained problems' published points sit on the
/// competition's |h| ≤ 1e-4 slack, some a rounding error beyond it
/// (g21: 1.0000000111e-4).
const VIOLATION_TOLERANCE: f64 = 1e-4 * (1.0 + 1e-6);

#[test]
fn every_builtin_best_point_reaches_its_best_known_value() {
    // The published values have 10–11 significant digits and the points are
    // given to full precision, so 1e-8 relative holds for all 28 (the
    // tightest the printed values allow is about 1e-9 for g13).
    for name in builtin_names() {
        let p = problem(name);
        let best = p.best_known().unwrap_or_else(|| panic!("{name} has no best-known value"));
        let x = best.x.unwrap_or_else(|| panic!("{name} has no best-known point"));
        assert_eq!(x.len(), p.dimension(), "{name}: best point has the wrong length");
        let e = p.evaluate(&x).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert!(e.is_finite(), "{name}: {e:?}");
        if name == "g20" {
            // No feasible point is known for g20; its published point violates g1 by 0.14.
            assert!(e.max_violation() > 0.1, "g20: {}", e.max_violation());
            continue;
        }
        let err = rel_err(e.objective, best.value);
        assert!(
            err <= 1e-8,
            "{name}: objective {} at the best point, published {} (relative error {err:e})",
            e.objective,
            best.value
        );
        assert!(
            e.max_violation() <= VIOLATION_TOLERANCE,
            "{name}: best point violates a constraint by {}",
            e.max_violation()
        );
    }
}

#[test]
fn best_points_lie_inside_their_boxes() {
    for name in builtin_names() {
        let p = problem(name);
        let x = p.best_known().and_then(|b| b.x).unwrap();
        for (i, (v, (lo, hi))) in x.iter().zip(p.bounds()).enumerate() {
            // Points on a bound (g16's x2 = 68.6) may differ from it by rounding.
            assert!(*v >= lo - 1e-12 && *v <= hi + 1e-12, "{name}: x[{i}] = {v} outside [{lo}, {hi}]");
        }
    }
}

#[test]
fn dimensions_and_constraint_counts_match_the_cec2006_report() {
    // Liang et al. 2006, Table 1: n, then inequalities (linear + nonlinear),
    // then equalities (linear + nonlinear).
    let table: [(&str, usize, usize, usize); 28] = [
        ("g01", 13, 9, 0),
        ("g02", 20, 2, 0),
        ("g03", 10, 0, 1),
        ("g04", 5, 6, 0),
        ("g05", 4, 2, 3),
        ("g06", 2, 2, 0),
        ("g07", 10, 8, 0),
        ("g08", 2, 2, 0),
        ("g09", 7, 4, 0),
        ("g10", 8, 6, 0),
        ("g11", 2, 0, 1),
        ("g12", 3, 1, 0),
        ("g13", 5, 0, 3),
        ("g14", 10, 0, 3),
        ("g15", 3, 0, 2),
        ("g16", 5, 38, 0),
        ("g17", 6, 0, 4),
        ("g18", 9, 13, 0),
        ("g19", 15, 5, 0),
        ("g20", 24, 6, 14),
        ("g21", 7, 1, 5),
        ("g22", 22, 1, 19),
        ("g23", 9, 2, 4),
        ("g24", 2, 2, 0),
        ("pressure_vessel", 4, 4, 0),
        ("welded_beam", 4, 7, 0),
        ("spring", 3, 4, 0),
        ("speed_reducer", 7, 11, 0),
    ];
    let names: Vec<&str> = table.iter().map(|t| t.0).collect();
    assert_eq!(builtin_names(), names);
    for (name, n, ni, ne) in table {
        let p = problem(name);
        assert_eq!(p.name(), name);
        assert_eq!(p.dimension(), n, "{name}: dimension");
        assert_eq!(p.bounds().len(), n, "{name}: bounds");
        assert!(p.bounds().iter().all(|(lo, hi)| lo < hi), "{name}: empty box");
        let g: Vec<String> = (1..=ni).map(|i| format!("g{i}")).collect();
        let h: Vec<String> = (1..=ne).map(|i| format!("h{i}")).collect();
        assert_eq!(p.inequality_names(), g, "{name}: inequality names");
        assert_eq!(p.equality_names(), h, "{name}: equality names");
        let mid: Vec<f64> = p.bounds().iter().map(|(lo, hi)| (lo + hi) / 2.0).collect();
        let e = p.evaluate(&mid).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!((e.inequalities.len(), e.equalities.len()), (ni, ne), "{name}: evaluation lengths");
    }
}

#[derive(Deserialize)]
struct ReferenceFile {
    points: Vec<ReferencePoint>,
}

#[derive(Deserialize)]
struct ReferencePoint {
    problem: String,
    x: Vec<f64>,
    objective: f64,
    inequalities: Vec<f64>,
    equalities: Vec<f64>,
}

/// Agreement to 1e-9 relative (pygmo and this crate differ by about 1e-13 at
/// worst: the same formulas, with operations in another order).
fn close(got: f64, want: f64) -> bool {
    got == want || (got - want).abs() <= 1e-9 * want.abs()
}

#[test]
fn every_cec2006_problem_matches_pygmo_at_random_points() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cec2006_points.json"))
        .expect("tests/data/cec2006_points.json");
    let file: ReferenceFile = serde_json::from_str(&text).expect("valid reference file");
    assert_eq!(file.points.len(), 24 * 5);
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    for (k, point) in file.points.iter().enumerate() {
        let name = point.problem.as_str();
        let p = problem(name);
        let e = p.evaluate(&point.x).unwrap_or_else(|err| panic!("point {k} ({name}): {err}"));
        assert!(
            close(e.objective, point.objective),
            "point {k} ({name}): objective {} but pygmo gives {}",
            e.objective,
            point.objective
        );
        for (kind, got, want) in
            [("inequality g", &e.inequalities, &point.inequalities), ("equality h", &e.equalities, &point.equalities)]
        {
            assert_eq!(got.len(), want.len(), "point {k} ({name}): number of {kind}");
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(close(*g, *w), "point {k} ({name}): {kind}{} is {g} but pygmo gives {w}", i + 1);
            }
        }
        *checked.entry(point.problem.clone()).or_default() += 1;
    }
    assert_eq!(checked.len(), 24, "every CEC 2006 problem is covered");
    assert!(checked.values().all(|&n| n == 5));
}

#[test]
fn equality_problems_have_an_exactly_feasible_reference_no_better_than_the_relaxed_one() {
    let exact = [
        ("g03", -1.0),
        ("g05", 5126.4981095953),
        ("g11", 0.75),
        ("g13", 0.0539498477703),
        ("g14", -47.7610908594),
        ("g15", 961.7151721301),
        ("g17", 8853.5398913523),
        ("g21", 193.7869252),
        ("g23", -400.0),
    ];
    for (name, value) in exact {
        let reference = feasible_reference(name).unwrap();
        assert_eq!(reference, value, "{name}");
        let relaxed = problem(name).best_known().unwrap().value;
        // Tightening |h| ≤ 1e-4 to h = 0 can only make the minimum worse, and only slightly.
        assert!(reference >= relaxed, "{name}: {reference} < {relaxed}");
        assert!(rel_err(reference, relaxed) < 5e-4, "{name}: {reference} vs {relaxed}");
    }
    for name in builtin_names() {
        if name == "g20" || exact.iter().any(|(n, _)| *n == name) {
            continue;
        }
        assert_eq!(feasible_reference(name), Some(problem(name).best_known().unwrap().value), "{name}");
    }
    assert_eq!(feasible_reference("g20"), None, "g20 has no known feasible point");
    assert_eq!(feasible_reference("nope"), None);
}

#[test]
fn every_builtin_evaluates_finitely_across_its_box() {
    // Corners, the centre and random points: the guarded singular points
    // (g02 and g08 at the lower bound, g14 and g20 at zeros) included.
    let mut rng = ChaCha8Rng::seed_from_u64(2006);
    for name in builtin_names() {
        let p = problem(name);
        let bounds = p.bounds();
        let mut points = vec![
            bounds.iter().map(|b| b.0).collect::<Vec<_>>(),
            bounds.iter().map(|b| b.1).collect(),
            bounds.iter().map(|b| (b.0 + b.1) / 2.0).collect(),
        ];
        for _ in 0..300 {
            points.push(bounds.iter().map(|&(lo, hi)| rng.random_range(lo..=hi)).collect());
        }
        // Random points with some coordinates pinned to a bound.
        for _ in 0..100 {
            points.push(
                bounds
                    .iter()
                    .map(|&(lo, hi)| match rng.random_range(0..4) {
                        0 => lo,
                        1 => hi,
                        _ => rng.random_range(lo..=hi),
                    })
                    .collect(),
            );
        }
        for x in points {
            let e = p.evaluate(&x).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert!(e.is_finite(), "{name} at {x:?}: {e:?}");
        }
    }
}

#[test]
fn singular_points_get_their_limits() {
    // g08: −(sin 2πx1 / x1)³ · sin 2πx2 / (x1 + x2) → −(2π)³ · sin(2πx2) / x2 as x1 → 0.
    let g08 = problem("g08");
    let tau = 2.0 * std::f64::consts::PI;
    let at_zero = g08.evaluate(&[0.0, 0.25]).unwrap().objective;
    let want = -tau.powi(3) * (tau * 0.25).sin() / 0.25;
    assert!(rel_err(at_zero, want) < 1e-12, "{at_zero} vs {want}");
    let near_zero = g08.evaluate(&[1e-9, 0.25]).unwrap().objective;
    assert!(rel_err(near_zero, want) < 1e-6, "{near_zero} vs {want}");
    assert_eq!(g08.evaluate(&[0.0, 0.0]).unwrap().objective, 0.0);

    // g14: x·ln(x / Σx) → 0 as x → 0.
    let g14 = problem("g14");
    let mut x = vec![0.5; 10];
    x[3] = 0.0;
    let with_zero = g14.evaluate(&x).unwrap().objective;
    x[3] = 1e-300;
    let tiny = g14.evaluate(&x).unwrap().objective;
    assert!((with_zero - tiny).abs() < 1e-12, "{with_zero} vs {tiny}");

    // g02: unbounded near the (infeasible) origin, finite at it.
    let g02 = problem("g02");
    let origin = g02.evaluate(&[0.0; 20]).unwrap();
    assert!(origin.objective < -1e6 && origin.objective.is_finite());
    assert!(origin.inequalities[0] > 0.0, "the origin is infeasible");
}

#[test]
fn engineering_best_points_sit_on_their_active_constraints() {
    let active: [(&str, &[usize]); 4] = [
        ("pressure_vessel", &[0, 1, 2]),
        ("welded_beam", &[0, 1, 2, 6]),
        ("spring", &[0, 1]),
        ("speed_reducer", &[4, 5, 7, 10]),
    ];
    for (name, idx) in active {
        let p = problem(name);
        let e = p.evaluate(&p.best_known().unwrap().x.unwrap()).unwrap();
        for (i, g) in e.inequalities.iter().enumerate() {
            if idx.contains(&i) {
                assert!(g.abs() < 1e-12, "{name}: g{} = {g} should be active", i + 1);
            } else {
                assert!(*g < -1e-3, "{name}: g{} = {g} should be inactive", i + 1);
            }
        }
    }
}

#[test]
fn scaled_engineering_constraints_keep_the_raw_feasible_set() {
    // The raw (unscaled) forms of Coello 2000; each scaled constraint must
    // have the same sign, so the feasible set and the optimum are unchanged.
    fn raw_pressure_vessel(x: &[f64]) -> Vec<f64> {
        let pi = std::f64::consts::PI;
        vec![
            -x[0] + 0.0193 * x[2],
            -x[1] + 0.00954 * x[2],
            -pi * x[2] * x[2] * x[3] - 4.0 / 3.0 * pi * x[2].powi(3) + 1_296_000.0,
            x[3] - 240.0,
        ]
    }
    fn raw_welded_beam(x: &[f64]) -> Vec<f64> {
        let (p, l, e, g) = (6000.0, 14.0, 30e6, 12e6);
        let t1 = p / (2f64.sqrt() * x[0] * x[1]);
        let m = p * (l + x[1] / 2.0);
        let r = (x[1].powi(2) / 4.0 + ((x[0] + x[2]) / 2.0).powi(2)).sqrt();
        let j = 2.0 * (2f64.sqrt() * x[0] * x[1] * (x[1].powi(2) / 12.0 + ((x[0] + x[2]) / 2.0).powi(2)));
        let t2 = m * r / j;
        let tau = (t1 * t1 + 2.0 * t1 * t2 * x[1] / (2.0 * r) + t2 * t2).sqrt();
        let sigma = 6.0 * p * l / (x[3] * x[2] * x[2]);
        let delta = 4.0 * p * l.powi(3) / (e * x[2].powi(3) * x[3]);
        let pc = 4.013 * e * (x[2] * x[2] * x[3].powi(6) / 36.0).sqrt() / (l * l)
            * (1.0 - x[2] / (2.0 * l) * (e / (4.0 * g)).sqrt());
        vec![
            tau - 13600.0,
            sigma - 30000.0,
            x[0] - x[3],
            0.10471 * x[0] * x[0] + 0.04811 * x[2] * x[3] * (14.0 + x[1]) - 5.0,
            0.125 - x[0],
            delta - 0.25,
            p - pc,
        ]
    }
    let mut rng = ChaCha8Rng::seed_from_u64(2000);
    type Raw = fn(&[f64]) -> Vec<f64>;
    let cases: [(&str, Raw); 2] = [("pressure_vessel", raw_pressure_vessel), ("welded_beam", raw_welded_beam)];
    for (name, raw) in cases {
        let p = problem(name);
        let best = p.best_known().unwrap().x.unwrap();
        let mut feasible = 0;
        for k in 0..2000 {
            // Half near the optimum (where signs are close calls), half anywhere in the box.
            let x: Vec<f64> = if k % 2 == 0 {
                best.iter().map(|v| v * (1.0 + rng.random_range(-0.02..0.02))).collect()
            } else {
                p.bounds().iter().map(|&(lo, hi)| rng.random_range(lo..=hi)).collect()
            };
            let scaled = p.evaluate(&x).unwrap().inequalities;
            let unscaled = raw(&x);
            for (i, (s, r)) in scaled.iter().zip(&unscaled).enumerate() {
                assert_eq!(*s <= 0.0, *r <= 0.0, "{name} g{} at {x:?}: scaled {s}, raw {r}", i + 1);
            }
            feasible += usize::from(unscaled.iter().all(|r| *r <= 0.0));
        }
        assert!(feasible > 100, "{name}: only {feasible} feasible samples; the check would be vacuous");
    }
}

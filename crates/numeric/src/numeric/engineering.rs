//! Four classic engineering design problems, in the versions of Coello
//! (2000, "Use of a self-adaptive penalty approach for engineering
//! optimization problems") and Mezura-Montes & Coello (2005, "Useful
//! infeasible solutions in engineering optimization with evolutionary
//! algorithms"), all variables continuous:
//!
//! | name | n | constraints | best known |
//! |---|---|---|---|
//! | `pressure_vessel` | 4, bounds \[0, 99\]² × \[10, 200\]² | 4 | 5885.3327736 |
//! | `welded_beam` | 4 | 7 | 1.724852309 |
//! | `spring` (tension/compression) | 3 | 4 | 0.012665232788 |
//! | `speed_reducer` (Golinski) | 7, 7.3 ≤ x5 ≤ 8.3 | 11 | 2994.4710661 |
//!
//! **Scaling.** Every constraint is written as a dimensionless ratio, `ratio
//! − 1 ≤ 0` or `1 − ratio ≤ 0`, so that an absolute violation of 1e-4 means
//! "1e-4 of the limit" on every constraint (the raw pressure-vessel volume
//! constraint is of order 1e6, the raw welded-beam stress ones of order 1e4).
//! Each scaled constraint is the raw one divided by a positive quantity, so
//! the feasible set, and hence the optimum, is unchanged. The spring and the
//! speed reducer are already published in this form; the pressure vessel and
//! the welded beam are scaled here, as each function's comments say.
//!
//! **Best points.** Each is the published optimum carried to full double
//! precision by solving its active constraints (and, for the spring, its KKT
//! conditions) in 40-digit arithmetic; it agrees with the published point to
//! every printed digit and reaches the published value to about 1e-10
//! relative, with its active constraints at zero to within rounding.

use std::f64::consts::{PI, SQRT_2};

use super::problem::BuiltinProblem;

/// The names of the engineering problems, in order.
pub const NAMES: [&str; 4] = ["pressure_vessel", "welded_beam", "spring", "speed_reducer"];

/// The problem called `name`, if it is one of [`NAMES`].
pub(crate) fn lookup(name: &str) -> Option<BuiltinProblem> {
    PROBLEMS.iter().find(|p| p.name == name).cloned()
}

static PROBLEMS: [BuiltinProblem; 4] = [
    BuiltinProblem {
        name: "pressure_vessel",
        bounds: &[(0.0, 99.0), (0.0, 99.0), (10.0, 200.0), (10.0, 200.0)],
        inequalities: 4,
        equalities: 0,
        formula: pressure_vessel,
        best_value: 5885.3327736,
        // Published, rounded: (0.778169, 0.384649, 40.319619, 200).
        best_x: &[0.7781686413751053, 0.3846491626279018, 40.31961872409872, 200.0],
    },
    BuiltinProblem {
        name: "welded_beam",
        bounds: &[(0.1, 2.0), (0.1, 10.0), (0.1, 10.0), (0.1, 2.0)],
        inequalities: 7,
        equalities: 0,
        formula: welded_beam,
        best_value: 1.724852309,
        // Published, rounded: (0.205730, 3.470489, 9.036624, 0.205730).
        best_x: &[0.20572963978607946, 3.470488665628002, 9.036623910357634, 0.20572963978607946],
    },
    BuiltinProblem {
        name: "spring",
        bounds: &[(0.05, 2.0), (0.25, 1.3), (2.0, 15.0)],
        inequalities: 4,
        equalities: 0,
        formula: spring,
        best_value: 0.012665232788,
        // Published, rounded: (0.051689, 0.356718, 11.288966).
        best_x: &[0.05168906108276346, 0.3567177397994408, 11.28896575161334],
    },
    BuiltinProblem {
        name: "speed_reducer",
        bounds: &[(2.6, 3.6), (0.7, 0.8), (17.0, 28.0), (7.3, 8.3), (7.3, 8.3), (2.9, 3.9), (5.0, 5.5)],
        inequalities: 11,
        equalities: 0,
        formula: speed_reducer,
        best_value: 2994.4710661,
        // Published, rounded: (3.5, 0.7, 17, 7.3, 7.715320, 3.350215, 5.286654).
        best_x: &[3.5, 0.7, 17.0, 7.3, 7.715319911478244, 3.350214666096447, 5.286654464980222],
    },
];

/// Cylindrical pressure vessel with hemispherical heads (Kannan & Kramer 1994,
/// continuous version of Coello 2000): x = (shell thickness Ts, head thickness
/// Th, inner radius R, length L); minimise material, forming and welding cost.
///
/// Raw constraints and their scaled forms here:
/// - g1: 0.0193 R − Ts ≤ 0 → 1 − Ts / (0.0193 R) (R ≥ 10 on the box)
/// - g2: 0.00954 R − Th ≤ 0 → 1 − Th / (0.00954 R)
/// - g3: 1 296 000 − π R² L − 4/3 π R³ ≤ 0 → 1 − (π R² L + 4/3 π R³) / 1 296 000
/// - g4: L − 240 ≤ 0 → L / 240 − 1 (never active with L ≤ 200)
fn pressure_vessel(x: &[f64], g: &mut [f64], _h: &mut [f64]) -> f64 {
    let [ts, th, r, l] = [x[0], x[1], x[2], x[3]];
    g[0] = 1.0 - ts / (0.0193 * r);
    g[1] = 1.0 - th / (0.00954 * r);
    g[2] = 1.0 - (PI * r * r * l + 4.0 / 3.0 * PI * r.powi(3)) / 1_296_000.0;
    g[3] = l / 240.0 - 1.0;
    0.6224 * ts * r * l + 1.7781 * th * r * r + 3.1661 * ts * ts * l + 19.84 * ts * ts * r
}

/// Welded beam (Ragsdell & Phillips 1976, in Coello 2000's 7-constraint form):
/// x = (weld thickness h, weld length l, bar height t, bar thickness b);
/// minimise fabrication cost. P = 6000 lb, L = 14 in, E = 30e6 psi,
/// G = 12e6 psi, with J = 2·√2·h·l·(l²/12 + ((h + t)/2)²).
///
/// Raw constraints and their scaled forms here:
/// - g1: τ − 13 600 ≤ 0 → τ / 13 600 − 1 (shear stress)
/// - g2: σ − 30 000 ≤ 0 → σ / 30 000 − 1 (bending stress)
/// - g3: h − b ≤ 0 → h / b − 1
/// - g4: 0.10471 h² + 0.04811 t b (14 + l) − 5 ≤ 0 → (…) / 5 − 1
/// - g5: 0.125 − h ≤ 0 → 1 − h / 0.125
/// - g6: δ − 0.25 ≤ 0 → δ / 0.25 − 1 (end deflection)
/// - g7: P − Pc ≤ 0 → 1 − Pc / P (buckling load)
fn welded_beam(x: &[f64], g: &mut [f64], _h: &mut [f64]) -> f64 {
    const P: f64 = 6000.0;
    const L: f64 = 14.0;
    const E: f64 = 30e6;
    const G: f64 = 12e6;
    let [h, l, t, b] = [x[0], x[1], x[2], x[3]];
    let tau_primary = P / (SQRT_2 * h * l);
    let moment = P * (L + l / 2.0);
    let radius = (l * l / 4.0 + ((h + t) / 2.0).powi(2)).sqrt();
    let polar = 2.0 * (SQRT_2 * h * l * (l * l / 12.0 + ((h + t) / 2.0).powi(2)));
    let tau_secondary = moment * radius / polar;
    let tau =
        (tau_primary.powi(2) + 2.0 * tau_primary * tau_secondary * l / (2.0 * radius) + tau_secondary.powi(2)).sqrt();
    let sigma = 6.0 * P * L / (b * t * t);
    let delta = 4.0 * P * L.powi(3) / (E * t.powi(3) * b);
    let buckling =
        4.013 * E * (t * t * b.powi(6) / 36.0).sqrt() / (L * L) * (1.0 - t / (2.0 * L) * (E / (4.0 * G)).sqrt());
    g[0] = tau / 13600.0 - 1.0;
    g[1] = sigma / 30000.0 - 1.0;
    g[2] = h / b - 1.0;
    g[3] = (0.10471 * h * h + 0.04811 * t * b * (14.0 + l)) / 5.0 - 1.0;
    g[4] = 1.0 - h / 0.125;
    g[5] = delta / 0.25 - 1.0;
    g[6] = 1.0 - buckling / P;
    1.10471 * h * h * l + 0.04811 * t * b * (14.0 + l)
}

/// Tension/compression spring (Belegundu 1982; Arora 1989): x = (wire
/// diameter d, mean coil diameter D, number of active coils N); minimise the
/// weight (N + 2)·D·d². The published constraints are already ratios:
/// - g1 = 1 − D³N / (71785 d⁴) (minimum deflection)
/// - g2 = (4D² − dD) / (12566 (D d³ − d⁴)) + 1 / (5108 d²) − 1 (shear stress)
/// - g3 = 1 − 140.45 d / (D² N) (surge frequency)
/// - g4 = (d + D) / 1.5 − 1 (outside diameter)
///
/// g2 has a pole on the line d = D, which crosses the box (there the value is
/// not finite and evaluation fails); beyond it, d > D, a coil narrower than
/// its wire, g2 changes sign. The optimum is far from it (d ≈ 0.052, D ≈ 0.357).
fn spring(x: &[f64], g: &mut [f64], _h: &mut [f64]) -> f64 {
    let [d, dm, n] = [x[0], x[1], x[2]];
    g[0] = 1.0 - dm.powi(3) * n / (71785.0 * d.powi(4));
    g[1] = (4.0 * dm * dm - d * dm) / (12566.0 * (dm * d.powi(3) - d.powi(4))) + 1.0 / (5108.0 * d * d) - 1.0;
    g[2] = 1.0 - 140.45 * d / (dm * dm * n);
    g[3] = (d + dm) / 1.5 - 1.0;
    (n + 2.0) * dm * d * d
}

/// Speed reducer (Golinski 1970), the version with 7.3 ≤ x5 ≤ 8.3 (the
/// variant with 7.8 ≤ x5 has optimum 2996.3482): x = (face width b, tooth
/// module m, number of pinion teeth z — continuous here, 17 at the optimum —,
/// shaft lengths l1, l2, shaft diameters d1, d2); minimise the weight. The
/// published constraints are already ratios (bending and surface stress of the
/// teeth, shaft deflections and stresses, dimensional limits).
// 0.7854 is the published coefficient (≈ π/4): π/4 itself would move the optimum.
#[allow(clippy::approx_constant)]
fn speed_reducer(x: &[f64], g: &mut [f64], _h: &mut [f64]) -> f64 {
    let [x1, x2, x3, x4, x5, x6, x7] = [x[0], x[1], x[2], x[3], x[4], x[5], x[6]];
    g[0] = 27.0 / (x1 * x2 * x2 * x3) - 1.0;
    g[1] = 397.5 / (x1 * x2 * x2 * x3 * x3) - 1.0;
    g[2] = 1.93 * x4.powi(3) / (x2 * x3 * x6.powi(4)) - 1.0;
    g[3] = 1.93 * x5.powi(3) / (x2 * x3 * x7.powi(4)) - 1.0;
    g[4] = ((745.0 * x4 / (x2 * x3)).powi(2) + 16.9e6).sqrt() / (110.0 * x6.powi(3)) - 1.0;
    g[5] = ((745.0 * x5 / (x2 * x3)).powi(2) + 157.5e6).sqrt() / (85.0 * x7.powi(3)) - 1.0;
    g[6] = x2 * x3 / 40.0 - 1.0;
    g[7] = 5.0 * x2 / x1 - 1.0;
    g[8] = x1 / (12.0 * x2) - 1.0;
    g[9] = (1.5 * x6 + 1.9) / x4 - 1.0;
    g[10] = (1.1 * x7 + 1.9) / x5 - 1.0;
    0.7854 * x1 * x2 * x2 * (3.3333 * x3 * x3 + 14.9334 * x3 - 43.0934) - 1.508 * x1 * (x6 * x6 + x7 * x7)
        + 7.4777 * (x6.powi(3) + x7.powi(3))
        + 0.7854 * (x4 * x6 * x6 + x5 * x7 * x7)
}

//! Counting a security scanner's findings by severity.
//!
//! JSON output (when the whole output, or its first `{`…last `}` span, is
//! JSON) is read in three shapes:
//!
//! - SARIF (semgrep, CodeQL, trivy, bandit and most scanners can write it):
//!   each result's `security-severity` score (on the result or its rule)
//!   maps to CRITICAL ≥ 9, HIGH ≥ 7, MEDIUM ≥ 4, else LOW; without a score,
//!   the `level` maps error → HIGH, warning → MEDIUM, note → LOW;
//! - npm audit's totals (`metadata.vulnerabilities`);
//! - any other JSON: every object with a text `severity` / `issue_severity`
//!   field is one finding (trivy, grype, bandit, semgrep's own format);
//!   grype's `relatedVulnerabilities` repeat a finding and are not counted.
//!
//! Plain text is read as totals when a line gives them (`Total: 4 (LOW: 1,
//! MEDIUM: 1, HIGH: 1, CRITICAL: 1)`, npm's `3 vulnerabilities (1 low, 2
//! high)`), otherwise one finding per line that names a severity
//! (`Severity: High`, or a capitalised `HIGH` in a table row).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::num;
use crate::overseer::signals::SecurityScanResult;

#[derive(Clone, Copy)]
enum Level {
    Critical,
    High,
    Medium,
    Low,
}

fn add(r: &mut SecurityScanResult, level: Level, n: u32) {
    match level {
        Level::Critical => r.critical_count += n,
        Level::High => r.high_count += n,
        Level::Medium => r.medium_count += n,
        Level::Low => r.low_count += n,
    }
}

fn level_of(word: &str) -> Option<Level> {
    match word.to_ascii_lowercase().as_str() {
        "critical" | "blocker" => Some(Level::Critical),
        "high" | "error" | "major" => Some(Level::High),
        "medium" | "moderate" | "warning" => Some(Level::Medium),
        "low" | "info" | "minor" | "note" => Some(Level::Low),
        _ => None,
    }
}

fn level_of_score(score: f64) -> Level {
    if score >= 9.0 {
        Level::Critical
    } else if score >= 7.0 {
        Level::High
    } else if score >= 4.0 {
        Level::Medium
    } else {
        Level::Low
    }
}

/// Counts findings in a scanner's output (JSON or text).
pub fn parse_security(output: &str) -> SecurityScanResult {
    json_of(output).map(|v| from_json(&v)).unwrap_or_else(|| from_text(output))
}

fn json_of(output: &str) -> Option<Value> {
    let trimmed = output.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed)
        && v.is_object()
    {
        return Some(v);
    }
    let (start, end) = (trimmed.find('{')?, trimmed.rfind('}')?);
    serde_json::from_str::<Value>(trimmed.get(start..=end)?).ok().filter(Value::is_object)
}

fn from_json(v: &Value) -> SecurityScanResult {
    let mut r = SecurityScanResult::default();
    if let Some(runs) = v.get("runs").and_then(Value::as_array)
        && v.get("version").is_some()
    {
        for run in runs {
            sarif_run(run, &mut r);
        }
        return r;
    }
    if let Some(totals) = v.pointer("/metadata/vulnerabilities").and_then(Value::as_object) {
        for (key, n) in totals {
            if let (Some(level), Some(n)) = (level_of(key).filter(|_| key != "info"), n.as_u64()) {
                add(&mut r, level, u32::try_from(n).unwrap_or(u32::MAX));
            }
        }
        return r;
    }
    walk(v, &mut r);
    r
}

fn sarif_run(run: &Value, r: &mut SecurityScanResult) {
    let score = |props: Option<&Value>| -> Option<f64> {
        let s = props?.get("security-severity")?;
        s.as_f64().or_else(|| s.as_str()?.trim().parse().ok())
    };
    let rules: Vec<&Value> =
        ["/tool/driver/rules"].iter().filter_map(|p| run.pointer(p).and_then(Value::as_array)).flatten().collect();
    let rule_score = |id: &str| {
        rules
            .iter()
            .find(|rule| rule.get("id").and_then(Value::as_str) == Some(id))
            .and_then(|rule| score(rule.get("properties")))
    };
    for result in run.get("results").and_then(Value::as_array).into_iter().flatten() {
        let by_score = score(result.get("properties"))
            .or_else(|| result.get("ruleId").and_then(Value::as_str).and_then(rule_score))
            .map(level_of_score);
        let by_level = || match result.get("level").and_then(Value::as_str).unwrap_or("warning") {
            "error" => Some(Level::High),
            "warning" => Some(Level::Medium),
            "note" => Some(Level::Low),
            _ => None,
        };
        if let Some(level) = by_score.or_else(by_level) {
            add(r, level, 1);
        }
    }
}

fn walk(v: &Value, r: &mut SecurityScanResult) {
    match v {
        Value::Object(map) => {
            let severity = map
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("severity") || k.eq_ignore_ascii_case("issue_severity"))
                .and_then(|(_, s)| s.as_str())
                .and_then(level_of);
            if let Some(level) = severity {
                // One finding; what is nested in it describes it, not others.
                add(r, level, 1);
                return;
            }
            for (k, child) in map {
                if k == "relatedVulnerabilities" {
                    continue;
                }
                walk(child, r);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk(i, r)),
        _ => {}
    }
}

static TOTAL_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?P<lvl>critical|high|medium|moderate|low)\s*[:=]\s*(?P<n>\d+)").expect("valid regex")
});
static NPM_PAIR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(?P<n>\d+) (?P<lvl>critical|high|moderate|medium|low)\b").expect("valid regex"));
static SEVERITY_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bseverity\W{0,3}(?P<lvl>critical|high|medium|moderate|low)\b").expect("valid regex")
});
static SEVERITY_WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?P<lvl>CRITICAL|HIGH|MEDIUM|MODERATE|LOW)\b").expect("valid regex"));

fn from_text(output: &str) -> SecurityScanResult {
    let mut totals = SecurityScanResult::default();
    let mut found_totals = false;
    for line in output.lines() {
        let pairs: Vec<_> = TOTAL_PAIR.captures_iter(line).collect();
        let npm: Vec<_> =
            if line.contains("vulnerabilit") { NPM_PAIR.captures_iter(line).collect() } else { Vec::new() };
        // A totals line names two or more levels with their counts.
        let chosen = if pairs.len() >= 2 {
            pairs
        } else if !npm.is_empty() {
            npm
        } else {
            continue;
        };
        found_totals = true;
        for c in chosen {
            if let Some(level) = level_of(&c["lvl"]) {
                add(&mut totals, level, num(&c, "n"));
            }
        }
    }
    if found_totals {
        return totals;
    }
    let mut r = SecurityScanResult::default();
    for line in output.lines() {
        let level = SEVERITY_FIELD.captures(line).and_then(|c| level_of(&c["lvl"])).or_else(|| {
            // The most severe capitalised word of the line.
            SEVERITY_WORD.captures_iter(line).filter_map(|c| level_of(&c["lvl"])).min_by_key(|l| *l as u8)
        });
        if let Some(level) = level {
            add(&mut r, level, 1);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_found_is_all_zero() {
        assert_eq!(parse_security("No issues identified.\n"), SecurityScanResult::default());
        assert_eq!(parse_security("{\"results\": []}"), SecurityScanResult::default());
    }

    #[test]
    fn a_sarif_score_on_the_rule_decides_over_the_level() {
        let sarif = r#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"rules": [
            {"id": "sqli", "properties": {"security-severity": "9.8"}}]}},
            "results": [{"ruleId": "sqli", "level": "warning"}, {"ruleId": "style", "level": "note"}]}]}"#;
        let r = parse_security(sarif);
        assert_eq!((r.critical_count, r.low_count), (1, 1));
    }
}

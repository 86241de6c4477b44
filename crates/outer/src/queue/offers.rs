//! What a worker offers: the labels a task's `needs:` names. A person says
//! them (`attractor worker --offers python,gpu`); the ones that name a tool
//! this module knows are checked on the machine when the worker starts, so
//! a worker that says `python` without a Python fails at once with what to
//! install, instead of failing every run it claims. `sandbox` is offered
//! without being said when the sandbox works here (bubblewrap), so a task
//! that must run sandboxed can say `needs: [sandbox]`.

use std::process::{Command, Stdio};

/// A label a worker offers that this machine cannot back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("this worker offers `{label}`, but {reason}\n  hint: {hint}")]
pub struct MissingTool {
    pub label: String,
    pub reason: String,
    pub hint: String,
}

/// The environment variable with the labels a machine offers
/// (`python,gpu`): `attractor worker`'s `--offers` default, and what
/// `attractor run` offers for the runs it works itself.
pub const OFFERS_ENV: &str = "ATTRACTOR_WORKER_OFFERS";

/// One label, as a task's `needs:` may name it.
pub fn label(s: &str) -> Result<String, String> {
    let label = s.trim();
    if crate::suite::valid_label(label) {
        Ok(label.to_string())
    } else {
        Err(format!("`{label}` is not a label: {}, e.g. `--offers python,gpu`", crate::suite::names::LABEL_HINT))
    }
}

/// The labels [`OFFERS_ENV`] names, else the settings file's
/// `worker_offers`, checked against this machine.
pub fn from_env(env: impl Fn(&str) -> Option<String>, settings: &[String]) -> Result<Vec<String>, String> {
    let said: Vec<String> = match env(OFFERS_ENV).filter(|v| !v.trim().is_empty()) {
        Some(list) => list
            .split(',')
            .filter(|l| !l.trim().is_empty())
            .map(|l| label(l).map_err(|e| format!("{OFFERS_ENV}: {e}")))
            .collect::<Result<_, _>>()?,
        None => from_settings(settings)?,
    };
    checked(&said).map_err(|e| e.to_string())
}

/// The settings file's `worker_offers`, each a label.
pub fn from_settings(settings: &[String]) -> Result<Vec<String>, String> {
    settings.iter().map(|l| label(l).map_err(|e| format!("the settings file's worker_offers: {e}"))).collect()
}

/// The program (and its arguments) whose success backs a known label.
fn probe_of(label: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match label {
        "python" | "python3" => ("python3", &["--version"]),
        "pytest" => ("python3", &["-m", "pytest", "--version"]),
        "node" => ("node", &["--version"]),
        "cargo" | "rust" => ("cargo", &["--version"]),
        "go" => ("go", &["version"]),
        "git" => ("git", &["--version"]),
        "gpu" => ("nvidia-smi", &["-L"]),
        _ => return None,
    })
}

/// Checks `said` against this machine and adds what it detects; the labels
/// to offer, sorted, or the first label it cannot back.
pub fn checked(said: &[String]) -> Result<Vec<String>, MissingTool> {
    checked_with(
        said,
        |program, args| {
            Command::new(program)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| e.kind())
                .map(|s| s.success())
        },
        crate::process::sandbox::available().is_ok(),
    )
}

fn checked_with(
    said: &[String],
    run: impl Fn(&str, &[&str]) -> Result<bool, std::io::ErrorKind>,
    sandbox: bool,
) -> Result<Vec<String>, MissingTool> {
    let mut offers: Vec<String> = Vec::new();
    for label in said {
        if label == "sandbox" && !sandbox {
            return Err(MissingTool {
                label: label.clone(),
                reason: "the sandbox does not work here (bubblewrap is missing or not permitted)".into(),
                hint: "install bubblewrap (apt-get install bubblewrap), or leave `sandbox` out of --offers".into(),
            });
        }
        if let Some((program, args)) = probe_of(label) {
            let shown = format!("{program} {}", args.join(" "));
            match run(program, args) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(MissingTool {
                        label: label.clone(),
                        reason: format!("`{shown}` fails on this machine"),
                        hint: format!("install what `{label}` stands for, or leave `{label}` out of --offers"),
                    });
                }
                Err(_) => {
                    return Err(MissingTool {
                        label: label.clone(),
                        reason: format!("`{program}` is not on this machine's PATH"),
                        hint: format!("install it, or leave `{label}` out of --offers"),
                    });
                }
            }
        }
        offers.push(label.clone());
    }
    if sandbox {
        offers.push("sandbox".into());
    }
    offers.sort();
    offers.dedup();
    Ok(offers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_known_label_whose_tool_is_missing_stops_the_worker_with_what_to_install() {
        let missing = |_: &str, _: &[&str]| Err(std::io::ErrorKind::NotFound);
        let e = checked_with(&labels(&["gpu-a100", "python"]), missing, false).unwrap_err();
        assert_eq!(e.label, "python");
        let text = e.to_string();
        assert!(
            text.contains("`python3` is not on this machine's PATH") && text.contains("leave `python` out"),
            "{text}"
        );
        let failing = |_: &str, _: &[&str]| Ok(false);
        let e = checked_with(&labels(&["pytest"]), failing, false).unwrap_err();
        assert!(e.to_string().contains("`python3 -m pytest --version` fails"), "{e}");
    }

    #[test]
    fn labels_this_machine_backs_are_offered_with_the_sandbox_when_it_works() {
        let works = |_: &str, _: &[&str]| Ok(true);
        assert_eq!(
            checked_with(&labels(&["python", "team-a"]), works, true).unwrap(),
            labels(&["python", "sandbox", "team-a"])
        );
        assert_eq!(checked_with(&labels(&["team-a"]), works, false).unwrap(), labels(&["team-a"]));
        let e = checked_with(&labels(&["sandbox"]), works, false).unwrap_err();
        assert!(e.to_string().contains("bubblewrap"), "{e}");
    }
}

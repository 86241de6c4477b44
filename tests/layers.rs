//! The layers of `src/`: every top-level module has a place in one order,
//! bottom first, and may name only modules below it. An import that runs
//! upward — the store reaching into the outer loop for one constant, the bus
//! into an optimizer's type — is how the last import cycle grew from 9 files
//! to 34; this test fails on the first one, naming the line, so the fix is
//! made when the import is written: move the shared name down (usually into
//! `domain`), or the code up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bottom first. A module may import any module before it, none after it.
/// A new top-level module needs a place here.
const LAYERS: &[(&str, &str)] = &[
    ("time", "the clock, and the database's offset from it"),
    ("loss", "the loss and paired evidence: arithmetic, no I/O"),
    ("domain", "the shared vocabulary: reasons, modes, spend, seeds, wording"),
    ("textfile", "reading a person's text files with file:line:column errors"),
    ("secrets", "the API key and the keychain"),
    ("process", "running commands: timeouts, process groups, the sandbox"),
    ("workspace", "a trajectory's git-backed copy of a folder"),
    ("store", "the database: every SQL statement"),
    ("llm", "the model client, its cache and ledger"),
    ("bus", "events, persisted by the store"),
    ("auditor", "reads the bus, reports budget trouble"),
    ("artifact", "the artifact registry and built-in defaults"),
    ("numeric", "problems, evaluators, the ALM optimizer, starts"),
    ("suite", "suite and task files: the specification of work"),
    ("overseer", "the checks that measure a workspace"),
    ("ggs", "the goal gradient over the overseers' verdicts"),
    ("engine", "the convergence engine"),
    ("executor", "what carries out an agent iteration"),
    ("memory", "lessons kept across runs"),
    ("aso", "the ASO coordinator"),
    ("task", "one run of one task of any kind"),
    ("outer", "the outer loop: epochs, optimizers, rollback"),
    ("watch", "watched folders"),
    ("queue", "run requests, launches, workers"),
    ("retention", "what old runs are pruned"),
    ("service", "the facade every front end calls, and the report"),
    ("http", "the facade over HTTP"),
    ("bench", "the benchmarks"),
    ("cli", "the command line"),
];

/// The top-level module a file of `src/` belongs to (`None`: the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// The code of a line without its comment (a `//` not part of `://`).
fn code_of(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(at) = line[i..].find("//") {
        let pos = i + at;
        if pos == 0 || bytes[pos - 1] != b':' {
            return &line[..pos];
        }
        i = pos + 2;
    }
    line
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::<module>` a module's code names, with where.
fn imports(src: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let pattern = regex::Regex::new(r"\bcrate::([a-z_][a-z0-9_]*)").unwrap();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(src, &file) else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for m in pattern.captures_iter(code_of(line)) {
                let place = format!("{}:{}", file.strip_prefix(src.parent().unwrap()).unwrap().display(), n + 1);
                found.entry(module.clone()).or_default().push((m[1].to_string(), place));
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_module_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, (m, _))| (*m, i)).collect();
    let mut upward = Vec::new();
    for (module, names) in imports(&src) {
        let Some(&here) = rank.get(module.as_str()) else {
            upward.push(format!("src/{module} has no place in tests/layers.rs's LAYERS: add it where it belongs"));
            continue;
        };
        for (target, place) in names {
            if let Some(&there) = rank.get(target.as_str())
                && there > here
            {
                upward.push(format!("{place}: `{module}` imports `{target}`, which is above it"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run upward (move the shared name down, e.g. into `domain`, or the code up):\n{}",
        upward.join("\n")
    );
}

#[test]
fn every_layer_is_a_module_of_the_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let missing: Vec<&str> = LAYERS
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| !src.join(m).is_dir() && !src.join(format!("{m}.rs")).is_file())
        .collect();
    assert_eq!(missing, Vec::<&str>::new(), "LAYERS names modules src/ does not have");
}

#[test]
fn the_checker_sees_an_upward_import_and_ignores_comments() {
    assert_eq!(code_of("use crate::store::Store; // see crate::outer"), "use crate::store::Store; ");
    assert_eq!(code_of("let url = \"http://x\"; // crate::cli"), "let url = \"http://x\"; ");
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("store")).unwrap();
    std::fs::write(src.join("store/mod.rs"), "//! crate::cli in a doc\nfn f() { crate::outer::TREE_EPOCH; }\n").unwrap();
    let found = imports(&src);
    assert_eq!(found["store"], vec![("outer".to_string(), "src/store/mod.rs:2".to_string())]);
}

//! The layers of `src/`: every top-level module has a place in one order,
//! bottom first, and may name only modules below it. An import that runs
//! upward — the store reaching into the outer loop for one constant, the bus
//! into an optimizer's type — is how the last import cycle grew from 9 files
//! to 34; this test fails on the first one, naming the line, so the fix is
//! made when the import is written: move the shared name down (usually into
//! `domain`), or the code up.
//!
//! The crates of `crates/` hold these layers in the same order, and their
//! dependencies make an import from a lower crate into a higher one fail to
//! compile; this test also keeps the modules inside one crate in order
//! (in `crates/engine`, `overseer` below `task`) and the root's `bench` and
//! `cli` on top.

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
    ("bus", "events, persisted by the store"),
    ("auditor", "reads the bus, reports budget trouble"),
    ("artifact", "the artifact registry and built-in defaults"),
    ("llm", "the model client, its cache and ledger"),
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

/// Every `src` folder of the workspace's library code: the root package's and
/// each layer crate's.
fn source_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut roots = vec![root.join("src")];
    let mut crates: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path().join("src")).collect();
    crates.sort();
    roots.extend(crates);
    roots
}

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

/// Every `crate::<module>` a module's code names, with where (the path from
/// `base`).
fn imports(src: &Path, base: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let pattern = regex::Regex::new(r"\bcrate::([a-z_][a-z0-9_]*)").unwrap();
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut found: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(src, &file) else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        found.entry(module.clone()).or_default();
        for (n, line) in text.lines().enumerate() {
            for m in pattern.captures_iter(code_of(line)) {
                let place = format!("{}:{}", file.strip_prefix(base).unwrap_or(&file).display(), n + 1);
                found.entry(module.clone()).or_default().push((m[1].to_string(), place));
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_module_above_it() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, (m, _))| (*m, i)).collect();
    let mut upward = Vec::new();
    let mut seen = 0;
    for (module, names) in source_roots().iter().flat_map(|src| imports(src, base)) {
        seen += 1;
        let Some(&here) = rank.get(module.as_str()) else {
            upward.push(format!("module `{module}` has no place in tests/layers.rs's LAYERS: add it where it belongs"));
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
    assert_eq!(seen, LAYERS.len(), "modules read: is the source tree where this test looks?");
    assert!(
        upward.is_empty(),
        "imports that run upward (move the shared name down, e.g. into `domain`, or the code up):\n{}",
        upward.join("\n")
    );
}

#[test]
fn every_layer_is_a_module_of_the_crate() {
    let roots = source_roots();
    let missing: Vec<&str> = LAYERS
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| !roots.iter().any(|src| src.join(m).is_dir() || src.join(format!("{m}.rs")).is_file()))
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
    std::fs::write(src.join("store/mod.rs"), "//! crate::cli in a doc\nfn f() { crate::outer::TREE_EPOCH; }\n")
        .unwrap();
    let found = imports(&src, dir.path());
    assert_eq!(found["store"], vec![("outer".to_string(), "src/store/mod.rs:2".to_string())]);
}

/// The modules a layer crate holds (`crates/<name>/src`'s top-level modules),
/// and the layer crates it depends on (its `attractor-*` path dependencies).
fn crates() -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let dependency = regex::Regex::new(r#"(?m)^attractor-([a-z]+) = \{ path = "#).unwrap();
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let deps = dependency.captures_iter(&manifest).map(|c| c[1].to_string()).collect();
        let modules = std::fs::read_dir(dir.join("src"))
            .unwrap()
            .filter_map(|e| module_of(&dir.join("src"), &e.unwrap().path()))
            .collect();
        found.insert(name, (modules, deps));
    }
    found
}

#[test]
fn the_crates_hold_the_layers_in_the_same_order() {
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, (m, _))| (*m, i)).collect();
    let crates = crates();
    assert!(crates.len() >= 8, "{:?}", crates.keys());
    let mut wrong = Vec::new();
    for (name, (modules, deps)) in &crates {
        for dep in deps {
            let below = &crates[dep].0;
            for (low, high) in below.iter().flat_map(|b| modules.iter().map(move |m| (b, m))) {
                if rank[low.as_str()] > rank[high.as_str()] {
                    wrong.push(format!(
                        "crates/{name} depends on crates/{dep}, yet `{low}` is above `{high}` in LAYERS"
                    ));
                }
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}

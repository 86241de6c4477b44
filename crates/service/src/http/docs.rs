//! `docs/http-api.md`, written from the operations table.
//!
//! The API's reference used to be a hand-kept table in the README, and it
//! drifted: an endpoint added, a status changed, and the table did not say
//! so. Now the page is generated from the same declarations the routes, the
//! desktop's command and the TypeScript client come from, and a test fails
//! when the committed page is stale. To regenerate:
//!
//! ```sh
//! ATTRACTOR_UPDATE_GENERATED=1 cargo test -p attractor-service http_api_page
//! ```

use std::path::Path;

use ts_rs::Config;

use crate::service::operations::{OPERATIONS, Operation, Source};

/// Where the page lives, from the repository's root.
pub const PAGE: &str = "docs/http-api.md";

/// What HTTP has beyond the table: verb, path, what it does.
pub const HTTP_ONLY: &[(&str, &str, &str)] = &[
    (
        "GET",
        "/suites/{key}/report.zip",
        "The suite's report (`attractor report`'s files: charts as SVG and PNG, `index.html`) as a zip download.",
    ),
    (
        "GET",
        "/events",
        "Server-sent events: every bus event as JSON (`{\"type\": \"run_finished\", …}`), as it happens.",
    ),
];

const PREAMBLE: &str = "\
# The HTTP API

`attractor serve` answers JSON under `/api`. Each operation below is declared
once, in `crates/service/src/service/operations.rs` (its arguments and where
HTTP finds each, its answer, verb, path and status); the routes, the desktop
app's Tauri command, the front end's typed client
(`ui/src/generated/operations.ts`) and this page all come from that table.
Types link to their TypeScript declarations in `ui/src/generated/`, generated
from the Rust types.

- A failure answers `{\"error\": \"…\", \"validation\": …}` with a 4xx or 5xx
  status: 400 names the argument or body field that is wrong, 404 what was
  not found, 409 what the state forbids now (a launch that is not running, a
  report of a suite without epochs), 422 a suite file
  with issues (each with file, line, column and field).
- A query parameter an endpoint does not take is ignored (the token may travel
  as one); a body field it does not take is refused, named.
- Security: the server binds loopback unless given a token; with a token,
  every `/api` request carries `Authorization: Bearer TOKEN` (or
  `?access_token=TOKEN`, for `EventSource`). Without one, only requests whose
  `Host` is the loopback interface are answered, JSON bodies must say
  `Content-Type: application/json`, and a request that changes something is
  refused when a browser marks it cross-site. Bodies over 2 MB get 413.

This page is generated: `ATTRACTOR_UPDATE_GENERATED=1 cargo test -p attractor-service http_api_page`
rewrites it, and `cargo test` fails when it is stale.

";

/// A doc comment's lines as one paragraph for a table cell.
fn cell(doc: &[&str]) -> String {
    let text = doc.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
    text.replace('|', "\\|")
}

/// A TypeScript type with each generated type's name linked to its file.
fn linked(ty: &str, generated: &Path) -> String {
    static NAME: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[A-Z][A-Za-z0-9]*").expect("a fixed pattern"));
    let linked = NAME.replace_all(ty, |c: &regex::Captures| {
        let n = &c[0];
        if generated.join(format!("{n}.ts")).is_file() {
            format!("[{n}](../ui/src/generated/{n}.ts)")
        } else {
            n.to_string()
        }
    });
    linked.replace('|', "\\|")
}

fn arguments(op: &Operation, cfg: &Config, generated: &Path) -> String {
    let args: Vec<String> = op
        .params
        .iter()
        .filter(|p| p.source != Source::Path)
        .map(|p| format!("`{}` ({}): {}", p.name, p.source.as_str(), linked(&(p.ts_type)(cfg), generated)))
        .collect();
    if args.is_empty() { "—".to_string() } else { args.join("<br>") }
}

/// The page: the preamble, then one row per operation in declaration order,
/// then what only HTTP has. `generated` is `ui/src/generated`, for links.
pub fn page(generated: &Path) -> String {
    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(PREAMBLE);
    out.push_str("| Method | Path | Arguments | Answer | What |\n|---|---|---|---|---|\n");
    for op in OPERATIONS {
        let status = if op.status == 200 { String::new() } else { format!(" ({})", op.status) };
        out.push_str(&format!(
            "| {} | `/api{}` | {} | {}{status} | {} |\n",
            op.verb.as_str(),
            op.path,
            arguments(op, &cfg, generated),
            linked(&(op.answer)(&cfg), generated),
            cell(op.doc),
        ));
    }
    out.push_str("\nWhat only HTTP has (the desktop app reads the same through its own channels):\n\n");
    out.push_str("| Method | Path | What |\n|---|---|---|\n");
    for (verb, path, what) in HTTP_ONLY {
        out.push_str(&format!("| {verb} | `/api{path}` | {what} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn http_api_page_matches_the_operations_table() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let fresh = page(&root.join("ui/src/generated"));
        assert!(fresh.contains("| GET | `/api/suites` |"), "{fresh}");
        // A row per operation and per HTTP-only route, and the two tables' headings.
        assert_eq!(fresh.matches("\n| ").count(), OPERATIONS.len() + HTTP_ONLY.len() + 2);
        let committed = root.join(PAGE);
        if std::env::var_os("ATTRACTOR_UPDATE_GENERATED").is_some() {
            std::fs::write(&committed, &fresh).unwrap();
        }
        let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
        assert!(
            on_disk == fresh,
            "{PAGE} is stale\n  hint: run `ATTRACTOR_UPDATE_GENERATED=1 cargo test -p attractor-service http_api_page` and commit the result"
        );
    }
}

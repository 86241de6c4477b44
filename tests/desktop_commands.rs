//! The desktop shell's commands are named in four places that must agree:
//! the front end's calls (`ui/src/api.ts`), the shell's handler list
//! (`src-tauri/src/main.rs`), the app manifest that makes each one a
//! permission (`src-tauri/build.rs`), and the main window's capability
//! (`tauri.conf.json`). One left out is refused at run time — the screen that
//! calls it shows an error only in the desktop app — so they are checked
//! against each other here. The facade's operations are not among them: all
//! travel through the one command `call` (crates/service/src/service/operations.rs).

use std::collections::BTreeSet;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path)
}

/// The quoted or bare names in the text between `start` and the next `end`.
fn names_between(text: &str, start: &str, end: &str, quoted: bool) -> BTreeSet<String> {
    let from = text.find(start).unwrap_or_else(|| panic!("no `{start}`")) + start.len();
    let to = from + text[from..].find(end).unwrap_or_else(|| panic!("no `{end}` after `{start}`"));
    let body = &text[from..to];
    if quoted {
        body.split('"').skip(1).step_by(2).map(str::to_string).collect()
    } else {
        body.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect()
    }
}

/// Command names the front end invokes: `request<T>(["name", …` and `command<T>("name", …`.
fn called_by_front_end(api: &str) -> BTreeSet<String> {
    let call = regex::Regex::new(r#"\b(?:request|command)<.*?>\(\s*\[?\s*"([a-z_]+)""#).expect("regex");
    call.captures_iter(api).map(|c| c[1].to_string()).collect()
}

#[test]
fn every_command_the_front_end_calls_is_handled_listed_and_permitted() {
    let handled = names_between(&read("src-tauri/src/main.rs"), "generate_handler![", "]", false);
    let listed = names_between(&read("src-tauri/build.rs"), "let commands = &[", "]", true);
    let conf: serde_json::Value = serde_json::from_str(&read("tauri.conf.json")).expect("tauri.conf.json");
    let permitted: BTreeSet<String> = conf["app"]["security"]["capabilities"][0]["permissions"]
        .as_array()
        .expect("the main window's permissions")
        .iter()
        .filter_map(|p| p.as_str()?.strip_prefix("allow-"))
        .map(|p| p.replace('-', "_"))
        .collect();
    let called = called_by_front_end(&read("ui/src/api.ts"));
    let expected: BTreeSet<String> = ["call", "export_report", "pick_path"].map(String::from).into();
    assert_eq!(called, expected, "the front end's Tauri commands: `call` for every operation, and the desktop's own");

    assert_eq!(handled, listed, "src-tauri/src/main.rs's handlers and src-tauri/build.rs's commands differ");
    let not_permitted: Vec<_> = listed.iter().filter(|c| !permitted.contains(*c)).collect();
    assert!(
        not_permitted.is_empty(),
        "commands the main window may not call (add `allow-…` to tauri.conf.json): {not_permitted:?}"
    );
    let missing: Vec<_> = called.iter().filter(|c| !handled.contains(*c)).collect();
    assert!(missing.is_empty(), "commands ui/src/api.ts calls that the desktop shell lacks: {missing:?}");
}

//! Where the bundled example suites are on this machine, so the app can
//! point a newcomer at a real file: the copy an installed package carries
//! beside the program (`/usr/bin/attractor` → `/usr/share/attractor/examples`:
//! the examples of this very version), else `examples/` of a checkout (the
//! folder the program runs in, else the checkout it was built from).

use std::path::{Path, PathBuf};

/// The suite every "start here" hint names.
pub const FIRST_EXAMPLE: &str = "descent.suite.yaml";

/// The folder of the bundled examples, absolute, when there is one. Looked
/// up once a process (the app's overview, which the Inbox badge refetches on
/// every change, names it).
pub fn examples_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(find).clone()
}

fn find() -> Option<PathBuf> {
    let here = std::env::current_dir().ok().map(|d| d.join("examples"));
    let installed = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().and_then(Path::parent).map(|prefix| prefix.join("share/attractor/examples")));
    // A program built from a checkout, started from another folder: the
    // checkout it was built from, while it is still there.
    // (This crate is `crates/suite` of the checkout.)
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).map(|root| root.join("examples"));
    [installed, here, built_from].into_iter().flatten().find(|dir| dir.join(FIRST_EXAMPLE).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_finds_its_own_examples() {
        // Tests run in the crate's root, whose examples/ holds the first example.
        let dir = examples_dir().expect("the checkout's examples");
        assert!(dir.is_absolute());
        assert!(dir.join(FIRST_EXAMPLE).is_file());
    }
}

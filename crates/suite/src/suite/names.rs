//! Names people give suites, tasks and artifacts, and the folder and file
//! names they become.
//!
//! A name may be written in any script (`ünï-cødé`, `定价`, `задача-1`): it is
//! shown, stored and passed to harnesses (`ATTRACTOR_TASK_NAME`) as written.
//! Only what cannot be a name is refused: nothing, more than 128
//! characters, control characters, a path separator, or `.`/`..`. Where a
//! name becomes a folder or file name (run folders, artifact files) it goes
//! through [`folder_name`], a reversible encoding that leaves the ASCII
//! letters, digits, `_`, `-` and `.` alone — so every name that was allowed
//! before keeps its folder — and writes every other byte as `~xx`, which no
//! file system, shell or archive tool misreads.

/// The longest name, in characters.
pub const MAX_NAME_CHARS: usize = 128;

/// What a name may be; said by validation's errors.
pub const NAME_HINT: &str =
    "use 1 to 128 characters in any script, without control characters, `/` or `\\`, and not `.` or `..`";

/// Whether `name` can name a suite, a task or an artifact.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name != "."
        && name != ".."
        && name == name.trim()
        && !name.chars().any(|c| c.is_control() || c == '/' || c == '\\')
}

/// Whether `label` can be a worker's label (`needs:` names it, `--offers`
/// offers it): 1 to 64 lowercase ASCII letters, digits, `-`, `_` and `.`.
pub fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 64
        && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

/// How a label is written, for errors about one.
pub const LABEL_HINT: &str = "use lowercase letters, digits, `-`, `_` and `.` (at most 64)";

/// Longest encoded name kept whole; longer ones are cut and end in a digest
/// of the whole name, staying under the 255 bytes most file systems allow.
const MAX_FOLDER_BYTES: usize = 200;

/// `name` as a folder or file name: the same for ASCII letters, digits,
/// `_`, `-` and `.` (but a leading `.`, which would hide the folder), every
/// other byte of its UTF-8 as `~` and two hex digits. Different names give
/// different folders.
pub fn folder_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if plain {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("~{b:02x}"));
        }
    }
    if out.len() <= MAX_FOLDER_BYTES {
        return out;
    }
    use sha2::{Digest, Sha256};
    let digest = format!("{:x}", Sha256::digest(name.as_bytes()));
    // Cut at a `~xx` boundary: the encoding is ASCII, so any byte index is
    // a char boundary, but a cut escape would read as another byte.
    let mut cut = MAX_FOLDER_BYTES - 17;
    while out[..cut].rfind('~').is_some_and(|t| t + 3 > cut) {
        cut -= 1;
    }
    format!("{}~{}", &out[..cut], &digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_script_are_allowed_and_paths_are_not() {
        for ok in ["ünï-cødé", "定价", "задача-1", "a", "report v2", "..x", "x.."] {
            assert!(valid_name(ok), "{ok}");
        }
        let long = "é".repeat(MAX_NAME_CHARS + 1);
        for bad in ["", ".", "..", "a/b", "a\\b", "../escape", "tab\there", " padded", "line\n", long.as_str()] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn ascii_names_keep_their_folder_and_others_are_encoded_reversibly() {
        assert_eq!(folder_name("descent-tuning_v1.2"), "descent-tuning_v1.2");
        assert_eq!(folder_name("ünï"), "~c3~bcn~c3~af");
        assert_eq!(folder_name(".hidden"), "~2ehidden");
        assert_eq!(folder_name("a~b c"), "a~7eb~20c");
        // Distinct names, distinct folders: `~` itself is encoded.
        assert_ne!(folder_name("~c3~bc"), folder_name("ü"));
        for name in ["定价", "задача-1", "ünï-cødé"] {
            let f = folder_name(name);
            assert!(f.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.~".contains(&b)), "{f}");
        }
    }

    #[test]
    fn a_long_name_s_folder_is_cut_with_a_digest_and_stays_distinct() {
        let a = "定".repeat(MAX_NAME_CHARS);
        let b = format!("{}价", "定".repeat(MAX_NAME_CHARS - 1));
        let (fa, fb) = (folder_name(&a), folder_name(&b));
        assert!(fa.len() <= MAX_FOLDER_BYTES, "{}", fa.len());
        assert_ne!(fa, fb);
        // The cut never leaves half an escape before the digest.
        let head = fa.rsplit_once('~').unwrap().0;
        assert!(head.ends_with(|c: char| c.is_ascii_hexdigit()), "{head}");
        assert!(head.rsplit('~').next().unwrap().len() == 2, "{head}");
    }
}

//! A suite's folder through the store, for workers on other machines.
//!
//! A worker runs another holder's runs from the suite file the launch
//! names. On one machine, or where the machines share the folder at the
//! same path, that file is there. Where it is not, the worker takes the
//! suite's folder from the store instead: when a launch starts on a shared
//! (PostgreSQL) database, its holder packs the folder it read — the suite
//! file, its harness scripts, data and agent workspaces — into a zip named
//! by its SHA-256 ([`pack`]), once per content; a worker without the folder
//! unpacks it into its own cache ([`unpack_into`]) and runs from there, so
//! it runs exactly the files the holder read.
//!
//! What is not a suite's own is left out: version-control folders, caches
//! and build output (`.git`, `node_modules`, `target`, `__pycache__`,
//! `.venv`), and anything above [`MAX_BUNDLE_BYTES`] — such a suite needs
//! the shared folder.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest folder (its files' total size) a launch packs.
pub const MAX_BUNDLE_BYTES: u64 = 64 << 20;

/// Folders never packed: not the suite's own content.
const SKIPPED: &[&str] = &[".git", "node_modules", "target", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"];

/// A packed suite folder.
pub struct Bundle {
    /// The zip's SHA-256, hex.
    pub digest: String,
    pub zip: Vec<u8>,
}

/// Why a folder was not packed.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("the suite's folder {dir} holds more than {limit} MiB; workers on other machines need it at the same path", limit = MAX_BUNDLE_BYTES >> 20)]
    TooLarge { dir: PathBuf },
    #[error("cannot pack the suite's folder {dir}: {reason}")]
    Read { dir: PathBuf, reason: String },
    #[error("the suite's folder from the store is damaged: {0}")]
    Damaged(String),
}

/// Packs `dir` (files in name order, so one content gives one digest).
pub fn pack(dir: &Path) -> Result<Bundle, BundleError> {
    use zip::write::SimpleFileOptions;
    let fail = |reason: String| BundleError::Read { dir: dir.to_path_buf(), reason };
    let mut files = Vec::new();
    let mut total = 0u64;
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !SKIPPED.iter().any(|s| e.file_name() == *s));
    for entry in walk {
        let entry = entry.map_err(|e| fail(e.to_string()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        total += entry.metadata().map_err(|e| fail(e.to_string()))?.len();
        if total > MAX_BUNDLE_BYTES {
            return Err(BundleError::TooLarge { dir: dir.to_path_buf() });
        }
        let rel = entry.path().strip_prefix(dir).map_err(|e| fail(e.to_string()))?;
        let Some(name) = rel.to_str() else { continue };
        files.push((name.replace('\\', "/"), entry.path().to_path_buf()));
    }
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        let executable = is_executable(&path);
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            // A fixed time: the digest is the content's, not the clock's.
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(if executable { 0o755 } else { 0o644 });
        w.start_file(name, options).map_err(|e| fail(e.to_string()))?;
        w.write_all(&bytes).map_err(|e| fail(e.to_string()))?;
    }
    let zip = w.finish().map_err(|e| fail(e.to_string()))?.into_inner();
    use sha2::{Digest, Sha256};
    let digest = format!("{:x}", Sha256::digest(&zip));
    Ok(Bundle { digest, zip })
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_: &Path) -> bool {
    false
}

/// Unpacks a bundle into `cache/<digest>` (once: a folder already there is
/// the same content) and returns that folder. Entries that would land
/// outside it are refused.
pub fn unpack_into(cache: &Path, digest: &str, zip: &[u8]) -> Result<PathBuf, BundleError> {
    use sha2::{Digest, Sha256};
    if format!("{:x}", Sha256::digest(zip)) != digest {
        return Err(BundleError::Damaged("its digest does not match its content".into()));
    }
    let dest = cache.join(digest);
    if dest.is_dir() {
        return Ok(dest);
    }
    let damaged = |e: &dyn std::fmt::Display| BundleError::Damaged(e.to_string());
    // Unpacked beside, then renamed: a worker killed half-way leaves no
    // half folder that a later one would take for whole.
    let partial = cache.join(format!(".{digest}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).map_err(|e| damaged(&e))?;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).map_err(|e| damaged(&e))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| damaged(&e))?;
        let Some(rel) = entry.enclosed_name() else {
            return Err(BundleError::Damaged(format!(
                "entry `{}` leaves its folder",
                entry.name().unwrap_or_default()
            )));
        };
        let path = partial.join(rel);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| damaged(&e))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| damaged(&e))?;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(|e| damaged(&e))?;
        std::fs::write(&path, bytes).map_err(|e| damaged(&e))?;
        #[cfg(unix)]
        if let Some(mode) = entry.unix_mode() {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o755));
        }
    }
    match std::fs::rename(&partial, &dest) {
        Ok(()) => Ok(dest),
        // Another worker of this machine unpacked it meanwhile.
        Err(_) if dest.is_dir() => {
            let _ = std::fs::remove_dir_all(&partial);
            Ok(dest)
        }
        Err(e) => Err(damaged(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_folder_unpacks_to_the_same_files_without_what_is_not_the_suite_s() {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("s.suite.yaml"), "name: s\n").unwrap();
        std::fs::create_dir_all(src.path().join("data/deep")).unwrap();
        std::fs::write(src.path().join("data/deep/x.json"), "[1]").unwrap();
        std::fs::create_dir_all(src.path().join(".git")).unwrap();
        std::fs::write(src.path().join(".git/HEAD"), "ref").unwrap();
        std::fs::create_dir_all(src.path().join("node_modules/m")).unwrap();
        std::fs::write(src.path().join("node_modules/m/i.js"), "").unwrap();
        let a = pack(src.path()).unwrap();
        assert_eq!(pack(src.path()).unwrap().digest, a.digest, "one content, one digest");
        let cache = tempfile::tempdir().unwrap();
        let out = unpack_into(cache.path(), &a.digest, &a.zip).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("s.suite.yaml")).unwrap(), "name: s\n");
        assert_eq!(std::fs::read_to_string(out.join("data/deep/x.json")).unwrap(), "[1]");
        assert!(!out.join(".git").exists() && !out.join("node_modules").exists());
        // Unpacked once; a damaged copy is refused.
        assert_eq!(unpack_into(cache.path(), &a.digest, &a.zip).unwrap(), out);
        let mut bad = a.zip.clone();
        bad[10] ^= 1;
        assert!(matches!(unpack_into(cache.path(), &a.digest, &bad), Err(BundleError::Damaged(_))));
    }
}

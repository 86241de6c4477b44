//! A throwaway PostgreSQL cluster for the tests that run the store on
//! PostgreSQL: `initdb` into a temporary folder (as the `postgres` user when
//! the tests run as root, since initdb refuses root), `pg_ctl start` on a
//! free loopback port with trust authentication, stopped and deleted when
//! dropped. Debian's `postgresql` package provides the programs
//! (`scripts/setup.sh` installs it); no server is set up by hand.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

/// The folder of `initdb` and `pg_ctl`: Debian keeps them out of PATH.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(Result::ok).map(|e| e.path().join("bin")).filter(|b| b.join("initdb").exists()).collect()
        })
        .unwrap_or_default();
    found.sort();
    found
        .pop()
        .expect("PostgreSQL is not installed: scripts/setup.sh's ensure_test_services installs Debian's postgresql")
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Runs a PostgreSQL program as the `postgres` user when we are root.
fn run_as_owner(program: &Path, args: &[&str]) -> Output {
    let mut c = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    c.args(args).output().expect("start a PostgreSQL program")
}

impl PgCluster {
    pub fn start() -> PgCluster {
        let bin = bin_dir();
        let dir = tempfile::Builder::new().prefix("attractor-pg-").tempdir().expect("temp dir");
        if is_root() {
            // The cluster's owner must be able to write its folder.
            let status = Command::new("chown").args(["-R", "postgres:postgres"]).arg(dir.path()).status().unwrap();
            assert!(status.success(), "chown the cluster folder");
        }
        let data = dir.path().join("data");
        let data_s = data.display().to_string();
        let out =
            run_as_owner(&bin.join("initdb"), &["-D", &data_s, "--auth=trust", "--username=postgres", "-E", "UTF8"]);
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let socket = dir.path().display().to_string();
        let opts = format!("-p {port} -k {socket} -c listen_addresses=127.0.0.1 -c fsync=off");
        let log = dir.path().join("log").display().to_string();
        let out = run_as_owner(&bin.join("pg_ctl"), &["-D", &data_s, "-o", &opts, "-l", &log, "-w", "start"]);
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        PgCluster { dir, bin, port }
    }

    /// A fresh database of this cluster, as the URL `--db` takes.
    pub fn database(&self, name: &str) -> String {
        let socket = self.dir.path().display().to_string();
        let out = run_as_owner(
            &self.bin.join("createdb"),
            &["-h", &socket, "-p", &self.port.to_string(), "-U", "postgres", name],
        );
        assert!(out.status.success(), "createdb {name}: {}", String::from_utf8_lossy(&out.stderr));
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = run_as_owner(&self.bin.join("pg_ctl"), &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }
}

//! The API key in a real keychain: a private D-Bus session bus with GNOME
//! Keyring's Secret Service on it (both started here, torn down after), and
//! the real `attractor` binary storing, reporting, using and deleting the key
//! — from the command line and through the HTTP API of `attractor serve`.
//! The key reaches the model server's Authorization header and nowhere else:
//! not the database, not the output.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use attractor::llm::scripted::{Scripted, ScriptedServer};
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789-keychain";

/// A session bus and an unlocked keyring, private to one test.
struct Keyring {
    dir: tempfile::TempDir,
    bus: String,
    bus_pid: i32,
}

impl Keyring {
    fn start() -> Keyring {
        for tool in ["dbus-daemon", "gnome-keyring-daemon"] {
            let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
            assert!(found.status.success(), "{tool} is missing: scripts/setup.sh installs it (dbus, gnome-keyring)");
        }
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "data", "run"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let out = Command::new("dbus-daemon")
            .args(["--session", "--fork", "--print-address=1", "--print-pid=1"])
            .envs(Self::dirs(dir.path()))
            .output()
            .unwrap();
        assert!(out.status.success(), "dbus-daemon: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let bus = lines.next().unwrap().trim().to_string();
        let bus_pid: i32 = lines.next().unwrap().trim().parse().unwrap();
        let keyring = Keyring { dir, bus, bus_pid };
        // The keyring daemon reads the login password on stdin, creates and
        // unlocks the login keyring, and serves org.freedesktop.secrets.
        let mut daemon = Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets", "--daemonize"])
            .envs(keyring.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        daemon.stdin.take().unwrap().write_all(b"test-password").unwrap();
        assert!(daemon.wait().unwrap().success());
        // Ready once `attractor key status` stops reporting an unavailable keychain.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = keyring.cli(&["key", "status"], &[], None);
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if !text.contains("no keychain is available") {
                break;
            }
            assert!(Instant::now() < deadline, "the Secret Service never came up: {text}");
            std::thread::sleep(Duration::from_millis(200));
        }
        keyring
    }

    fn dirs(root: &Path) -> Vec<(String, PathBuf)> {
        vec![
            ("HOME".into(), root.join("home")),
            ("XDG_DATA_HOME".into(), root.join("data")),
            ("XDG_RUNTIME_DIR".into(), root.join("run")),
        ]
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> =
            Self::dirs(self.dir.path()).into_iter().map(|(k, v)| (k, v.display().to_string())).collect();
        env.push(("DBUS_SESSION_BUS_ADDRESS".into(), self.bus.clone()));
        env.push(("ATTRACTOR_SETTINGS".into(), self.dir.path().join("settings.json").display().to_string()));
        env
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("attractor.db")
    }

    /// The binary with this keyring's environment and no key in the
    /// environment unless `extra` sets one.
    fn command(&self, args: &[&str], extra: &[(&str, &str)]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_attractor"));
        c.arg("--db")
            .arg(self.db())
            .args(args)
            .env_remove("ATTRACTOR_LLM_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ATTRACTOR_KEYCHAIN")
            .env_remove("ATTRACTOR_LLM_MODEL")
            .env("ATTRACTOR_RUNS_DIR", self.dir.path().join("runs"))
            .envs(self.env())
            .envs(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        c
    }

    fn cli(&self, args: &[&str], extra: &[(&str, &str)], stdin: Option<&str>) -> Output {
        let mut c = self.command(args, extra);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        // The keyring daemon leaves with its bus.
        let _ = Command::new("kill").arg(self.bus_pid.to_string()).status();
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A suite with one agent task whose model answers right at once.
fn agent_suite(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("answer.txt"), "todo\n").unwrap();
    std::fs::write(dir.join("agent.json"), r#"{"verifier": {"enabled": false}}"#).unwrap();
    let suite = dir.join("agent.suite.yaml");
    std::fs::write(
        &suite,
        "name: answer\ntasks:\n  - name: write-it\n    kind: agent\n    task: Write done into answer.txt.\n    \
         workspace: ws\n    budget:\n      max_loops: 2\n    overseers:\n      - name: check\n        kind: custom\n        \
         command: grep -qx done answer.txt\n",
    )
    .unwrap();
    suite
}

fn reply() -> Scripted {
    Scripted::json(&json!({"summary": "write it", "tools_used": [],
        "edits": [{"path": "answer.txt", "action": "write", "content": "done\n"}]}))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_kept_in_the_keychain_is_sent_to_the_model_and_nowhere_else() {
    let k = Keyring::start();
    let status = k.cli(&["key", "status"], &[], None);
    assert_eq!(status.status.code(), Some(1), "{}", text(&status));
    assert!(text(&status).contains("no API key"), "{}", text(&status));

    // The key comes on stdin, never on the command line.
    let set = k.cli(&["key", "set"], &[], Some(&format!("{KEY}\n")));
    assert!(set.status.success(), "{}", text(&set));
    assert!(!text(&set).contains(KEY), "the key is never printed");
    let status = k.cli(&["key", "status"], &[], None);
    assert!(status.status.success());
    assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "API key: from keychain");
    // The environment wins over the keychain.
    let status = k.cli(&["key", "status"], &[("ATTRACTOR_LLM_API_KEY", "sk-env")], None);
    assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "API key: from ATTRACTOR_LLM_API_KEY");
    let empty = k.cli(&["key", "set"], &[], Some("\n"));
    assert_eq!(empty.status.code(), Some(2), "{}", text(&empty));
    assert!(text(&empty).contains("no key on standard input"), "{}", text(&empty));

    // A run sends the keychain's key to the model server as its bearer token.
    let model = ScriptedServer::start(vec![reply()]).await.unwrap();
    let suite = agent_suite(k.dir.path());
    let config = k.dir.path().join("agent.json");
    let args = ["run", suite.to_str().unwrap(), "--agent-config", config.to_str().unwrap()];
    let base = model.base_url();
    let run = k.cli(&args, &[("ATTRACTOR_LLM_BASE_URL", &base), ("ATTRACTOR_LLM_MODEL", "scripted")], None);
    assert!(run.status.success(), "{}", text(&run));
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert!(!text(&run).contains(KEY));
    // Not in the database (nor its write-ahead log).
    for f in std::fs::read_dir(k.dir.path()).unwrap().filter_map(Result::ok) {
        if f.file_name().to_string_lossy().starts_with("attractor.db") {
            let bytes = std::fs::read(f.path()).unwrap();
            assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is in {}", f.path().display());
        }
    }
    // ATTRACTOR_KEYCHAIN=off: the keychain is not asked, so no key is sent.
    let model = ScriptedServer::start(vec![reply()]).await.unwrap();
    let base = model.base_url();
    let env =
        [("ATTRACTOR_LLM_BASE_URL", base.as_str()), ("ATTRACTOR_LLM_MODEL", "scripted"), ("ATTRACTOR_KEYCHAIN", "off")];
    let run = k.cli(&args, &env, None);
    assert!(run.status.success(), "{}", text(&run));
    assert_eq!(model.requests()[0].header("authorization"), None);

    let delete = k.cli(&["key", "delete"], &[], None);
    assert!(text(&delete).contains("removed the API key"), "{}", text(&delete));
    let again = k.cli(&["key", "delete"], &[], None);
    assert!(text(&again).contains("held no API key"), "{}", text(&again));
}

/// `attractor serve` with this keyring; killed on drop.
struct Serve(Child, String);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(k: &Keyring) -> Serve {
    let mut child =
        k.command(&["serve", "--port", "0"], &[]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(i) = line.find("http://") {
            break line[i..].split_whitespace().next().unwrap().trim_end_matches('/').to_string();
        }
    };
    // Keep reading, so the server's later lines never meet a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Serve(child, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_settings_api_stores_and_removes_the_key_without_ever_returning_it() {
    let k = Keyring::start();
    let s = serve(&k);
    let http = reqwest::Client::new();
    let get =
        || async { http.get(format!("{}/api/settings", s.1)).send().await.unwrap().json::<Value>().await.unwrap() };
    let v = get().await;
    assert_eq!((v["api_key_present"].as_bool(), v["keychain_available"].as_bool()), (Some(false), Some(true)), "{v}");

    let put = http.put(format!("{}/api/settings/api-key", s.1)).json(&json!({"key": KEY})).send().await.unwrap();
    assert!(put.status().is_success());
    let body = put.text().await.unwrap();
    assert!(!body.contains(KEY), "the key is never sent back: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["api_key_source"], "keychain");
    // Stored for real: the command line sees it.
    let status = k.cli(&["key", "status"], &[], None);
    assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "API key: from keychain");

    let blank = http.put(format!("{}/api/settings/api-key", s.1)).json(&json!({"key": "  "})).send().await.unwrap();
    assert_eq!(blank.status(), reqwest::StatusCode::BAD_REQUEST);

    // Removed from the command line: the settings screen's next read shows it.
    assert!(k.cli(&["key", "delete"], &[], None).status.success());
    assert!(get().await["api_key_source"].is_null());
    let put = http.put(format!("{}/api/settings/api-key", s.1)).json(&json!({"key": KEY})).send().await.unwrap();
    assert!(put.status().is_success());
    let del = http.delete(format!("{}/api/settings/api-key", s.1)).send().await.unwrap();
    let v: Value = del.json().await.unwrap();
    assert!(v["api_key_source"].is_null() && v["api_key_present"] == false, "{v}");
}

#[test]
fn without_a_keychain_the_status_says_why_and_what_to_do_instead() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["key", "status"])
        .env_remove("ATTRACTOR_LLM_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", dir.path().join("no-bus").display()))
        .env("XDG_RUNTIME_DIR", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out);
    assert!(t.contains("no keychain is available") && t.contains("ATTRACTOR_LLM_API_KEY"), "{t}");
    let set = Command::new(env!("CARGO_BIN_EXE_attractor"))
        .args(["key", "set"])
        .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", dir.path().join("no-bus").display()))
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut set = set;
    set.stdin.take().unwrap().write_all(KEY.as_bytes()).unwrap();
    let out = set.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no keychain is available") && !text(&out).contains(KEY));
}

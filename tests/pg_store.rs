//! The PostgreSQL store through the binary: two instances with data dirs of their own
//! sharing one database, `store copy` to PostgreSQL and back to a redb file with identical
//! exports, `doctor` on PostgreSQL, and the password kept out of every output, error and log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::bin::{glassbox, ok, on_file};
use support::pg::TempPostgres;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude_code/projects"
);

/// The binary with `data` as its data dir and `url` as its store.
fn on(data: &Path, url: &str) -> Command {
    let mut c = glassbox(data);
    c.env("GLASSBOX_STORE_URL", url);
    c
}

fn sessions(cmd: &mut Command) -> Vec<Value> {
    let out = ok(cmd.args(["sessions", "list", "--json"]));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every session's `export --format json`, by session id.
fn exports(mut cmd: impl FnMut() -> Command) -> BTreeMap<String, Vec<u8>> {
    let list = sessions(&mut cmd());
    assert!(!list.is_empty());
    list.iter()
        .map(|s| {
            let id = s["id"].as_str().unwrap().to_string();
            let out = ok(cmd().args(["export", &id, "--format", "json"]));
            (id, out.stdout)
        })
        .collect()
}

/// A copy's `--json` counts, the tables that had rows.
fn rows_by_table(copied: &Value) -> BTreeMap<String, u64> {
    copied["tables"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(table, n)| (table.clone(), n.as_u64().unwrap()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn two_instances_share_one_database() {
    let pg = TempPostgres::shared();
    let url = pg.socket_url(&pg.create_database());
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));

    assert!(sessions(&mut on(&b, &url)).is_empty());
    ok(on(&a, &url).args(["import", "claude-code", FIXTURES]));
    let imported = Instant::now();
    let seen = loop {
        let listed = sessions(&mut on(&b, &url));
        if listed.len() == 3 || imported.elapsed() > Duration::from_secs(1) {
            break listed;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(imported.elapsed() <= Duration::from_secs(1));
    let mut projects: Vec<&str> = seen
        .iter()
        .map(|s| s["project"].as_str().unwrap())
        .collect();
    projects.sort_unstable();
    assert_eq!(projects, ["api", "calc", "web"]);
    assert_eq!(sessions(&mut on(&a, &url)), seen);
    // Neither instance kept anything in a redb file of its own.
    assert!(!a.join("glassbox.redb").exists() && !b.join("glassbox.redb").exists());
}

#[test]
fn store_copy_to_postgres_and_back_keeps_every_export() {
    let pg = TempPostgres::shared();
    let url = pg.socket_url(&pg.create_database());
    let dir = tempfile::tempdir().unwrap();
    let (src, back) = (dir.path().join("src"), dir.path().join("back"));
    ok(on_file(&src).args(["import", "claude-code", FIXTURES]));
    let before = exports(|| on_file(&src));
    assert_eq!(before.len(), 3);

    let out = ok(on_file(&src).args(["store", "copy", "--to", &url, "--json"]));
    let to_pg: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(to_pg["to_backend"], "postgres");
    assert_eq!(
        to_pg["from"],
        src.join("glassbox.redb").display().to_string()
    );
    assert!(to_pg["tables"]["sessions"].as_u64() == Some(3), "{to_pg}");
    assert!(to_pg["tables"]["nodes"].as_u64().unwrap() > 0, "{to_pg}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("copying nodes"),
        "progress on stderr"
    );
    assert_eq!(exports(|| on(&back, &url)), before);

    let copy = back.join("glassbox.redb");
    let out = ok(on_file(&back).args([
        "store",
        "copy",
        "--from",
        &url,
        "--to",
        copy.to_str().unwrap(),
        "--json",
    ]));
    let to_redb: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(to_redb["to_backend"], "redb");
    // A redb file lists its empty tables too; PostgreSQL creates a table with its first row.
    assert_eq!(rows_by_table(&to_redb), rows_by_table(&to_pg));
    assert_eq!(to_redb["rows"], to_pg["rows"]);
    assert_eq!(exports(|| on_file(&back)), before);

    // Text output: one line per table and the total.
    let third = dir.path().join("third.redb");
    let out = ok(on_file(&src).args(["store", "copy", "--to", third.to_str().unwrap()]));
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        shown
            .lines()
            .any(|l| l.trim_start().starts_with("sessions") && l.ends_with(" 3")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("{} rows in", to_pg["rows"])),
        "{shown}"
    );

    // A store that holds sessions is never a copy's target.
    let again = on_file(&src)
        .args(["store", "copy", "--to", &url])
        .output()
        .unwrap();
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("already holds 3 sessions"), "{err}");
    let itself = on_file(&src)
        .args([
            "store",
            "copy",
            "--to",
            src.join("glassbox.redb").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!itself.status.success());
    assert!(text(&itself).contains("into itself"), "{}", text(&itself));
}

#[test]
fn doctor_reports_the_server_and_never_the_password() {
    let pg = TempPostgres::shared();
    let db = pg.create_database();
    let password = pg.password().to_string();
    let url = pg.tcp_url(&db, Some(&password));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut outputs = Vec::new();

    ok(on(&data, &url).args(["import", "claude-code", FIXTURES]));
    let out = ok(on(&data, &url).args(["doctor", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = &v["store"];
    assert_eq!(st["backend"], "postgres", "{st}");
    assert_eq!(
        st["url"],
        format!("postgresql://glassbox@127.0.0.1:{}/{db}", pg.port())
    );
    assert!(
        st["server_version_num"].as_u64().unwrap() >= 100_000,
        "{st}"
    );
    assert_eq!(st["tls"], pg.tls(), "{st}");
    assert!(st["latency_ms"].as_f64().unwrap() > 0.0, "{st}");
    assert!(st["schema_version"].as_u64().is_some(), "{st}");
    // No file to measure, but the records are: what they take stored and as JSON.
    assert!(st.get("size_bytes").is_none(), "{st}");
    let c = &st["compression"];
    let (stored, plain) = (
        c["node_bytes_stored"].as_u64().unwrap(),
        c["node_bytes_plain"].as_u64().unwrap(),
    );
    assert!(stored > 0 && plain > stored, "{c}");
    assert!(c["ratio"].as_f64().unwrap() > 1.0, "{c}");
    assert!(!st["search_runs"].as_array().unwrap().is_empty(), "{st}");
    outputs.push(text(&out));

    let out = ok(on(&data, &url).arg("doctor"));
    let shown = text(&out);
    assert!(
        shown.contains("store        PostgreSQL postgresql://glassbox@127.0.0.1"),
        "{shown}"
    );
    assert!(shown.contains("round trip"), "{shown}");
    assert!(shown.contains("searched exactly by glassbox"), "{shown}");
    assert!(!shown.contains("free "), "{shown}");
    assert!(
        shown.contains("  nodes      ")
            && shown.contains("of JSON (")
            && shown.contains("× compression"),
        "{shown}"
    );
    assert!(
        shown.contains("  search     ") && shown.contains(" in the index"),
        "{shown}"
    );
    outputs.push(shown);

    // The flag wins over the environment, and the config shows the URL without password.
    let out = ok(on(&data, "postgres://nobody@192.0.2.1/none")
        .args(["--store", &url, "config", "show", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["keys"]["store.url"]["origin"], "flag:--store");
    outputs.push(text(&out));
    outputs.push(text(&ok(on(&data, &url).args(["config", "show"]))));
    outputs.push(text(&ok(
        on(&data, &url).args(["sessions", "list", "--json"])
    )));
    let copy = dir.path().join("copy.redb");
    outputs.push(text(&ok(on(&data, &url).args([
        "store",
        "copy",
        "--to",
        copy.to_str().unwrap(),
        "--json",
    ]))));
    let id = sessions(&mut on(&data, &url))[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for format in ["json", "md"] {
        outputs.push(text(&ok(
            on(&data, &url).args(["export", &id, "--format", format])
        )));
    }
    outputs.push(text(&ok(on(&data, &url).args(["-vv", "sessions", "list"]))));
    outputs.push(std::fs::read_to_string(data.join("glassbox.log")).unwrap_or_default());
    for shown in &outputs {
        assert!(
            !shown.contains(&password),
            "the password was shown: {shown}"
        );
    }
}

/// Runs a command that must fail; its stderr, checked to be one line without `secret`.
fn one_line_failure(cmd: &mut Command, secret: &str) -> String {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("glassbox: error: "), "{err}");
    assert!(!err.contains(secret), "{err}");
    assert!(out.stdout.is_empty());
    err
}

#[test]
fn bad_store_urls_fail_in_one_line_without_the_password() {
    let pg = TempPostgres::shared();
    let db = pg.create_database();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let secret = "Wr0ngPa55word";
    let list = ["sessions", "list", "--json"];

    let wrong = pg.tcp_url(&db, Some(secret));
    let err = one_line_failure(on(&data, &wrong).args(list), secret);
    assert!(
        err.contains(&format!(
            "postgresql://glassbox@127.0.0.1:{}/{db}",
            pg.port()
        )),
        "{err}"
    );
    assert!(err.contains("password"), "{err}");

    let missing = pg.tcp_url("no_such_db", Some(secret));
    let err = one_line_failure(on(&data, &missing).args(list), secret);
    assert!(err.contains("no_such_db"), "{err}");

    let closed = format!(
        "postgres://glassbox:{secret}@127.0.0.1:{}/x?connect_timeout=2",
        support::pg::free_port().unwrap()
    );
    let err = one_line_failure(on(&data, &closed).args(list), secret);
    assert!(err.contains("postgres://glassbox@127.0.0.1"), "{err}");

    let other = format!("mysql://glassbox:{secret}@127.0.0.1/x");
    let err = one_line_failure(on(&data, &other).args(list), secret);
    assert!(err.contains("unsupported scheme 'mysql://'"), "{err}");
    let err = one_line_failure(
        glassbox(&data).args(["store", "copy", "--to", &other]),
        secret,
    );
    assert!(err.contains("unsupported scheme"), "{err}");

    // Doctor names the failure in its store line and still reports the rest.
    let out = ok(on(&data, &wrong).args(["doctor", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["store"]["error"].as_str().unwrap().contains("password"),
        "{v}"
    );
    assert!(!text(&out).contains(secret));
    assert!(
        !std::fs::read_to_string(data.join("glassbox.log"))
            .unwrap_or_default()
            .contains(secret)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_by_one_instance_is_listed_by_another() {
    let server = support::ScriptedServer::start(support::Script::forever(support::Step::sse(
        support::fixture("anthropic_thinking.sse"),
    )))
    .await;
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let pg = TempPostgres::shared();
        let store = pg.socket_url(&pg.create_database());
        let (a, b) = (root.join("a"), root.join("b"));
        ok(on(&a, &store)
            .args(["ask", "--provider", "anthropic", "--base-url", &url, "Why?"])
            .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef"));
        let asked = Instant::now();
        let listed = sessions(&mut on(&b, &store));
        assert!(asked.elapsed() <= Duration::from_secs(1));
        assert_eq!(listed.len(), 1, "{listed:?}");
        let id = listed[0]["id"].as_str().unwrap().to_string();
        let shown = ok(on(&b, &store).args(["export", &id, "--format", "json"]));
        assert!(!shown.stdout.is_empty());
    })
    .await
    .unwrap();
}

#[test]
fn a_failed_copy_into_a_new_file_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    ok(on_file(&data).args(["sessions", "list"]));
    // A table this glassbox does not know makes the copy fail after the target is created.
    let db = redb::Database::open(data.join("glassbox.redb")).unwrap();
    let w = db.begin_write().unwrap();
    {
        let def = redb::TableDefinition::<&[u8], &[u8]>::new("from_a_newer_glassbox");
        let mut t = w.open_table(def).unwrap();
        t.insert(b"k".as_slice(), b"v".as_slice()).unwrap();
    }
    w.commit().unwrap();
    drop(db);

    let target = dir.path().join("backup").join("copy.redb");
    let out = on_file(&data)
        .args(["store", "copy", "--to", target.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("from_a_newer_glassbox"), "{err}");
    assert!(err.contains("the partial copy was removed"), "{err}");
    assert!(!target.exists());
}

/// The nodes of every session in the store `cmd` opens.
fn node_total(cmd: &mut Command) -> u64 {
    sessions(cmd)
        .iter()
        .map(|s| s["nodes"].as_u64().unwrap())
        .sum()
}

/// The nodes a one-shot import of `root` into a new redb store makes.
fn nodes_imported(root: &Path) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(on_file(dir.path())
        .args(["import", "claude-code", "--json"])
        .arg(root));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(summary["lines"].as_u64().unwrap() > 0, "{summary}");
    node_total(&mut on_file(dir.path()))
}

/// A child process killed when the test ends, however it ends.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_watch_waits_out_a_stopped_server_and_loses_nothing() {
    // A server of this test's own: it is stopped part way.
    let pg = TempPostgres::start().unwrap();
    let url = pg.socket_url(&pg.create_database());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    support::copy_dir(Path::new(FIXTURES), &root);
    let data = dir.path().join("data");
    let before = nodes_imported(&root);

    let rounds = dir.path().join("rounds.jsonl");
    let mut watcher = Kill(
        on(&data, &url)
            .args(["import", "claude-code", "--watch", "--json"])
            .args(["--reconcile-secs", "1"])
            .arg(&root)
            .stdout(std::fs::File::create(&rounds).unwrap())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let wait_for = |what: &str, want: u64| {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = node_total(&mut on(&data, &url));
            if now == want {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {now} nodes, not {want}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for("the first import", before);

    // Lines appended while the server is down are stored once it is back.
    pg.stop();
    let api = root.join("-home-ann-api");
    let main = api.join("33333333-3333-4333-8333-333333333333.jsonl");
    let extra =
        std::fs::read_to_string(Path::new(FIXTURES).join("../appended_line_3.txt")).unwrap();
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .unwrap();
    f.write_all(extra.as_bytes()).unwrap();
    drop(f);
    let after = nodes_imported(&root);
    assert!(after > before);
    std::thread::sleep(Duration::from_millis(2500));
    pg.start_again();
    wait_for("the lines appended while the server was down", after);
    assert!(
        watcher.0.try_wait().unwrap().is_none(),
        "the watcher keeps running"
    );
    let log = std::fs::read_to_string(&rounds).unwrap();
    assert!(log.contains("trying again"), "{log}");
    // Later rounds import nothing twice.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(node_total(&mut on(&data, &url)), after);
}

#[test]
fn the_ledger_waits_out_a_stopped_server_and_stores_each_call_once() {
    use std::io::{BufRead, BufReader, Write};
    let pg = TempPostgres::start().unwrap();
    let url = pg.socket_url(&pg.create_database());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let stderr = dir.path().join("stderr.log");
    let mut server = Kill(
        on(&data, &url)
            .env("GLASSBOX_MCP__STORE_RETRY_SECS", "120")
            .arg("mcp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut stdin = server.0.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = server.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    // Answers come in the order the calls finish: one that comes before the one waited
    // for is kept for later.
    let mut early: std::collections::HashMap<u64, Value> = Default::default();
    let mut answer = |id: u64| {
        let v = loop {
            if let Some(v) = early.remove(&id) {
                break v;
            }
            let line = rx
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| {
                    let log =
                        std::fs::read_to_string(data.join("glassbox.log")).unwrap_or_default();
                    panic!("no answer to request {id}; the server's log:\n{log}")
                });
            let v: Value = serde_json::from_str(&line).unwrap();
            early.insert(v["id"].as_u64().unwrap(), v);
        };
        assert!(v["result"]["isError"] != true, "request {id}: {v}");
        v
    };
    let thought = |id: u64, n: u64| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "sequentialthinking", "arguments": {"thought": format!("thought {n}"),
            "nextThoughtNeeded": n < 2, "thoughtNumber": n, "totalThoughts": 2}}})
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "outage", "version": "1"}}}),
    );
    answer(1);
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(thought(2, 1));
    answer(2);

    // Calls made while the server is down are answered once it is back, each stored once.
    pg.stop();
    send(thought(3, 2));
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "checkpoint", "arguments": {"thoughtNumber": 1, "verdict": "verified"}}}),
    );
    std::thread::sleep(Duration::from_millis(2500));
    pg.start_again();
    let second = answer(3);
    assert_eq!(
        second["result"]["structuredContent"]["thoughtHistoryLength"], 2,
        "{second}"
    );
    answer(4);
    let log = std::fs::read_to_string(data.join("glassbox.log")).unwrap();
    assert!(log.contains("trying again"), "{log}");
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(err.is_empty(), "stderr: {err}");
    let list = sessions(&mut on(&data, &url));
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(
        list[0]["nodes"], 3,
        "two thoughts and a checkpoint: {list:?}"
    );
}

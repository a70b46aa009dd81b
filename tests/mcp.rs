//! `glassbox mcp` driven by the official MCP Python SDK (tests/mcp_client/ledger_client.py in
//! the `.venv` scripts/test.sh creates) over stdio and streamable HTTP, then the store read
//! back from Rust; the bearer token; two servers and a journal follower at once; and a
//! snapshot of the Ledger view with branches and revisions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::TimeZone;
use glassbox::app::ledger::LedgerModel;
use glassbox::store::{
    ChangeKind, Edge, EdgeType, Node, NodeId, NodeType, Session, SessionId, SessionSource, Store,
};
use glassbox::views::theme::{ColorDepth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_glassbox");
const CRITIQUE_TEXT: &str = "The step assumes the cache is warm; say what happens when it is cold.";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn client_script() -> PathBuf {
    repo().join("tests/mcp_client/ledger_client.py")
}

/// The virtualenv's python with the MCP SDK. Missing: a failure in CI, a loud skip elsewhere.
fn python() -> Option<PathBuf> {
    let py = repo().join(".venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    let msg = format!(
        "the MCP Python SDK is not installed at {} — run scripts/test.sh (it creates .venv with `pip install mcp`)",
        py.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!!!!!! SKIPPED: {msg} !!!!!!!!!!\n");
    None
}

/// A scratch data dir and config dir.
struct Env {
    _dir: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let config = dir.path().join("config");
        Self {
            _dir: dir,
            data,
            config,
        }
    }

    fn apply(&self, cmd: &mut Command) {
        cmd.env("GLASSBOX_DATA_DIR", &self.data)
            .envs(support::bin::store_env(&self.data))
            .env("GLASSBOX_CONFIG_DIR", &self.config)
            .env("NO_COLOR", "1");
    }

    fn glassbox(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        self.apply(&mut cmd);
        cmd.output().unwrap()
    }

    fn store(&self) -> Store {
        support::store::open(&self.data.join("glassbox.redb")).unwrap()
    }

    fn token(&self) -> String {
        let out = self.glassbox(&["mcp", "--print-token"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn client_command(&self, py: &Path, transport: &Transport, args: &[&str]) -> Command {
        let mut cmd = Command::new(py);
        cmd.arg(client_script());
        match transport {
            Transport::Stdio => {
                cmd.args(["--binary", BIN]);
            }
            Transport::Http { url, token } => {
                cmd.args(["--url", url, "--token", token]);
            }
        }
        cmd.args(args);
        self.apply(&mut cmd);
        cmd
    }

    /// Runs one client scenario to the end; its summary line.
    fn client(&self, py: &Path, transport: &Transport, args: &[&str]) -> Value {
        let out = self.client_command(py, transport, args).output().unwrap();
        summary(&out, args)
    }
}

fn summary(out: &Output, args: &[&str]) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client {args:?} failed:\n{stderr}\n{stdout}"
    );
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("client {args:?} printed no summary ({e}):\n{stdout}\n{stderr}"))
}

enum Transport {
    Stdio,
    Http { url: String, token: String },
}

/// `glassbox mcp --http 127.0.0.1:0` for one test.
struct HttpServer {
    child: Child,
    url: String,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl HttpServer {
    fn start(env: &Env, extra: &[&str]) -> Self {
        Self::start_at(env, "127.0.0.1:0", extra)
    }

    /// Starts the server on `bind` and waits for its "listening on" line; its stderr is read
    /// to the end in the background.
    fn start_at(env: &Env, bind: &str, extra: &[&str]) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.args(["mcp", "--http", bind])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        env.apply(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = String::new();
        let url = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("server exited before listening:\n{seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find("listening on http://") {
                break line[at + "listening on ".len()..].trim().to_string();
            }
        };
        let stderr = Arc::new(Mutex::new(seen));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        // A server on every interface is reached through loopback.
        let url = url.replace("http://0.0.0.0:", "http://127.0.0.1:");
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .unwrap();
        Self {
            child,
            url,
            addr,
            stderr,
        }
    }

    /// SIGINT, and the server must exit cleanly.
    fn stop(mut self) {
        Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "server exited with {status}:\n{}",
                    self.stderr.lock().unwrap()
                );
                return;
            }
            assert!(Instant::now() < deadline, "server did not stop on SIGINT");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 request; the status code.
fn http_status(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    req.push_str(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

fn mcp_sessions(store: &Store) -> Vec<Session> {
    let mut s: Vec<Session> = store
        .sessions()
        .unwrap()
        .into_iter()
        .filter(|s| s.source == SessionSource::Mcp)
        .collect();
    s.sort_by_key(|s| s.id);
    s
}

fn number(n: &Node) -> u64 {
    n.meta["thoughtNumber"].as_u64().unwrap()
}

/// The 20-thought session of the `sequential` scenario, checked node by node and edge by edge.
fn check_sequential_session(store: &Store, session: SessionId) {
    let nodes = store.session_nodes(session).unwrap();
    let thoughts: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::LedgerThought)
        .collect();
    assert_eq!(thoughts.len(), 20, "ledger thoughts in {session}");
    assert_eq!(nodes.len(), 20, "only ledger thoughts");
    let numbers: Vec<u64> = thoughts.iter().map(|n| number(n)).collect();
    assert_eq!(numbers, (1..=20).collect::<Vec<u64>>());
    let by_number: HashMap<u64, NodeId> = thoughts.iter().map(|n| (number(n), n.id)).collect();
    let of = |id: NodeId| number(thoughts.iter().find(|n| n.id == id).unwrap());
    for n in &thoughts {
        let i = number(n);
        assert_eq!(
            n.text,
            format!("Step {i} — étape {i}: reasoning about the cache layout.")
        );
        let m = &n.meta;
        let total = if i <= 12 { 10 } else { 20 };
        assert_eq!(
            m["totalThoughts"],
            json!(total.max(i)),
            "totalThoughts of {i}"
        );
        assert_eq!(m["nextThoughtNeeded"], json!(i < 20));
        assert_eq!(
            m["isRevision"],
            json!(i == 6 || i == 15),
            "isRevision of {i}"
        );
        let branch = (9..=11).contains(&i);
        assert_eq!(
            m["branchId"],
            if branch {
                json!("alt-approach")
            } else {
                Value::Null
            }
        );
        assert_eq!(
            m["branchFromThought"],
            if branch { json!(7) } else { Value::Null }
        );
        let revises = match i {
            6 => json!(3),
            15 => json!(12),
            _ => Value::Null,
        };
        assert_eq!(m["revisesThought"], revises);
    }
    let edges = store.session_edges(session).unwrap();
    let pairs = |kind: EdgeType| -> BTreeSet<(u64, u64)> {
        edges
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| (of(e.src), of(e.dst)))
            .collect()
    };
    assert_eq!(pairs(EdgeType::Revises), BTreeSet::from([(6, 3), (15, 12)]));
    assert_eq!(
        pairs(EdgeType::BranchesFrom),
        BTreeSet::from([(9, 7), (10, 7), (11, 7)])
    );
    assert_eq!(edges.len(), 5, "no other edges: {edges:?}");
    // Revisions point at the revised node itself.
    let rev6 = edges
        .iter()
        .find(|e| e.kind == EdgeType::Revises && e.src == by_number[&6])
        .unwrap();
    assert_eq!(rev6.dst, by_number[&3]);
    // The Ledger model shows the branch under thought 7 and both revisions.
    let model = LedgerModel::from_store(store, session).unwrap();
    assert_eq!(model.thoughts().len(), 20);
    assert_eq!(model.revision_count(), 2);
    assert_eq!(model.branches().len(), 1);
    assert_eq!(model.branches()[0].origin, Some(by_number[&7]));
}

fn check_sequential_summary(summary: &Value) {
    assert_eq!(summary["tools"].as_array().unwrap().len(), 8);
    let outputs = summary["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 20);
    assert_eq!(
        outputs[10]["totalThoughts"],
        json!(11),
        "totalThoughts raised at 11"
    );
    assert_eq!(outputs[19]["thoughtHistoryLength"], json!(20));
}

#[test]
fn sequential_thinking_over_stdio_matches_the_reference_and_persists() {
    let Some(py) = python() else { return };
    for mode in ["auto", "legacy"] {
        let env = Env::new();
        let summary = env.client(&py, &Transport::Stdio, &["--mode", mode, "sequential"]);
        check_sequential_summary(&summary);
        let want = if mode == "auto" {
            "2026-07-28"
        } else {
            "2025-11-25"
        };
        assert_eq!(
            summary["protocol"],
            json!(want),
            "negotiated protocol in {mode} mode"
        );
        let store = env.store();
        let sessions = mcp_sessions(&store);
        assert_eq!(sessions.len(), 1, "one session for the one connection");
        assert_eq!(sessions[0].meta["transport"], json!("stdio"));
        check_sequential_session(&store, sessions[0].id);
        drop(store);
        // The same through the CLI, as a user would look.
        let out = env.glassbox(&["sessions", "show", &sessions[0].id.to_string(), "--json"]);
        assert!(out.status.success());
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        let kinds: Vec<&str> = shown["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, vec!["ledger_thought"; 20]);
        let edges: Vec<&str> = shown["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert_eq!(edges.iter().filter(|k| **k == "revises").count(), 2);
        assert_eq!(edges.iter().filter(|k| **k == "branches_from").count(), 3);
    }
}

#[test]
fn sequential_thinking_over_http_with_the_token() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let token = env.token();
    let server = HttpServer::start(&env, &[]);
    let http = Transport::Http {
        url: server.url.clone(),
        token,
    };
    for mode in ["auto", "legacy"] {
        let summary = env.client(&py, &http, &["--mode", mode, "sequential"]);
        check_sequential_summary(&summary);
    }
    server.stop();
    let store = env.store();
    let sessions = mcp_sessions(&store);
    assert_eq!(sessions.len(), 2, "one session per client run");
    for s in &sessions {
        assert_eq!(s.meta["transport"], json!("http"));
        check_sequential_session(&store, s.id);
    }
}

#[test]
fn http_needs_the_bearer_token() {
    let env = Env::new();
    let token = env.token();
    let file = env.config.join("mcp-token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    assert_eq!(env.token(), token, "the token is generated once");
    let server = HttpServer::start(&env, &[]);
    let a = server.addr;
    assert_eq!(http_status(a, "POST", "/mcp", &[]), 401);
    assert_eq!(
        http_status(a, "POST", "/mcp", &[("Authorization", "Bearer wrong")]),
        401
    );
    let almost = format!("Bearer {}", &token[..token.len() - 1]);
    assert_eq!(
        http_status(a, "POST", "/mcp", &[("Authorization", &almost)]),
        401
    );
    assert_eq!(
        http_status(
            a,
            "POST",
            "/mcp",
            &[("Authorization", &format!("Basic {token}"))]
        ),
        401
    );
    assert_eq!(http_status(a, "GET", "/mcp", &[]), 401);
    assert_eq!(http_status(a, "DELETE", "/mcp", &[]), 401);
    assert_eq!(
        http_status(a, "POST", "/elsewhere", &[]),
        401,
        "every path needs the token"
    );
    let good = format!("bearer {token}");
    assert_ne!(
        http_status(a, "POST", "/mcp", &[("Authorization", &good)]),
        401,
        "the scheme is case-insensitive"
    );
    assert_eq!(
        http_status(a, "POST", "/elsewhere", &[("Authorization", &good)]),
        404
    );
    if let Some(py) = python() {
        // The real client, with a wrong token, cannot even connect (the SDK reports the 401
        // as an error response).
        let wrong = Transport::Http {
            url: server.url.clone(),
            token: "0".repeat(64),
        };
        let out = env
            .client_command(&py, &wrong, &["sequential"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("MCPError"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    server.stop();
    assert!(
        mcp_sessions(&env.store()).is_empty(),
        "nothing was written without the token"
    );
}

#[test]
fn binding_a_non_loopback_address_needs_allow_remote() {
    let env = Env::new();
    let out = env.glassbox(&["mcp", "--http", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
    assert_eq!(err.lines().count(), 1, "one-line error: {err}");
    let server = HttpServer::start_at(&env, "0.0.0.0:0", &["--allow-remote"]);
    assert!(
        server.stderr.lock().unwrap().contains("warning"),
        "{}",
        server.stderr.lock().unwrap()
    );
    assert_eq!(http_status(server.addr, "POST", "/mcp", &[]), 401);
    server.stop();
    let bad = env.glassbox(&["mcp", "--http", "not-an-address"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not PORT, HOST:PORT"));
}

#[test]
fn bad_arguments_get_error_results_and_the_server_keeps_serving() {
    let Some(py) = python() else { return };
    let env = Env::new();
    for mode in ["auto", "legacy"] {
        let summary = env.client(&py, &Transport::Stdio, &["--mode", mode, "bad"]);
        assert_eq!(summary["errors"], json!(24));
    }
    let server = HttpServer::start(&env, &[]);
    let http = Transport::Http {
        url: server.url.clone(),
        token: env.token(),
    };
    let summary = env.client(&py, &http, &["bad"]);
    assert_eq!(summary["good"], json!(24));
    server.stop();
    // Every good call after a bad one was stored; no bad one was.
    let store = env.store();
    for s in mcp_sessions(&store) {
        let nodes = store.session_nodes(s.id).unwrap();
        assert_eq!(nodes.len(), 24, "session {}", s.id);
        assert!(nodes.iter().all(|n| n.text == "a good thought"));
    }
}

#[test]
fn critique_through_sampling_is_stored_as_an_annotation() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let server = HttpServer::start(&env, &[]);
    let http = Transport::Http {
        url: server.url.clone(),
        token: env.token(),
    };
    let runs = [
        (&Transport::Stdio, "auto", "2026-07-28"),
        (&Transport::Stdio, "legacy", "2025-11-25"),
        (&http, "auto", "2026-07-28"),
        (&http, "legacy", "2025-11-25"),
    ];
    for (transport, mode, protocol) in runs {
        let summary = env.client(&py, transport, &["--mode", mode, "critique"]);
        assert_eq!(summary["protocol"], json!(protocol));
        let store = env.store();
        let thought: NodeId = summary["thoughtId"].as_str().unwrap().parse().unwrap();
        let critique: NodeId = summary["critique"]["annotationId"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let node = store.node(critique).unwrap().unwrap();
        assert_eq!(node.kind, NodeType::HumanAnnotation);
        assert_eq!(node.text, CRITIQUE_TEXT);
        assert_eq!(node.meta["source"], json!("sampling"));
        assert_eq!(node.model.as_deref(), Some("stand-in-critic"));
        let edges = store.edges_from(critique, None).unwrap();
        assert_eq!(edges.len(), 1);
        assert_eq!((edges[0].kind, edges[0].dst), (EdgeType::Refines, thought));
        let t = store.node(thought).unwrap().unwrap();
        assert_eq!(t.meta["thoughtType"], json!("conclusion"));
        assert_eq!(node.session, t.session);
    }
    // The prompt file and `[mcp]` in the config dir shape the request.
    std::fs::create_dir_all(env.config.join("prompts/mcp")).unwrap();
    std::fs::write(
        env.config.join("prompts/mcp/critique.md"),
        "Critique like a terse reviewer.\n",
    )
    .unwrap();
    std::fs::write(
        env.config.join("config.toml"),
        "[mcp]\ncritique_max_tokens = 123\n",
    )
    .unwrap();
    let summary = env.client(
        &py,
        &Transport::Stdio,
        &[
            "--expect-system",
            "Critique like a terse reviewer.",
            "--expect-max-tokens",
            "123",
            "critique",
        ],
    );
    assert_eq!(summary["critique"]["text"], json!(CRITIQUE_TEXT));
    std::fs::remove_file(env.config.join("config.toml")).unwrap();

    // A client without sampling is told so, and nothing but the thoughts is stored.
    let summary = env.client(&py, &Transport::Stdio, &["--sampling", "no", "critique"]);
    assert_eq!(summary["critique"]["status"], json!("unavailable"));
    server.stop();
    let store = env.store();
    let sid: SessionId = summary["sessionId"].as_str().unwrap().parse().unwrap();
    let kinds: Vec<NodeType> = store
        .session_nodes(sid)
        .unwrap()
        .iter()
        .map(|n| n.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![NodeType::LedgerThought, NodeType::LedgerThought]
    );
}

#[test]
fn ledger_tools_start_checkpoint_search_export_and_import() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let summary = env.client(&py, &Transport::Stdio, &["ledger"]);
    let store = env.store();
    let sid: SessionId = summary["sessionId"].as_str().unwrap().parse().unwrap();
    let session = store.session(sid).unwrap().unwrap();
    assert_eq!(session.title, "Ledger tools walk-through");
    let ids: Vec<NodeId> = summary["thoughtIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().parse().unwrap())
        .collect();
    let into = |id: NodeId| -> Vec<(EdgeType, Node)> {
        store
            .edges_to(id, None)
            .unwrap()
            .into_iter()
            .map(|e| (e.kind, store.node(e.src).unwrap().unwrap()))
            .collect()
    };
    let on_second = into(ids[1]);
    assert_eq!(on_second.len(), 1);
    let (kind, note) = &on_second[0];
    assert_eq!(*kind, EdgeType::Contradicts);
    assert_eq!(note.kind, NodeType::HumanAnnotation);
    assert_eq!(note.meta["verdict"], json!("disagree"));
    assert_eq!(note.text, "Profile it: the parser is not the bottleneck.");
    let on_first = into(ids[0]);
    assert_eq!(on_first[0].0, EdgeType::Supports);
    assert_eq!(on_first[0].1.meta["verdict"], json!("verified"));
    // The export → import(replace) round trip left the session whole.
    assert_eq!(store.session_nodes(sid).unwrap().len(), 5);
    assert_eq!(store.session_edges(sid).unwrap().len(), 2);
    assert_eq!(mcp_sessions(&store).len(), 1);
}

#[test]
fn two_servers_and_a_follower_see_every_thought_once() {
    let Some(py) = python() else { return };
    const COUNT: usize = 30;
    let env = Env::new();
    std::fs::create_dir_all(&env.data).unwrap();
    let store = env.store();
    let start = store.last_seq().unwrap();
    // The follower: what a TUI does to show other processes' writes.
    // Until the writers are done the follower has no end in sight; then it reads up to the
    // last committed sequence.
    let target = Arc::new(AtomicU64::new(u64::MAX));
    let until = target.clone();
    let follower_store = store.clone();
    let follower = std::thread::spawn(move || {
        let mut since = start;
        let mut seen: HashMap<uuid::Uuid, usize> = HashMap::new();
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let batch = follower_store.follow(since, 500).unwrap();
            if batch.is_empty() {
                if since >= until.load(Ordering::SeqCst) || Instant::now() > deadline {
                    return seen;
                }
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            for (seq, change) in batch {
                assert!(seq > since, "journal sequences only grow");
                since = seq;
                if change.kind == ChangeKind::NodePut {
                    *seen.entry(change.id.unwrap()).or_default() += 1;
                }
            }
        }
    });
    // One server on stdio, one on HTTP, written to at the same time.
    let server = HttpServer::start(&env, &[]);
    let http = Transport::Http {
        url: server.url.clone(),
        token: env.token(),
    };
    let count = COUNT.to_string();
    let mut a = env.client_command(
        &py,
        &Transport::Stdio,
        &["burst", "--count", &count, "--tag", "stdio"],
    );
    let mut b = env.client_command(&py, &http, &["burst", "--count", &count, "--tag", "http"]);
    let (a, b) = (
        a.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        b.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    summary(&a, &["burst stdio"]);
    summary(&b, &["burst http"]);
    server.stop();
    // Everything acknowledged is committed and journalled by now.
    target.store(store.last_seq().unwrap(), Ordering::SeqCst);
    let seen = follower.join().unwrap();

    let sessions = mcp_sessions(&store);
    assert_eq!(sessions.len(), 2);
    let mut texts: HashMap<String, usize> = HashMap::new();
    let mut ids = HashSet::new();
    for s in &sessions {
        let thoughts = store.session_nodes(s.id).unwrap();
        assert_eq!(thoughts.len(), COUNT, "session {}", s.title);
        let tag = if thoughts[0].text.starts_with("stdio") {
            "stdio"
        } else {
            "http"
        };
        for (i, n) in thoughts.iter().enumerate() {
            assert_eq!(
                n.text,
                format!("{tag} thought {}", i + 1),
                "in order, in its own session"
            );
            *texts.entry(n.text.clone()).or_default() += 1;
            ids.insert(n.id.0);
        }
    }
    assert_eq!(texts.len(), 2 * COUNT);
    assert!(
        texts.values().all(|&c| c == 1),
        "every thought present once"
    );
    for id in &ids {
        assert_eq!(seen.get(id), Some(&1), "the follower saw node {id} once");
    }
    let ledger_seen = seen.keys().filter(|id| ids.contains(id)).count();
    assert_eq!(ledger_seen, 2 * COUNT);
}

#[test]
fn a_killed_server_loses_no_acknowledged_thought() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let server = HttpServer::start(&env, &[]);
    let http = Transport::Http {
        url: server.url.clone(),
        token: env.token(),
    };
    let mut client = env
        .client_command(
            &py,
            &http,
            &["burst", "--count", "100000", "--tag", "durable"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    while acked.len() < 40 {
        let line = lines.next().expect("the client stopped early").unwrap();
        if let Some(text) = line.strip_prefix("ack ") {
            acked.push(text.to_string());
        }
    }
    drop(server); // SIGKILL, mid-burst
    // Whatever else the client saw acknowledged before the connection broke counts too.
    acked.extend(
        lines
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("ack ").map(str::to_string)),
    );
    assert!(
        !client.wait().unwrap().success(),
        "the client noticed the server die"
    );
    let store = env.store();
    let sessions = mcp_sessions(&store);
    assert_eq!(sessions.len(), 1);
    let stored: HashSet<String> = store
        .session_nodes(sessions[0].id)
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    for text in &acked {
        assert!(
            stored.contains(text),
            "acknowledged thought '{text}' was lost"
        );
    }
}

#[test]
fn pipelined_stdio_calls_are_recorded_in_order() {
    // Raw JSON-RPC, the way a client that does not wait for answers writes it.
    let env = Env::new();
    let mut cmd = Command::new(BIN);
    cmd.arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env.apply(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let mut input = String::new();
    input.push_str(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipeline","version":"1"}}}"#);
    input.push('\n');
    input.push_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    input.push('\n');
    const N: u64 = 40;
    for i in 1..=N {
        let call = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "sequentialthinking",
            "arguments": {"thought": format!("pipelined {i}"), "nextThoughtNeeded": i < N, "thoughtNumber": i, "totalThoughts": N}}});
        input.push_str(&format!("{call}\n"));
    }
    input.push_str("not json at all\n");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut answers: HashMap<u64, Value> = HashMap::new();
    while answers.len() < N as usize + 1 {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer for every request");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC ({e}): {line}"));
        answers.insert(v["id"].as_u64().unwrap(), v);
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 1..=N {
        let result = &answers[&(i + 1)]["result"]["structuredContent"];
        assert_eq!(
            result["thoughtHistoryLength"],
            json!(i),
            "answer to call {i}: {result}"
        );
    }
    let store = env.store();
    let session = mcp_sessions(&store).pop().unwrap();
    let texts: Vec<String> = store
        .session_nodes(session.id)
        .unwrap()
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(
        texts,
        (1..=N)
            .map(|i| format!("pipelined {i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(session.meta["client"], json!("pipeline"));
}

/// Main 1–4, branch "cold-cache" (5, 6) from 2 with a nested branch from 5, revision 7 of 3,
/// a critique and a checkpoint.
fn snapshot_ledger() -> (Session, Vec<Node>, Vec<Edge>) {
    let at = |m: u32| chrono::Utc.with_ymd_and_hms(2026, 1, 2, 3, m, 0).unwrap();
    let mut s = Session::new("Why is the index slow?", SessionSource::Mcp);
    s.id = SessionId(uuid::Uuid::from_u128(0x5e55));
    let mut next_id = 0x100u128;
    let mut node = |kind: NodeType, text: &str, meta: Value| {
        next_id += 1;
        let mut n = Node::new(s.id, kind, text);
        n.id = NodeId(uuid::Uuid::from_u128(next_id));
        n.created_at = at(next_id as u32 - 0x100);
        if let Value::Object(m) = meta {
            n.meta = m;
        }
        n
    };
    let t = |n: u32, total: u32, extra: Value| {
        let mut m = json!({"thoughtNumber": n, "totalThoughts": total, "nextThoughtNeeded": true});
        if let (Value::Object(base), Value::Object(more)) = (&mut m, extra) {
            base.extend(more);
        }
        m
    };
    let n1 = node(
        NodeType::LedgerThought,
        "Lookups take 40 ms at p99; the index should answer in under 1 ms.",
        t(1, 5, json!({"thoughtType": "analysis"})),
    );
    let n2 = node(
        NodeType::LedgerThought,
        "Hypothesis: the hash map is rebuilt on every request.",
        t(2, 5, json!({"thoughtType": "hypothesis"})),
    );
    let n3 = node(
        NodeType::LedgerThought,
        "The profile shows 90% of the time in rehashing.",
        t(3, 5, json!({})),
    );
    let b5 = node(
        NodeType::LedgerThought,
        "Alternatively the cache is cold after each deploy.",
        t(
            4,
            6,
            json!({"branchId": "cold-cache", "branchFromThought": 2}),
        ),
    );
    let b6 = node(
        NodeType::LedgerThought,
        "Deploys happen twice a day; that cannot explain every request.",
        t(
            5,
            6,
            json!({"branchId": "cold-cache", "branchFromThought": 2, "thoughtType": "evaluation"}),
        ),
    );
    let c7 = node(
        NodeType::LedgerThought,
        "Unless the cache is per worker.",
        t(
            6,
            6,
            json!({"branchId": "per-worker", "branchFromThought": 4}),
        ),
    );
    let r7 = node(
        NodeType::LedgerThought,
        "Correction: rehashing is 60%, allocation the other 30%.",
        t(7, 8, json!({"isRevision": true, "revisesThought": 3})),
    );
    let n8 = node(
        NodeType::LedgerThought,
        "Keep the map across requests and reserve capacity up front.",
        {
            let mut m = t(8, 8, json!({"thoughtType": "conclusion"}));
            m["nextThoughtNeeded"] = json!(false);
            m
        },
    );
    let crit = node(
        NodeType::HumanAnnotation,
        "Check whether the map is shared between threads before keeping it.",
        json!({"source": "sampling"}),
    );
    let check = node(
        NodeType::HumanAnnotation,
        "checkpoint: verified",
        json!({"verdict": "verified", "source": "checkpoint"}),
    );
    let edges = vec![
        Edge::new(b5.id, EdgeType::BranchesFrom, n2.id),
        Edge::new(b6.id, EdgeType::BranchesFrom, n2.id),
        Edge::new(c7.id, EdgeType::BranchesFrom, b5.id),
        Edge::new(r7.id, EdgeType::Revises, n3.id),
        Edge::new(crit.id, EdgeType::Refines, n8.id),
        Edge::new(check.id, EdgeType::Supports, n3.id),
    ];
    (s, vec![n1, n2, n3, b5, b6, c7, r7, n8, crit, check], edges)
}

fn draw_ledger(model: &LedgerModel, w: u16, h: u16) -> Terminal<TestBackend> {
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| glassbox::views::ledger::render(f, f.area(), model, &theme, true))
        .unwrap();
    term
}

#[test]
fn ledger_view_with_branches_and_revisions() {
    let (s, nodes, edges) = snapshot_ledger();
    let mut model = LedgerModel::from_parts(Some(&s), &nodes, &edges);
    // Select the revision: the detail pane shows it in full.
    assert!(model.select_node(nodes[6].id));
    insta::assert_snapshot!(
        "ledger_80x24_revision_selected",
        draw_ledger(&model, 80, 24).backend()
    );
    // Small terminals drop the detail pane; the nested branch's thought is selectable.
    assert!(model.select_node(nodes[5].id));
    insta::assert_snapshot!(
        "ledger_60x10_nested_branch",
        draw_ledger(&model, 60, 10).backend()
    );
    let empty = LedgerModel::default();
    let text = format!("{}", draw_ledger(&empty, 60, 5).backend());
    assert!(text.contains("no ledger thoughts yet"), "{text}");
}

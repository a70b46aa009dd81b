//! Provider faults as a user meets them: the real `glassbox ask` against the scripted server
//! speaking Anthropic, OpenAI-compatible and Ollama, for 429 with and without Retry-After,
//! 500/503, a stream cut mid-event, a stall, a garbage body and a refused connection. Each
//! case checks the exit code, one clear error line (no panic, no key), and that every node
//! committed before the fault is still there, as is what the failed call had received.
//! (tests/providers.rs covers the same faults one level down, on the provider streams.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;

use glassbox::store::{NodeStatus, NodeType};
use support::bin::glassbox;
use support::{ChunkBy, End, Script, ScriptedServer, Step};

const KEY: &str = "sk-ant-faults-0123456789abcdef";
const KEY2: &str = "sk-ant-faults-second-fedcba9876";

/// One provider as the scripted server speaks it.
#[derive(Clone, Copy)]
struct Prov {
    name: &'static str,
    fixture: &'static str,
    /// Appended to the server's URL to make the base URL.
    suffix: &'static str,
    /// The environment variable of its key, if it takes one.
    key_var: Option<&'static str>,
    /// Where a request carries the key.
    key_header: &'static str,
    /// A string inside the line of the first answer delta: a cut there is mid-event, after
    /// some thinking arrived.
    cut_marker: &'static str,
}

const PROVIDERS: [Prov; 3] = [
    Prov {
        name: "anthropic",
        fixture: "anthropic_thinking.sse",
        suffix: "",
        key_var: Some("ANTHROPIC_API_KEY"),
        key_header: "x-api-key",
        cut_marker: "\"text_delta\"",
    },
    Prov {
        name: "openai",
        fixture: "openai_reasoning_content.sse",
        suffix: "/v1",
        key_var: Some("OPENAI_API_KEY"),
        key_header: "authorization",
        cut_marker: "\"The answer\"",
    },
    Prov {
        name: "ollama",
        fixture: "ollama_thinking.ndjson",
        suffix: "",
        key_var: None,
        key_header: "authorization",
        cut_marker: "Kanji are",
    },
];

impl Prov {
    fn body(&self) -> Vec<u8> {
        support::fixture(self.fixture)
    }

    /// The whole answer, as the server streams it.
    fn ok(&self) -> Step {
        let body = self.body();
        let step = if self.fixture.ends_with(".ndjson") {
            Step::ndjson(&body)
        } else {
            Step::sse(&body)
        };
        step.rechunk(ChunkBy::Lines)
    }
}

/// An error response as the providers send them.
fn refusal(status: u16, message: &str) -> Step {
    Step::json(
        status,
        format!(r#"{{"type":"error","error":{{"type":"api_error","message":"{message}"}}}}"#),
    )
}

/// A data dir with one answered question in it: what every fault must leave alone.
struct Bench {
    _dir: tempfile::TempDir,
    data: PathBuf,
}

/// One `glassbox ask` as run: its output and the log lines it added.
struct Asked {
    out: Output,
    log: String,
}

impl Asked {
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// The single `glassbox: error:` line; fails on none, several, a panic or a key.
    fn error_line(&self, case: &str) -> String {
        let err = self.stderr();
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("glassbox: error:"))
            .collect();
        assert_eq!(lines.len(), 1, "{case}: one error line expected:\n{err}");
        assert!(
            !err.contains("panicked") && !err.contains("stack backtrace"),
            "{case}: {err}"
        );
        for k in [KEY, KEY2] {
            assert!(
                !err.contains(k) && !self.log.contains(k),
                "{case}: key shown"
            );
        }
        eprintln!("{case} → exit {}: {}", self.code().unwrap_or(-1), lines[0]);
        lines[0].to_string()
    }

    /// Exit 1 with one clear error line that holds `needle`; returns the line.
    fn failed_with(&self, case: &str, needle: &str) -> String {
        assert_eq!(self.code(), Some(1), "{case}");
        let line = self.error_line(case);
        assert!(line.contains(needle), "{case}: {line}");
        line
    }

    /// `retrying model call` delays from the log, in milliseconds.
    fn retry_delays(&self) -> Vec<u64> {
        self.log
            .lines()
            .filter(|l| l.contains("retrying model call"))
            .map(|l| {
                let at = l.find("delay_ms=").expect("retry line names its delay") + 9;
                l[at..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    }
}

impl Bench {
    /// A data dir where `p` already answered one question through `server`.
    async fn new(p: Prov) -> Self {
        let server = ScriptedServer::start(Script::forever(p.ok())).await;
        let dir = tempfile::tempdir().unwrap();
        let bench = Self {
            data: dir.path().join("data"),
            _dir: dir,
        };
        let first = bench.ask(p, &server.url(), &[]).await;
        assert_eq!(first.code(), Some(0), "{}: {}", p.name, first.stderr());
        bench
    }

    /// Runs `glassbox ask` for `p` at `url` with fast back-off and `env` on top.
    async fn ask(&self, p: Prov, url: &str, env: &[(&str, &str)]) -> Asked {
        let log_path = self.data.join("glassbox.log");
        let before = std::fs::metadata(&log_path).map(|m| m.len()).unwrap_or(0);
        let mut cmd = glassbox(&self.data);
        cmd.args([
            "ask",
            "--provider",
            p.name,
            "--base-url",
            &format!("{url}{}", p.suffix),
            "What is 2 + 2?",
        ])
        .env("GLASSBOX_NETWORK__BACKOFF_BASE_MS", "20")
        .env("GLASSBOX_NETWORK__BACKOFF_MAX_MS", "2000")
        .env("RUST_BACKTRACE", "1");
        if let Some(var) = p.key_var {
            cmd.env(var, KEY);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let log = std::fs::read(&log_path).unwrap_or_default();
        let log = String::from_utf8_lossy(&log[before as usize..]).into_owned();
        Asked { out, log }
    }

    /// Every node's text, by id.
    fn nodes(&self) -> BTreeMap<String, (NodeType, NodeStatus, String)> {
        let store = support::store::open(&self.data.join("glassbox.redb")).unwrap();
        let mut out = BTreeMap::new();
        for s in store.sessions().unwrap() {
            for n in store.session_nodes(s.id).unwrap() {
                out.insert(n.id.to_string(), (n.kind, n.status, n.text));
            }
        }
        out
    }

    /// Fails if a node of `before` is gone or changed; returns the nodes added since.
    fn kept(
        &self,
        case: &str,
        before: &BTreeMap<String, (NodeType, NodeStatus, String)>,
    ) -> Vec<(NodeType, NodeStatus, String)> {
        let now = self.nodes();
        for (id, node) in before {
            assert_eq!(now.get(id), Some(node), "{case}: node {id} lost or changed");
        }
        now.into_iter()
            .filter(|(id, _)| !before.contains_key(id))
            .map(|(_, n)| n)
            .collect()
    }
}

/// The new nodes of a failed call: its question kept, and nothing left streaming.
fn failed_call_kept(case: &str, added: &[(NodeType, NodeStatus, String)]) {
    assert!(
        added
            .iter()
            .any(|(k, _, t)| *k == NodeType::Query && t == "What is 2 + 2?"),
        "{case}: the question was not kept: {added:?}"
    );
    assert!(
        added.iter().all(|(_, s, _)| *s != NodeStatus::Streaming),
        "{case}: a node was left streaming: {added:?}"
    );
}

async fn each_provider<F, Fut>(f: F)
where
    F: Fn(Prov) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for p in PROVIDERS {
        f(p).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_with_retry_after_waits_as_told_then_answers() {
    each_provider(|p| async move {
        let case = format!("429 with Retry-After × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let server = ScriptedServer::start(Script::new(vec![
            refusal(429, "slow down").header("retry-after", "1"),
            p.ok(),
        ]))
        .await;
        let run = bench.ask(p, &server.url(), &[]).await;
        assert_eq!(run.code(), Some(0), "{case}: {}", run.stderr());
        assert_eq!(server.requests().len(), 2, "{case}");
        assert_eq!(run.retry_delays(), [1000], "{case}: {}", run.log);
        eprintln!("{case} → exit 0 after one retry 1000 ms later");
        let added = bench.kept(&case, &before);
        assert!(
            added.iter().all(|(_, s, _)| *s == NodeStatus::Complete)
                && added
                    .iter()
                    .any(|(k, _, t)| *k == NodeType::Response && run.stdout().contains(t.as_str())),
            "{case}: {added:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_without_retry_after_rotates_keys_or_backs_off() {
    each_provider(|p| async move {
        let case = format!("429 without Retry-After × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let server =
            ScriptedServer::start(Script::new(vec![refusal(429, "slow down"), p.ok()])).await;
        // Two keys where the provider takes keys: the second is used at once.
        let env: Vec<(&str, &str)> = match p.key_var {
            Some("ANTHROPIC_API_KEY") => {
                vec![("ANTHROPIC_API_KEY_1", KEY), ("ANTHROPIC_API_KEY_2", KEY2)]
            }
            Some(_) => vec![("OPENAI_API_KEY_1", KEY), ("OPENAI_API_KEY_2", KEY2)],
            None => Vec::new(),
        };
        let run = bench.ask(p, &server.url(), &env).await;
        assert_eq!(run.code(), Some(0), "{case}: {}", run.stderr());
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{case}");
        let delays = run.retry_delays();
        if p.key_var.is_some() {
            let keys: Vec<_> = requests.iter().map(|r| r.header(p.key_header)).collect();
            assert_ne!(keys[0], keys[1], "{case}: the same key was used again");
            assert_eq!(delays, [0], "{case}: the next key is tried at once");
            eprintln!("{case} → exit 0, the second key used at once");
        } else {
            // Jittered exponential back-off from 20 ms: between 10 and 20 ms the first time.
            assert_eq!(delays.len(), 1, "{case}: {}", run.log);
            assert!((10..=20).contains(&delays[0]), "{case}: {delays:?}");
            eprintln!("{case} → exit 0 after a back-off of {} ms", delays[0]);
        }
        bench.kept(&case, &before);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_every_time_gives_up_with_one_line() {
    each_provider(|p| async move {
        let case = format!("429 forever × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let server = ScriptedServer::start(Script::forever(refusal(429, "slow down"))).await;
        let run = bench
            .ask(p, &server.url(), &[("GLASSBOX_NETWORK__MAX_RETRIES", "2")])
            .await;
        run.failed_with(&case, "rate limited (HTTP 429) after 3 attempt(s)");
        assert_eq!(server.requests().len(), 3, "{case}");
        failed_call_kept(&case, &bench.kept(&case, &before));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_retried_with_bounded_jittered_backoff() {
    each_provider(|p| async move {
        let case = format!("500 then 503 × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let server = ScriptedServer::start(Script::new(vec![
            refusal(500, "internal"),
            refusal(503, "unavailable"),
            p.ok(),
        ]))
        .await;
        let run = bench.ask(p, &server.url(), &[]).await;
        assert_eq!(run.code(), Some(0), "{case}: {}", run.stderr());
        assert_eq!(server.requests().len(), 3, "{case}");
        // Doubling from 20 ms, each jittered down by up to half.
        let delays = run.retry_delays();
        assert_eq!(delays.len(), 2, "{case}: {}", run.log);
        assert!((10..=20).contains(&delays[0]), "{case}: {delays:?}");
        assert!((20..=40).contains(&delays[1]), "{case}: {delays:?}");
        eprintln!("{case} → exit 0 after back-offs of {delays:?} ms");
        bench.kept(&case, &before);

        let case = format!("503 forever × {}", p.name);
        let before = bench.nodes();
        let server = ScriptedServer::start(Script::forever(refusal(503, "unavailable"))).await;
        let run = bench
            .ask(p, &server.url(), &[("GLASSBOX_NETWORK__MAX_RETRIES", "3")])
            .await;
        run.failed_with(&case, "HTTP 503");
        assert_eq!(server.requests().len(), 4, "{case}: retries are bounded");
        assert_eq!(run.retry_delays().len(), 3, "{case}");
        failed_call_kept(&case, &bench.kept(&case, &before));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_event_keeps_the_partial_thinking() {
    each_provider(|p| async move {
        let case = format!("cut mid-event × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let body = p.body();
        let marker = p.cut_marker.as_bytes();
        let at = body
            .windows(marker.len())
            .position(|w| w == marker)
            .expect("cut marker in the fixture");
        let server =
            ScriptedServer::start(Script::forever(p.ok().truncate(at).end(End::Cut))).await;
        let run = bench.ask(p, &server.url(), &[]).await;
        let line = run.failed_with(&case, "stream ended before the response was complete");
        assert!(line.contains("what arrived was kept"), "{case}: {line}");
        let added = bench.kept(&case, &before);
        failed_call_kept(&case, &added);
        let thinking = added
            .iter()
            .find(|(k, _, _)| *k == NodeType::Thinking)
            .unwrap_or_else(|| panic!("{case}: no thinking node: {added:?}"));
        assert!(
            !thinking.2.is_empty(),
            "{case}: the partial thinking is lost"
        );
        assert!(
            matches!(&thinking.1, NodeStatus::Failed { error } if error.contains("stream ended")),
            "{case}: {:?}",
            thinking.1
        );
        // A cut after content is not retried: the user saw the partial answer.
        assert_eq!(server.requests().len(), 1, "{case}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_fails_within_the_stall_timeout_and_a_second() {
    each_provider(|p| async move {
        let case = format!("stall × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let body = p.body();
        let server = ScriptedServer::start(Script::forever(
            p.ok().truncate(body.len() / 2).end(End::Stall),
        ))
        .await;
        let run = bench
            .ask(
                p,
                &server.url(),
                &[("GLASSBOX_NETWORK__STALL_TIMEOUT_SECS", "1")],
            )
            .await;
        let ended = std::time::Instant::now();
        run.failed_with(&case, "stream stalled: no bytes for 1 s");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{case}");
        // The bound the issue names: the error within the stall timeout plus one second of
        // the request (the process's exit is measured after it, so this errs long).
        let took = ended - requests[0].at;
        assert!(took < std::time::Duration::from_secs(2), "{case}: {took:?}");
        failed_call_kept(&case, &bench.kept(&case, &before));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_body_is_a_clear_error() {
    each_provider(|p| async move {
        let case = format!("garbage body × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        let content_type = if p.fixture.ends_with(".ndjson") {
            "application/x-ndjson"
        } else {
            "text/event-stream"
        };
        let step = Step::status(200)
            .header("content-type", content_type)
            .split(support::fixture("garbage.bin"), ChunkBy::Bytes(64));
        let server = ScriptedServer::start(Script::forever(step)).await;
        let run = bench.ask(p, &server.url(), &[]).await;
        let line = run.failed_with(&case, "malformed stream data");
        assert!(line.contains("first: binary data"), "{case}: {line}");
        assert!(!line.contains('\u{fffd}'), "{case}: no mojibake: {line}");
        failed_call_kept(&case, &bench.kept(&case, &before));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_a_clear_error() {
    each_provider(|p| async move {
        let case = format!("connection refused × {}", p.name);
        let bench = Bench::new(p).await;
        let before = bench.nodes();
        // A port that was just free: nothing listens on it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let run = bench
            .ask(p, &url, &[("GLASSBOX_NETWORK__MAX_RETRIES", "1")])
            .await;
        run.failed_with(&case, "could not connect to");
        failed_call_kept(&case, &bench.kept(&case, &before));
    })
    .await;
}

/// The TUI through a fault: a stream cut mid-answer fails the run with the error in the
/// status line and the node marked failed, and the next question is answered as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_shows_the_fault_on_the_node_and_stays_usable() {
    use crossterm::event::KeyCode;
    use glassbox::app::state::RunPhase;
    use support::tui::{draw, press, pump_until, type_text};

    let thinking = ["Two and two. ", "That makes four, surely. "];
    let body = support::wire::anthropic_stream(&thinking, "It is 4.");
    let marker = b"text_delta";
    let at = body
        .as_bytes()
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    let server = ScriptedServer::start(Script::new(vec![
        Step::sse(&body).truncate(at).end(End::Cut),
        Step::sse(&body),
    ]))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let engine = support::tui::anthropic_engine(&store, &server.url(), "claude-test");
    let cfg = glassbox::config::Config::builtin().unwrap();
    let mut app = support::tui::app_with(store.clone(), cfg, engine, "claude-test", "dark");
    app.start();
    type_text(&mut app, "What is 2 + 2?");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        !a.running() && matches!(a.state.phase, RunPhase::Failed(_))
    })
    .await;
    pump_until(&mut app, |a| a.state.loaded.session.is_some()).await;
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(
        screen.contains("failed: anthropic: stream ended before the response was complete"),
        "{screen}"
    );
    assert!(
        screen.contains("Two and two."),
        "the partial thinking is shown"
    );
    assert!(screen.contains("· failed"), "the node is marked: {screen}");
    let session = app.state.loaded.id().unwrap();
    let nodes = store.session_nodes(session).unwrap();
    let failed = nodes.iter().find(|n| n.kind == NodeType::Thinking).unwrap();
    assert!(matches!(failed.status, NodeStatus::Failed { .. }));
    assert!(failed.text.starts_with("Two and two."));
    eprintln!("cut mid-event × TUI → run failed, node marked failed, next question answered");

    type_text(&mut app, "And now?");
    press(&mut app, KeyCode::Enter);
    pump_until(&mut app, |a| {
        !a.running() && a.state.phase == RunPhase::Done
    })
    .await;
    // The session is read again once the run ended: its second answer is there, complete.
    pump_until(&mut app, |a| {
        a.state.loaded.nodes().any(|n| {
            n.kind == NodeType::Response && n.status == NodeStatus::Complete && n.text == "It is 4."
        })
    })
    .await;
    let screen = draw(&mut app, 160, 45).backend().to_string();
    assert!(screen.contains("It is 4."), "{screen}");
}

/// kill -9 while a stream is under way: the nodes it left streaming are interrupted the next
/// time the store opens (their committed text kept and searchable), not "streaming" for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_ask_leaves_its_nodes_interrupted_not_streaming() {
    let p = PROVIDERS[0];
    let bench = Bench::new(p).await;
    let before = bench.nodes();
    let body = p.body();
    let server = ScriptedServer::start(Script::forever(
        p.ok().truncate(body.len() / 2).end(End::Stall),
    ))
    .await;
    let mut cmd = glassbox(&bench.data);
    cmd.args([
        "ask",
        "--provider",
        p.name,
        "--base-url",
        &server.url(),
        "What is 2 + 2?",
    ])
    .env(p.key_var.unwrap(), KEY)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    // Wait until the thinking that arrived is committed (a flush every 150 ms), then kill.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let streaming = loop {
        let added: Vec<_> = bench
            .nodes()
            .into_iter()
            .filter(|(id, n)| !before.contains_key(id) && n.1 == NodeStatus::Streaming)
            .collect();
        if added.iter().any(|(_, n)| !n.2.is_empty()) {
            break added;
        }
        assert!(std::time::Instant::now() < deadline, "nothing streamed");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    child.kill().unwrap();
    child.wait().unwrap();

    let now = bench.nodes();
    for (id, (kind, _, text)) in &streaming {
        let (k, status, t) = &now[id];
        assert_eq!((k, status), (kind, &NodeStatus::Interrupted), "{id}");
        assert!(t.starts_with(text.as_str()), "the committed text is kept");
    }
    assert!(
        now.values().all(|n| n.1 != NodeStatus::Streaming),
        "nothing is left streaming"
    );
}

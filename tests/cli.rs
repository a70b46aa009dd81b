//! The real binary, as a user runs it: --help, doctor, sessions, config, completions, and
//! `ask` against the scripted server speaking each provider's protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::{Output, Stdio};

use support::bin::{glassbox, ok as run};
use support::{ChunkBy, Script, ScriptedServer, Step};

const KEY: &str = "sk-ant-test-0123456789abcdef";

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn help_lists_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let help = stdout(&run(glassbox(dir.path()).arg("--help")));
    for cmd in [
        "ask",
        "sessions",
        "config",
        "doctor",
        "completions",
        "--data-dir",
        "--profile",
        "--provider",
    ] {
        assert!(help.contains(cmd), "--help lacks {cmd}:\n{help}");
    }
    let version = stdout(&run(glassbox(dir.path()).arg("--version")));
    assert!(version.starts_with("glassbox "));
}

#[test]
fn a_fresh_data_dir_doctor_sessions_config_completions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let list = stdout(&run(glassbox(&data).args(["sessions", "list", "--json"])));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&list).unwrap(),
        serde_json::json!([])
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&data).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // On a PostgreSQL run the store is a database, and the data dir holds no store file.
    let files: &[&str] = if support::pg::suite_on_postgres() {
        assert!(!data.join("glassbox.redb").exists());
        &["glassbox.log"]
    } else {
        &["glassbox.redb", "glassbox.log"]
    };
    for file in files {
        assert_eq!(
            std::fs::metadata(data.join(file))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600,
            "{file}"
        );
    }

    let doctor: serde_json::Value = serde_json::from_slice(
        &run(glassbox(&data)
            .args(["doctor", "--json"])
            .env("ANTHROPIC_API_KEY", KEY))
        .stdout,
    )
    .unwrap();
    assert_eq!(
        doctor["store"]["schema_version"],
        glassbox::store::SCHEMA_VERSION
    );
    assert_eq!(doctor["store"]["counts"]["sessions"], 0);
    assert_eq!(doctor["provider"], "anthropic");
    let anthropic = doctor["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "anthropic")
        .unwrap();
    assert_eq!(anthropic["key_configured"], true);
    assert!(
        !doctor.to_string().contains(KEY),
        "doctor must never print a key"
    );
    // SmolLM2, the three MiniLM files and the optional Gemma 3.
    assert_eq!(doctor["models"].as_array().unwrap().len(), 5);
    // The records are recompressed first (none here: an empty store has none to train a
    // dictionary on); then a redb file gives its free pages back, and PostgreSQL does that
    // itself.
    let on_postgres = support::pg::suite_on_postgres();
    if !on_postgres {
        let compacted: serde_json::Value = serde_json::from_slice(
            &run(glassbox(&data).args(["doctor", "--compact", "--json"])).stdout,
        )
        .unwrap();
        let (before, after) = (
            compacted["compacted"]["before_bytes"].as_u64().unwrap(),
            compacted["compacted"]["after_bytes"].as_u64().unwrap(),
        );
        assert!(after < before, "{compacted}");
        assert_eq!(
            compacted["compacted"]["recompressed"]["dict"],
            serde_json::Value::Null
        );
        assert_eq!(
            compacted["compacted"]["search_index"],
            serde_json::json!({"runs_before": 0, "runs_after": 0, "postings": 0})
        );
    }
    let text = stdout(&run(glassbox(&data).args(["doctor", "--compact"])));
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("recompressed nothing: no dictionary yet")),
        "{text}"
    );
    assert_eq!(lines.next(), Some("search index empty"), "{text}");
    let compacted = lines.next().unwrap_or_default();
    if on_postgres {
        assert!(
            compacted.contains("a PostgreSQL database gives freed space back"),
            "{text}"
        );
    } else {
        assert!(compacted.starts_with("compacted    "), "{text}");
    }

    let show = stdout(&run(glassbox(&data)
        .args(["config", "show"])
        .env("GLASSBOX_NETWORK__MAX_RETRIES", "7")));
    assert!(show.contains("network.max_retries = 7"), "{show}");
    assert!(show.contains("env:GLASSBOX_NETWORK__MAX_RETRIES"), "{show}");
    let json: serde_json::Value = serde_json::from_slice(
        &run(glassbox(&data).args(["config", "show", "--json", "--provider", "ollama"])).stdout,
    )
    .unwrap();
    assert_eq!(
        json["keys"]["general.provider"]["origin"],
        "flag:--provider"
    );

    let bash = stdout(&run(glassbox(&data).args(["completions", "bash"])));
    assert!(bash.contains("_glassbox"));
}

#[test]
fn a_config_typo_is_a_one_line_error_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("config.toml"), "[network]\nmax_retires = 3\n").unwrap();
    let out = glassbox(dir.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("config.toml:2") && err.contains("max_retires"),
        "{err}"
    );
}

#[test]
fn a_newer_store_refuses_to_open_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("glassbox.redb"),
        b"this is not a redb file at all",
    )
    .unwrap();
    let out = support::bin::on_file(dir.path())
        .args(["sessions", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("glassbox: error: cannot open store"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

fn anthropic_sse() -> Vec<u8> {
    support::fixture("anthropic_thinking.sse")
}

/// Parses `ask --json` output into (thinking, text, done).
fn parse_ask(out: &str) -> (String, String, serde_json::Value) {
    let (mut t, mut a, mut done) = (String::new(), String::new(), serde_json::Value::Null);
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["type"].as_str().unwrap() {
            "thinking" => t.push_str(v["text"].as_str().unwrap()),
            "text" => a.push_str(v["text"].as_str().unwrap()),
            "done" => done = v,
            _ => {}
        }
    }
    (t, a, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_against_each_protocol_and_continue_a_session() {
    let cases = [
        (
            "anthropic",
            "anthropic_thinking.sse",
            "",
            "ANTHROPIC_API_KEY",
        ),
        (
            "openai",
            "openai_reasoning_content.sse",
            "/v1",
            "OPENAI_API_KEY",
        ),
        ("ollama", "ollama_thinking.ndjson", "", "NO_KEY_NEEDED"),
    ];
    for (provider, fixture, suffix, key_var) in cases {
        let body = support::fixture(fixture);
        let step = if fixture.ends_with(".ndjson") {
            Step::ndjson(&body)
        } else {
            Step::sse(&body)
        };
        let server = ScriptedServer::start(Script::forever(step.rechunk(ChunkBy::Lines))).await;
        let dir = tempfile::tempdir().unwrap();
        let url = format!("{}{suffix}", server.url());
        let out = tokio::task::spawn_blocking({
            let data = dir.path().to_path_buf();
            move || {
                run(glassbox(&data)
                    .args([
                        "ask",
                        "--json",
                        "--provider",
                        provider,
                        "--base-url",
                        &url,
                        "How much?",
                    ])
                    .env(key_var, KEY))
            }
        })
        .await
        .unwrap();
        let (thinking, text, done) = parse_ask(&stdout(&out));
        assert!(!thinking.is_empty(), "{provider}: no thinking");
        assert!(!text.is_empty(), "{provider}: no answer");
        assert_eq!(done["type"], "done");
        let session = done["session"].as_str().unwrap().to_string();
        // The session has query → thinking → response; a follow-up sends the history.
        let data = dir.path().to_path_buf();
        let follow = tokio::task::spawn_blocking({
            let url = format!("{}{suffix}", server.url());
            let session = session.clone();
            move || {
                run(glassbox(&data)
                    .args([
                        "ask",
                        "--json",
                        "--provider",
                        provider,
                        "--base-url",
                        &url,
                        "--session",
                        &session,
                        "And then?",
                    ])
                    .env(key_var, KEY))
            }
        })
        .await
        .unwrap();
        let (_, _, done2) = parse_ask(&stdout(&follow));
        assert_eq!(done2["session"], done["session"]);
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let second = requests[1].json.to_string();
        assert!(
            second.contains("How much?") && second.contains("And then?"),
            "{provider}: history not sent: {second}"
        );
        let show: serde_json::Value = serde_json::from_slice(
            &run(glassbox(dir.path()).args(["sessions", "show", &session, "--json"])).stdout,
        )
        .unwrap();
        let kinds: Vec<&str> = show["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "query", "thinking", "response", "query", "thinking", "response"
            ],
            "{provider}"
        );
        // The key never reaches the store.
        let bytes = support::store::bytes_of(dir.path());
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{provider}: key found in the store"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_midway_keeps_the_partial_answer_and_fails_clearly() {
    let body = anthropic_sse();
    let cut = body.len() * 3 / 4;
    let step = Step::sse(&body)
        .truncate(cut)
        .rechunk(ChunkBy::Lines)
        .end(support::End::Cut);
    let server = ScriptedServer::start(Script::forever(step)).await;
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let data = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        glassbox(&data)
            .args(["ask", "--provider", "anthropic", "--base-url", &url, "q"])
            .env("ANTHROPIC_API_KEY", KEY)
            .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("glassbox: error:"), "{err}");
    assert!(!err.contains(KEY));
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let s = &store.sessions().unwrap()[0];
    let nodes = store.session_nodes(s.id).unwrap();
    let thinking = nodes
        .iter()
        .find(|n| n.kind == glassbox::store::NodeType::Thinking)
        .unwrap();
    assert!(!thinking.text.is_empty(), "what arrived is kept");
    assert!(matches!(
        thinking.status,
        glassbox::store::NodeStatus::Failed { .. }
    ));
}

#[test]
fn question_from_stdin_and_sessions_rm() {
    let dir = tempfile::tempdir().unwrap();
    // No provider can answer (no key): the error is clear and nothing is stored.
    let out = glassbox(dir.path())
        .args(["ask", "--provider", "anthropic", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"from stdin")?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no API key for anthropic"), "{err}");
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    assert!(store.sessions().unwrap().is_empty());
    let s = glassbox::store::Session::new("to delete", glassbox::store::SessionSource::Glassbox);
    store.write(|w| w.put_session(&s)).unwrap();
    drop(store);
    // Without --yes and without a terminal, rm refuses.
    let out = glassbox(dir.path())
        .args(["sessions", "rm", &s.id.to_string()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    run(glassbox(dir.path()).args(["sessions", "rm", &s.id.short(), "--yes"]));
    let list = stdout(&run(
        glassbox(dir.path()).args(["sessions", "list", "--json"])
    ));
    assert_eq!(list.trim(), "[]");
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = glassbox(dir.path())
        .args(["ask", "--bogus", "q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("--bogus"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_question_can_come_from_stdin() {
    let server = ScriptedServer::start(Script::forever(Step::sse(anthropic_sse()))).await;
    let dir = tempfile::tempdir().unwrap();
    let (url, data) = (server.url(), dir.path().to_path_buf());
    let out = tokio::task::spawn_blocking(move || {
        support::bin::with_stdin(
            glassbox(&data)
                .args([
                    "ask",
                    "--answer-only",
                    "--provider",
                    "anthropic",
                    "--base-url",
                    &url,
                    "-",
                ])
                .env("ANTHROPIC_API_KEY", KEY),
            b"Question from a pipe\n",
        )
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("391"), "only the answer is printed: {text}");
    assert!(
        !text.contains("17 × 20"),
        "thinking must not be printed with --answer-only: {text}"
    );
    assert!(
        server.requests()[0]
            .json
            .to_string()
            .contains("Question from a pipe")
    );
}

/// `glassbox … | head -1`: the reader leaves before the output is written; the command
/// ends quietly (no panic, no backtrace) with 0 or 141 like other Unix tools.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // A session long enough that `sessions show` (written with `write!`) is still writing.
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let s = glassbox::store::Session::new("t", glassbox::store::SessionSource::Glassbox);
    store
        .write(|w| {
            w.put_session(&s)?;
            for i in 0..2000 {
                let kind = glassbox::store::NodeType::Response;
                w.put_node(&glassbox::store::Node::new(
                    s.id,
                    kind,
                    format!("answer {i}"),
                ))?;
            }
            Ok(())
        })
        .unwrap();
    drop(store);
    let id = s.id.to_string();
    for args in [
        &["doctor", "--json"][..],
        &["config", "show"][..],
        &["--help"][..],
        &["sessions", "show", &id][..],
        &["sessions", "show", &id, "--json"][..],
    ] {
        let mut child = glassbox(dir.path())
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
        let code = out.status.code();
        assert!(matches!(code, Some(0 | 141)), "{args:?}: {code:?} {err}");
    }
}

/// Shells and wrappers set variables under our prefix: one warning line, and the command
/// runs.
#[test]
fn an_unknown_glassbox_variable_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let out = glassbox(dir.path())
        .args(["config", "show", "--json"])
        .env("GLASSBOX_FOO", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("glassbox: warning: ignoring unknown environment variable GLASSBOX_FOO"),
        "{err}"
    );
    let bad = glassbox(dir.path())
        .args(["config", "show"])
        .env("GLASSBOX_NETWORK__MAX_RETRIES", "many")
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

//! Learnings (seed 002) as a user drives them through the binary, with the model behind an
//! OpenAI-compatible scripted server: backfill over Claude Code transcripts (idempotent, and
//! the replay agrees with the read models), bi-temporal search, contradictions, feedback, the
//! Claude Code hooks, and an extractor answer that cannot be read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use support::bin::Project;
use support::{Script, ScriptedServer, Step};

fn answer(text: &str) -> Step {
    let chunk = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]});
    let done = json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}});
    Step::sse(format!("data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n"))
}

fn learning(content: &str, concepts: &[&str], from: &str, until: &str) -> Value {
    json!({
        "content": content,
        "concepts": concepts,
        "edges": [],
        "valid_from": from,
        "valid_until": until,
        "temporal_confidence": "high",
    })
}

fn extraction(learnings: Vec<Value>) -> Step {
    answer(&json!({ "learnings": learnings }).to_string())
}

/// Runs `args` against the scripted server at `url`, returning the output whatever the exit.
fn run_with(env: &Project, url: &str, args: &[&str]) -> Output {
    let mut cmd = env.cmd();
    cmd.args(args)
        .args(["--provider", "openai", "--base-url", url])
        .env("OPENAI_API_KEY", "sk-test");
    cmd.output().unwrap()
}

/// `memory insert TEXT --tags TAGS`; returns the new learning's id.
fn insert(env: &Project, text: &str, tags: &str) -> String {
    env.json(&["memory", "insert", text, "--tags", tags, "--json"])["ids"][0]
        .as_str()
        .unwrap()
        .to_string()
}

fn ok_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A copy of the Claude Code transcript fixtures whose sessions ran in projects next to the
/// data dir (`<tmp>/ann/calc`, `web`, `api`, each a git root).
fn transcripts(env: &Project) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude_code/projects");
    let root = env.data.parent().unwrap();
    for p in ["calc", "web", "api"] {
        std::fs::create_dir_all(root.join("ann").join(p).join(".git")).unwrap();
    }
    let dst = root.join("claude/projects");
    copy_dir(&src, &dst, &format!("{}/ann/", root.display()));
    dst
}

/// The project folder of the calc session.
fn calc(env: &Project) -> PathBuf {
    env.data.parent().unwrap().join("ann/calc")
}

fn copy_dir(src: &Path, dst: &Path, home: &str) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to, home);
        } else {
            let text = std::fs::read_to_string(e.path()).unwrap();
            std::fs::write(to, text.replace("/home/ann/", home)).unwrap();
        }
    }
}

async fn server(steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::start(Script {
        steps,
        repeat_last: true,
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_twice_adds_nothing_the_second_time_and_the_replay_agrees() {
    let env = Project::new();
    let dir = transcripts(&env);
    let srv = server(vec![
        extraction(vec![learning(
            "The calc project rounds money with banker's rounding in src/money.rs",
            &["calc", "rounding", "money"],
            "2026-01-05",
            "current",
        )]),
        extraction(vec![learning(
            "The web app serves its assets from the static folder through nginx",
            &["web", "nginx", "assets"],
            "unknown",
            "current",
        )]),
        extraction(vec![learning(
            "The api keeps its sessions in redis with a one hour expiry",
            &["api", "redis", "sessions"],
            "unknown",
            "unknown",
        )]),
    ])
    .await;
    let url = format!("{}/v1", srv.url());
    let d = dir.to_str().unwrap().to_string();
    let (first, second, check, queue, all) = tokio::task::spawn_blocking(move || {
        let first = ok_json(&run_with(&env, &url, &["memory", "backfill", &d, "--json"]));
        let second = ok_json(&run_with(&env, &url, &["memory", "backfill", &d, "--json"]));
        let check = env.json(&["memory", "rebuild", "--check", "--json"]);
        let queue = env.json(&["memory", "queue", "--json"]);
        let all = env.json(&["memory", "events", "--json", "--limit", "100"]);
        (first, second, check, queue, all)
    })
    .await
    .unwrap();
    assert_eq!(check["differences"], 0, "{check}");
    assert_eq!(
        check["events"].as_u64().unwrap(),
        first["eventsAppended"].as_u64().unwrap(),
        "{check} {first}"
    );
    assert_eq!(queue["counts"]["deadLetter"], 0, "{queue}");
    assert!(
        queue["counts"]["completed"].as_u64().unwrap() >= 3,
        "{queue}"
    );
    assert!(first["sessions"].as_u64().unwrap() >= 3, "{first}");
    assert!(first["learnings"].as_u64().unwrap() >= 3, "{first}");
    for key in ["sessions", "learnings", "eventsAppended", "duplicates"] {
        assert!(first.get(key).is_some(), "{key} missing: {first}");
    }
    assert_eq!(second["eventsAppended"], 0, "{second}");
    assert_eq!(second["learnings"], 0, "{second}");
    // Each learning carries its concepts and the seed's idempotency key.
    let extracted: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "LearningExtracted")
        .collect();
    assert!(extracted.len() >= 3, "{all}");
    assert!(
        extracted
            .iter()
            .all(|e| e["payload"]["concepts"].as_array().unwrap().len() >= 3
                && e["source"] == "historical_backfill"
                && e["idempotency_key"].as_str().unwrap().len() == 64),
        "{all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_of_and_as_at_bound_what_search_finds() {
    let env = Project::new();
    let dir = transcripts(&env);
    let file = dir.join("-home-ann-calc/11111111-1111-4111-8111-111111111111.jsonl");
    let srv = server(vec![extraction(vec![learning(
        "The calc test suite ran on Python 3.11 until the January upgrade",
        &["calc", "python", "tests"],
        "2025-06-01",
        "2026-01-10",
    )])])
    .await;
    let url = format!("{}/v1", srv.url());
    let f = file.to_str().unwrap().to_string();
    let hits = tokio::task::spawn_blocking(move || {
        ok_json(&run_with(&env, &url, &["memory", "backfill", &f, "--json"]));
        let search = |extra: &[&str]| -> usize {
            let mut args = vec!["memory", "search", "python tests", "--json"];
            args.extend_from_slice(extra);
            let out = ok_json(
                &env.cmd()
                    .args(&args)
                    .current_dir(calc(&env))
                    .output()
                    .unwrap(),
            );
            out.as_array().unwrap().len()
        };
        (
            search(&[]),
            search(&["--as-of", "2020-01-01"]),
            search(&["--as-at", "2026-02-01"]),
            search(&["--as-at", "2025-12-24"]),
            search(&["--as-of", "2020-01-01", "--as-at", "2025-12-24"]),
        )
    })
    .await
    .unwrap();
    assert_eq!(hits.0, 1, "found now");
    assert_eq!(hits.1, 0, "not known in 2020 (transaction time)");
    assert_eq!(
        hits.2, 0,
        "no longer true after its valid_until (valid time)"
    );
    assert_eq!(hits.3, 1, "true at Christmas 2025");
    assert_eq!(hits.4, 0, "both bounds together");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_learnings_judged_a_contradiction_are_both_penalised_with_paired_events() {
    let env = Project::new();
    let a = insert(
        &env,
        "Releases go out on Fridays after the standup",
        "release,schedule,friday",
    );
    let b = insert(
        &env,
        "Releases never go out on Fridays",
        "release,schedule,friday",
    );
    // Unrelated, on other concepts: never judged.
    insert(&env, "The office plant needs water", "plant");
    let srv = server(vec![answer(
        r#"{"label":"contradiction","confidence":0.92}"#,
    )])
    .await;
    let url = format!("{}/v1", srv.url());
    let (first, again, sa, sb) = tokio::task::spawn_blocking(move || {
        let first = ok_json(&run_with(&env, &url, &["memory", "reconcile", "--json"]));
        let again = ok_json(&run_with(&env, &url, &["memory", "reconcile", "--json"]));
        let sa = ok_json(
            &env.cmd()
                .args(["memory", "show", &a, "--json"])
                .output()
                .unwrap(),
        );
        let sb = ok_json(
            &env.cmd()
                .args(["memory", "show", &b, "--json"])
                .output()
                .unwrap(),
        );
        let check = ok_json(
            &env.cmd()
                .args(["memory", "rebuild", "--check", "--json"])
                .output()
                .unwrap(),
        );
        assert_eq!(check["differences"], 0, "{check}");
        (first, again, sa, sb)
    })
    .await
    .unwrap();
    assert_eq!(first["contradictions"], 1, "{first}");
    assert_eq!(first["eventsAppended"], 2, "{first}");
    assert_eq!(first["judged"], 1, "{first}");
    assert_eq!(
        again["eventsAppended"], 0,
        "cached and already applied: {again}"
    );
    assert_eq!(again["judged"], 0, "{again}");
    assert_eq!(srv.requests().len(), 1, "one NLI call for one pair");
    for (show, other) in [(&sa, &sb), (&sb, &sa)] {
        let r = show["learning"]["state"]["reinforcement"].as_f64().unwrap();
        assert!((r - 0.5 * 0.7).abs() < 1e-9, "{show}");
        let ev = show["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["event_type"] == "LearningContradicted")
            .unwrap_or_else(|| panic!("no contradiction event: {show}"));
        assert_eq!(ev["payload"]["contradicted_with"], other["entry"]["id"]);
        assert_eq!(ev["payload"]["contradiction_multiplier"], 0.7);
        assert_eq!(
            show["learning"]["contradictions"][0]["nli"]["label"],
            "contradiction"
        );
    }
}

#[test]
fn feedback_moves_the_score_and_a_search_explains_every_dimension() {
    let env = Project::new();
    let id = insert(
        &env,
        "Run the linter with cargo clippy before pushing",
        "clippy,lint,ci",
    );
    env.run(&["memory", "feedback", &id, "--useful"]);
    let r = env.json(&["memory", "show", &id, "--json"])["learning"]["state"]["reinforcement"]
        .as_f64()
        .unwrap();
    assert!((r - 0.6).abs() < 1e-9, "{r}");
    env.run(&["memory", "feedback", &id, "--wrong"]);
    let r = env.json(&["memory", "show", &id, "--json"])["learning"]["state"]["reinforcement"]
        .as_f64()
        .unwrap();
    assert!((r - 0.4).abs() < 1e-9, "{r}");
    let hits = env.json(&["memory", "search", "clippy lint", "--json"]);
    let scores = &hits[0]["scores"];
    for k in [
        "text",
        "concept",
        "vector",
        "graph",
        "reinforcement",
        "temporal",
        "recency",
        "total",
    ] {
        assert!(scores[k].is_number(), "{k}: {hits}");
    }
    assert!(scores["concept"].as_f64().unwrap() > 0.0, "{hits}");
    let text = String::from_utf8(
        env.run(&["memory", "search", "clippy lint", "--explain"])
            .stdout,
    )
    .unwrap();
    assert!(
        text.contains("concept") && text.contains("recency"),
        "{text}"
    );
    // Each search was logged as an access.
    let show = env.json(&["memory", "show", &id, "--json"]);
    assert_eq!(show["learning"]["accesses"], 2, "{show}");
}

fn hook(env: &Project, which: &str, input: &str) -> Output {
    support::bin::with_stdin(env.cmd().args(["memory", "hook", which]), input.as_bytes())
}

#[test]
fn the_session_start_hook_hands_back_the_projects_learnings_and_fails_open() {
    let env = Project::new();
    insert(
        &env,
        "Integration tests need the redis container running",
        "redis,tests,docker",
    );
    let input = json!({"session_id": "cc-1", "cwd": env.project, "source": "startup", "hook_event_name": "SessionStart"});
    let out = hook(&env, "session-start", &input.to_string());
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("redis container"), "{ctx}");
    // Again: from the cache, same answer.
    let again: Value =
        serde_json::from_slice(&hook(&env, "session-start", &input.to_string()).stdout).unwrap();
    assert_eq!(again, v);
    // A new learning makes the cache stale: the old context is served at once, and a
    // background process has the new one ready for a later start.
    insert(&env, "Staging deploys need the VPN", "vpn,staging,deploy");
    let context = |out: Output| -> String {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let old = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        context(hook(&env, "session-start", &input.to_string())),
        old
    );
    let mut fresh = String::new();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        fresh = context(hook(&env, "session-start", &input.to_string()));
        if fresh.contains("VPN") {
            break;
        }
    }
    assert!(
        fresh.contains("VPN") && fresh.contains("redis container"),
        "{fresh}"
    );
    // Bad input: valid hook JSON with no context, exit 0, one line on stderr.
    let bad = hook(&env, "session-start", "this is not json");
    assert!(bad.status.success());
    let v: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["additionalContext"], "");
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim().lines().count(),
        1
    );
    // A config typo fails open too.
    std::fs::create_dir_all(env.data.join("config")).unwrap();
    std::fs::write(env.data.join("config/config.toml"), "[memory\nbroken").unwrap();
    let broken = hook(&env, "session-start", &input.to_string());
    assert!(broken.status.success());
    let v: Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["additionalContext"], "");
}

#[test]
fn the_stop_hook_only_queues_the_transcript() {
    let env = Project::new();
    let dir = transcripts(&env);
    let file = dir.join("-home-ann-web/22222222-2222-4222-8222-222222222222.jsonl");
    let input = json!({"session_id": "22222222-2222-4222-8222-222222222222", "transcript_path": file, "cwd": env.project});
    let out = hook(&env, "stop", &input.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    // The same stop again is the same item.
    hook(&env, "stop", &input.to_string());
    let q = env.json(&["memory", "queue", "--json"]);
    assert_eq!(q["counts"]["pending"], 1, "{q}");
    assert_eq!(q["items"][0]["transcript"], file.to_str().unwrap());
    // Nothing was imported yet.
    let sessions = env.json(&["sessions", "list", "--json"]);
    assert_eq!(sessions.as_array().unwrap().len(), 0, "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_extraction_is_retried_once_then_dead_lettered_with_the_raw_answer() {
    let env = Project::new();
    let dir = transcripts(&env);
    let file = dir.join("-home-ann-web/22222222-2222-4222-8222-222222222222.jsonl");
    let srv = server(vec![answer("I think the session was about websites.")]).await;
    let url = format!("{}/v1", srv.url());
    let f = file.to_str().unwrap().to_string();
    let (out, q) = tokio::task::spawn_blocking(move || {
        let out = run_with(&env, &url, &["memory", "backfill", &f, "--json"]);
        let q = env.json(&["memory", "queue", "--json"]);
        (out, q)
    })
    .await
    .unwrap();
    assert!(!out.status.success(), "a dead letter fails the run");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["deadLetters"], 1, "{r}");
    assert_eq!(r["eventsAppended"], 0, "{r}");
    assert_eq!(srv.requests().len(), 2, "one retry");
    assert_eq!(q["counts"]["deadLetter"], 1, "{q}");
    let item = &q["items"][0];
    assert!(
        item["raw"].as_str().unwrap().contains("about websites"),
        "{q}"
    );
    assert!(item["last_error"].as_str().unwrap().contains("JSON"), "{q}");
}

//! DeepTrust research over real HTTP against the scripted OpenAI-compatible server: the
//! revision ceiling, the auditor's quoted rules and the engine's own checks, the gate that
//! no tool passes before approval, rejection and edits at the gate, a tool error the report
//! is told of, the repair retry, and `glassbox research` / `--resume` / `knowledge add` as a
//! user runs them, down to a report that cites the one document that answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::sync::Arc;

use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::pipeline::SearchParams;
use glassbox::engines::prompts::Prompts;
use glassbox::engines::research::{
    Decision, Policy, ResearchEngine, ResearchError, ResearchEvent, ResearchPrompts,
    ResearchRequest, ResearchState, Status, StepEdit, Tool, Tools, Verdict,
};
use glassbox::store::{NodeStatus, NodeType, RunStatus, Store};
use serde_json::{Value, json};
use support::bin::{glassbox, run_until};
use support::pg::Cut;
use support::{Script, ScriptedServer, Step};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn sse(text: &str) -> String {
    support::wire::openai_stream(&[text])
}

fn answer(text: &str) -> Step {
    Step::sse(sse(text))
}

fn plan(tool: &str, input: &str) -> Step {
    answer(
        &json!({
            "objective": "answer the question",
            "steps": [{"tool": tool, "input": input, "rationale": "the question's topic"}],
            "estimatedTokenBudget": 2000
        })
        .to_string(),
    )
}

fn approve() -> Step {
    answer(&json!({"verdict": "approved", "policyViolations": [], "suggestions": []}).to_string())
}

/// A rejection quoting a rule of the built-in policy.
fn reject() -> Step {
    answer(
        &json!({
            "verdict": "rejected",
            "policyViolations": [{"rule": "Every step needs a non-empty input and a rationale that says what it adds to the objective.", "problem": "the rationale is vague"}],
            "suggestions": ["say what each step adds"]
        })
        .to_string(),
    )
}

fn config() -> Config {
    toml::from_str(DEFAULT_TOML).unwrap()
}

fn engine(store: &Store, url: &str) -> ResearchEngine {
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{url}/v1"),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let params = config().research;
    ResearchEngine {
        store: store.clone(),
        provider: Arc::new(provider),
        model: "m".into(),
        tools: Tools::new(
            store.clone(),
            None,
            8,
            None,
            SearchParams::default(),
            &params,
        ),
        params,
        prompts: ResearchPrompts::from(&Prompts::builtin()),
        seed: None,
    }
}

fn request(e: &ResearchEngine, question: &str, approve: bool) -> ResearchRequest {
    ResearchRequest {
        question: question.into(),
        policy: Policy::builtin(&e.params),
        session: None,
        approve,
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    (dir, store)
}

/// A scripted server answering `steps`, a store, and an engine on both.
async fn scripted(steps: Vec<Step>) -> (ScriptedServer, tempfile::TempDir, Store, ResearchEngine) {
    let server = ScriptedServer::start(Script::new(steps)).await;
    let (dir, store) = store();
    let e = engine(&store, &server.url());
    (server, dir, store, e)
}

/// `n` rounds of a plan and its audit.
fn rounds(n: usize, plan: impl Fn() -> Step, audit: fn() -> Step) -> Vec<Step> {
    (0..n).flat_map(|_| [plan(), audit()]).collect()
}

async fn start(
    e: &ResearchEngine,
    req: ResearchRequest,
) -> (Result<ResearchState, ResearchError>, Vec<ResearchEvent>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let out = e.start(req, tx, CancellationToken::new()).await;
    let mut events = Vec::new();
    while let Ok(ev) = rx.try_recv() {
        events.push(ev);
    }
    (out, events)
}

async fn resume(
    e: &ResearchEngine,
    st: &ResearchState,
    d: Decision,
) -> Result<ResearchState, ResearchError> {
    let (tx, _rx) = mpsc::unbounded_channel();
    e.resume(st.thread_id, d, tx, CancellationToken::new())
        .await
}

fn nodes_of(store: &Store, st: &ResearchState, kind: NodeType) -> Vec<glassbox::store::Node> {
    store
        .session_nodes(st.session_id)
        .unwrap()
        .into_iter()
        .filter(|n| n.kind == kind)
        .collect()
}

fn user_text(r: &support::Recorded) -> String {
    r.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn an_auditor_that_always_rejects_ends_the_run_after_max_plan_revisions() {
    let steps = rounds(3, || plan("knowledge_search", "retry policy"), reject);
    let (server, _d, store, e) = scripted(steps).await;
    let (out, events) = start(&e, request(&e, "How do we retry?", false)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::Rejected);
    assert_eq!(st.revision, 3);
    assert_eq!(st.plan.as_ref().unwrap().revision, 3);
    let why = st.end_reason.clone().unwrap();
    assert!(
        why.contains("rejected 3 times (max_plan_revisions = 3)"),
        "{why}"
    );
    assert!(why.contains("Every step needs a non-empty input"), "{why}");
    assert_eq!(server.requests().len(), 6);
    // The second plan was asked with the audit's feedback.
    let second = user_text(&server.requests()[2]);
    assert!(second.contains("say what each step adds"), "{second}");
    assert!(second.contains("Your previous plan"), "{second}");
    assert_eq!(nodes_of(&store, &st, NodeType::Plan).len(), 3);
    assert_eq!(nodes_of(&store, &st, NodeType::Audit).len(), 3);
    assert!(nodes_of(&store, &st, NodeType::ToolCall).is_empty());
    let run = store.run(st.thread_id).unwrap().unwrap();
    assert!(
        matches!(run.status, RunStatus::Failed { .. }),
        "{:?}",
        run.status
    );
    let last = events.iter().rev().find_map(|ev| match ev {
        ResearchEvent::Research { node, state } => Some((*node, state.status)),
        _ => None,
    });
    assert_eq!(last, Some(("end", Status::Rejected)));
    // A finished run cannot be resumed.
    let err = resume(&e, &st, Decision::default()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("run {} already ended (rejected)", st.thread_id)
    );
}

#[tokio::test]
async fn the_gate_holds_every_tool_until_approval_and_the_report_cites_what_they_found() {
    let server = ScriptedServer::start(Script::new(vec![
        plan("session_search", "sky colour"),
        approve(),
        answer("The sky is blue because of Rayleigh scattering [1]."),
    ]))
    .await;
    let (_d, store) = store();
    // A session the search will find.
    let mut earlier =
        glassbox::store::Session::new("sky", glassbox::store::SessionSource::Glassbox);
    earlier.title = "why the sky is blue".into();
    let sid = earlier.id;
    let n = glassbox::store::Node::new(
        sid,
        NodeType::Response,
        "Rayleigh scattering makes the sky colour blue.",
    );
    store
        .write(|w| {
            w.put_session(&earlier)?;
            w.put_node(&n)
        })
        .unwrap();
    let e = engine(&store, &server.url());
    let (out, _) = start(&e, request(&e, "Why is the sky blue?", false)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::AwaitingApproval);
    assert_eq!(st.audit_result.as_ref().unwrap().verdict, Verdict::Approved);
    assert!(
        nodes_of(&store, &st, NodeType::ToolCall).is_empty(),
        "no tool before approval"
    );
    assert_eq!(server.requests().len(), 2);
    // Without a decision, a paused run says what it waits for.
    let err = resume(&e, &st, Decision::default()).await.unwrap_err();
    assert!(err.to_string().contains("is waiting for approval"), "{err}");

    let done = resume(
        &e,
        &st,
        Decision {
            approve: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(done.status, Status::Complete);
    let step = &done.plan.as_ref().unwrap().steps[0];
    assert!(
        step.output.as_ref().unwrap().contains("Rayleigh"),
        "{step:?}"
    );
    let c = &done.citations[0];
    assert!(c.cited && c.n == 1);
    assert_eq!(c.source, format!("session/{sid}#{}", n.id));
    let report = done.final_report.as_ref().unwrap();
    assert!(
        report.contains("## Sources") && report.contains("[1] why the sky is blue"),
        "{report}"
    );
    // The synthesizer was given the numbered source.
    let synth = user_text(&server.requests()[2]);
    assert!(synth.contains("[1] why the sky is blue"), "{synth}");
    // Query → plan → audit → approval → tool call → report, each linked to the one before.
    let kinds: Vec<NodeType> = store
        .session_nodes(done.session_id)
        .unwrap()
        .iter()
        .map(|n| n.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            NodeType::Query,
            NodeType::Plan,
            NodeType::Audit,
            NodeType::HumanAnnotation,
            NodeType::ToolCall,
            NodeType::Synthesis
        ]
    );
    let report_node = store.node(done.report_node.unwrap()).unwrap().unwrap();
    assert_eq!(report_node.status, NodeStatus::Complete);
    assert_eq!(
        store.run(done.thread_id).unwrap().unwrap().status,
        RunStatus::Done
    );
}

#[tokio::test]
async fn with_the_network_off_a_plan_using_it_is_rejected_with_the_policy_rule() {
    // The model approves; the engine's own check rejects, quoting the policy.
    let steps = rounds(3, || plan("web_search", "rust release"), approve);
    let (server, _d, _store, e) = scripted(steps).await;
    let (out, _) = start(&e, request(&e, "Latest Rust?", false)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::Rejected);
    let v = &st.audit_result.as_ref().unwrap().policy_violations[0];
    assert!(
        v.problem.contains("uses web_search but the network is off"),
        "{v:?}"
    );
    assert!(
        v.rule
            .starts_with("web_search and fetch_url may be used only when"),
        "{v:?}"
    );
    // The thinker was never offered the network tools.
    let asked = &server.requests()[0].json;
    assert!(
        !asked.to_string().contains("fetch_url: fetches"),
        "tools list offered fetch_url"
    );
}

#[tokio::test]
async fn a_rejection_must_quote_the_policy_and_a_custom_policy_is_the_one_quoted() {
    let unfounded = answer(
        &json!({"verdict": "rejected", "policyViolations": [{"rule": "Always use three web sources.", "problem": "too few"}], "suggestions": []})
            .to_string(),
    );
    let (server, _d, store, e) = scripted(vec![
        plan("knowledge_search", "x"),
        unfounded,
        plan("knowledge_search", "x"),
        answer(&json!({"verdict": "rejected", "policyViolations": [{"rule": "Only session_search may be used", "problem": "uses knowledge_search"}]}).to_string()),
    ]).await;
    // A rule the policy does not have is no rejection.
    let (out, _) = start(&e, request(&e, "q", false)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::AwaitingApproval);
    let a = st.audit_result.unwrap();
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("not a rule of the policy")),
        "{a:?}"
    );
    // A custom policy's own rule is.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.md");
    std::fs::write(
        &file,
        "# Team policy\n\n- Only session_search may be used.\n",
    )
    .unwrap();
    let mut req = request(&e, "q", false);
    req.policy = Policy::from_file(&file, &e.params).unwrap();
    let mut short = engine(&store, &server.url());
    short.params.max_plan_revisions = 1;
    let (out, _) = start(&short, req).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::Rejected);
    assert_eq!(
        st.audit_result.unwrap().policy_violations[0].rule,
        "Only session_search may be used."
    );
    assert!(
        Policy::from_file(&dir.path().join("none.md"), &e.params)
            .unwrap_err()
            .starts_with("policy ")
    );
}

#[tokio::test]
async fn at_the_gate_a_rejection_revises_and_an_edit_is_audited_again() {
    let (server, _d, store, e) = scripted(vec![
        plan("knowledge_search", "first"),
        approve(),
        plan("session_search", "second"),
        approve(),
        approve(),
        answer("Nothing was found."),
    ])
    .await;
    let (out, _) = start(&e, request(&e, "q", false)).await;
    let st = out.unwrap();
    let st = resume(
        &e,
        &st,
        Decision {
            reject: Some("search the sessions instead".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(st.status, Status::AwaitingApproval);
    assert_eq!((st.revision, st.plan.as_ref().unwrap().revision), (1, 2));
    assert!(user_text(&server.requests()[2]).contains("search the sessions instead"));
    // A step that does not exist is refused, and the run still waits.
    let err = resume(
        &e,
        &st,
        Decision {
            edits: vec![StepEdit {
                step: 9,
                tool: None,
                input: None,
            }],
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().ends_with("has no step 9 (it has 1)"),
        "{err}"
    );
    let st = resume(
        &e,
        &st,
        Decision {
            approve: true,
            edits: vec![StepEdit {
                step: 1,
                tool: Some(Tool::SessionSearch),
                input: Some("edited query".into()),
            }],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // Re-audited (request 5), then approved in the same decision: the tool ran.
    assert_eq!(st.status, Status::Complete);
    assert!(user_text(&server.requests()[4]).contains("edited query"));
    assert_eq!(st.plan.as_ref().unwrap().steps[0].input, "edited query");
    let said: Vec<String> = nodes_of(&store, &st, NodeType::HumanAnnotation)
        .into_iter()
        .map(|n| n.text)
        .collect();
    assert_eq!(said.len(), 3, "{said:?}");
    assert!(said[0].starts_with("rejected by you: search the sessions instead"));
    assert!(said[1].starts_with("edited by you: step 1 → session_search"));
}

#[tokio::test]
async fn a_tool_error_is_kept_on_its_step_and_the_synthesizer_is_told() {
    let (server, _d, store, e) = scripted(vec![
        plan("memory_search", "anything"),
        approve(),
        answer("Memory could not be searched."),
    ])
    .await;
    let (out, _) = start(&e, request(&e, "q", true)).await;
    let st = out.unwrap();
    assert_eq!(
        st.status,
        Status::Complete,
        "approved in advance runs through"
    );
    let step = &st.plan.as_ref().unwrap().steps[0];
    assert_eq!(
        step.error.as_deref(),
        Some("memory is not available to this run")
    );
    let node = store.node(step.node.unwrap()).unwrap().unwrap();
    assert!(matches!(node.status, NodeStatus::Failed { .. }));
    let synth = user_text(&server.requests()[2]);
    assert!(
        synth.contains("Step 1 (memory_search \"anything\") failed: memory is not available"),
        "{synth}"
    );
}

#[tokio::test]
async fn an_unreadable_plan_is_asked_again_then_fails_with_its_raw_text() {
    let (server, _d, store, e) = scripted(vec![
        answer("I would search for it."),
        answer("Still no JSON."),
    ])
    .await;
    let (out, _) = start(&e, request(&e, "q", true)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::Failed);
    assert!(
        st.error_message
            .as_ref()
            .unwrap()
            .contains("the plan could not be read")
    );
    let plans = nodes_of(&store, &st, NodeType::Plan);
    assert_eq!(plans.len(), 1);
    assert!(matches!(plans[0].status, NodeStatus::Failed { .. }));
    assert_eq!(plans[0].text, "Still no JSON.");
    assert!(user_text(&server.requests()[1]).contains("It could not be read"));
}

fn research_cmd(data: &Path, url: &str, args: &[&str]) -> std::process::Command {
    let mut c = glassbox(data);
    c.args([
        "research",
        "--provider",
        "openai",
        "--base-url",
        &format!("{url}/v1"),
    ])
    .args(args)
    .env("OPENAI_API_KEY", "k")
    .env("GLASSBOX_NETWORK__MAX_RETRIES", "0")
    .env("GLASSBOX_EMBEDDINGS__PROVIDER", "none");
    c
}

fn lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

async fn run_cmd(mut c: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn research_stops_at_the_gate_and_resume_approve_cites_the_document_that_answers() {
    let data = tempfile::tempdir().unwrap();
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(docs.path().join("a-gardening.md"), "# Gardening\n\nTomatoes need full sun, deep watering twice a week, and stakes once they flower.\n").unwrap();
    std::fs::write(docs.path().join("b-lighthouse.md"), "# The Lighthouse\n\nThe keeper of the Skerry lighthouse lit the lamp at dusk using paraffin until 1952, when the light was electrified.\n").unwrap();
    std::fs::write(docs.path().join("c-bread.md"), "# Bread\n\nSourdough rises slowly; keep the starter warm and feed it flour and water daily.\n").unwrap();
    let add = glassbox(data.path())
        .args(["knowledge", "add"])
        .arg(docs.path())
        .env("GLASSBOX_EMBEDDINGS__PROVIDER", "none")
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );

    let server = ScriptedServer::start(Script::new(vec![
        plan(
            "knowledge_search",
            "When was the Skerry lighthouse electrified?",
        ),
        approve(),
        answer("The Skerry lighthouse was electrified in 1952 [1]."),
    ]))
    .await;
    let out = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--json", "When was the Skerry lighthouse electrified?"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = lines(&out.stdout);
    assert_eq!(events[0]["type"], "start");
    let run = events[0]["runId"].as_str().unwrap().to_string();
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "research")
        .unwrap();
    assert_eq!(last["node"], "hitl_gate");
    assert_eq!(last["state"]["status"], "awaiting_approval");
    assert_eq!(last["state"]["auditResult"]["verdict"], "approved");
    assert!(last["state"]["plan"]["steps"][0]["output"].is_null());
    assert_eq!(
        server.requests().len(),
        2,
        "no tool, no synthesizer before approval"
    );

    let out = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--json", "--resume", &run[..8], "--approve"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = lines(&out.stdout);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "research");
    assert_eq!(last["state"]["status"], "complete");
    let report = last["state"]["finalReport"].as_str().unwrap();
    assert!(report.contains("1952 [1]"), "{report}");
    let cited: Vec<&Value> = last["state"]["citations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cited"] == true)
        .collect();
    assert_eq!(cited.len(), 1, "{last}");
    assert_eq!(cited[0]["n"], 1);
    assert_eq!(cited[0]["kind"], "knowledge");
    assert!(
        cited[0]["source"]
            .as_str()
            .unwrap()
            .ends_with("b-lighthouse.md"),
        "{}",
        cited[0]
    );
    assert!(cited[0]["span"].is_array());

    // Resuming it again, or an unknown run, is a clear one-line error.
    let again = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--resume", &run, "--approve"],
    ))
    .await;
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains(&format!("run {run} already ended (complete)")),
        "{err}"
    );
    let unknown = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--resume", "ffffffff"],
    ))
    .await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("ffffffff"));

    // `--show` and the Markdown export carry the plan, the audit, the tool result and the report.
    let show = glassbox(data.path())
        .args(["research", "--show", &run])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(
        show.contains("[report]") && show.contains("knowledge_search"),
        "{show}"
    );
    let session = events[0]["sessionId"].as_str().unwrap();
    let md = glassbox(data.path())
        .args(["export", session, "-f", "md"])
        .output()
        .unwrap();
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md = String::from_utf8_lossy(&md.stdout);
    for needle in [
        "Plan (revision 1)",
        "Audit: approved",
        "The Keeper",
        "1952 [1]",
        "## Sources",
    ] {
        assert!(
            md.to_lowercase().contains(&needle.to_lowercase()),
            "{needle} missing:\n{md}"
        );
    }
}

#[tokio::test]
async fn research_text_output_names_the_gate_and_plan_only_prints_the_plan() {
    let data = tempfile::tempdir().unwrap();
    let server =
        ScriptedServer::start(Script::new(vec![plan("session_search", "tea"), approve()])).await;
    let out = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--plan-only", "Tea?"],
    ))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("objective: answer the question\n1. session_search \"tea\""),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waiting for your approval") && stderr.contains("--approve"),
        "{stderr}"
    );
    // Answers for the gate without --resume are refused, not taken for a new question.
    for a in [vec!["--reject", "q"], vec!["--edit", "1=x", "q"]] {
        let bad = run_cmd(research_cmd(data.path(), &server.url(), &a)).await;
        assert_eq!(bad.status.code(), Some(1));
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains("add --resume RUN"), "{err}");
    }
    // A policy file that does not exist is refused before any model call.
    let bad = run_cmd(research_cmd(
        data.path(),
        &server.url(),
        &["--policy", "/nonexistent/p.md", "q"],
    ))
    .await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("policy /nonexistent/p.md"));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_cancelled_report_resumes_where_it_stopped() {
    let slow_report = Step::status(200)
        .header("content-type", "text/event-stream")
        .chunk_after(std::time::Duration::from_secs(5), sse("late"));
    let (server, _d, store, e) = scripted(vec![
        plan("session_search", "tea"),
        approve(),
        slow_report,
        answer("Tea is a drink [1]."),
    ])
    .await;
    let (tx, _rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(800)).await;
        stop.cancel();
    });
    let err = e
        .start(request(&e, "Tea?", true), tx, cancel)
        .await
        .unwrap_err();
    let run = err.resumable().expect("a resumable run");
    assert!(
        err.to_string().contains("glassbox research --resume"),
        "{err}"
    );
    let runrow = store.run(run).unwrap().unwrap();
    assert_eq!(runrow.status, RunStatus::Interrupted);
    let st = glassbox::engines::research::load_state(&store, run).unwrap();
    assert_eq!(st.status, Status::Synthesizing);
    // The tool ran once; resuming runs only the synthesizer.
    let done = resume(&e, &st, Decision::default()).await.unwrap();
    assert_eq!(done.status, Status::Complete);
    assert_eq!(server.requests().len(), 4);
    let tools = nodes_of(&store, &done, NodeType::ToolCall);
    assert_eq!(tools.len(), 1);
    let reports = nodes_of(&store, &done, NodeType::Synthesis);
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0].status, NodeStatus::Interrupted);
    assert_eq!(reports[1].status, NodeStatus::Complete);
}

#[tokio::test]
async fn with_the_network_allowed_web_search_and_fetch_url_reach_their_servers() {
    let web = ScriptedServer::start(Script::new(vec![
        Step::json(
            200,
            json!({"results": [{"url": "https://example.org/rust", "title": "Rust 2.0 released", "content": "The Rust 2.0 release notes."}]})
                .to_string(),
        ),
        Step::status(200)
            .header("content-type", "text/html; charset=utf-8")
            .chunk("<html><head><title>Notes</title></head><body><h1>Release notes</h1><p>Rust 2.0 adds <b>effects</b>.</p><script>var x = 1;</script></body></html>"),
    ]))
    .await;
    let page = format!("{}/notes", web.url());
    let llm = ScriptedServer::start(Script::new(vec![
        answer(
            &json!({
                "objective": "find the release",
                "steps": [
                    {"tool": "web_search", "input": "rust release", "rationale": "find it"},
                    {"tool": "fetch_url", "input": page, "rationale": "read it"}
                ],
                "estimatedTokenBudget": 3000
            })
            .to_string(),
        ),
        approve(),
        answer("Rust 2.0 adds effects [2], per its release notes [1]."),
    ]))
    .await;
    let (_d, store) = store();
    let mut e = engine(&store, &llm.url());
    e.params.allow_network = true;
    let search = SearchParams {
        searxng_url: web.url(),
        ..SearchParams::default()
    };
    e.tools = Tools::new(store.clone(), None, 8, None, search, &e.params);
    let (out, _) = start(&e, request(&e, "What is new in Rust?", true)).await;
    let st = out.unwrap();
    assert_eq!(st.status, Status::Complete, "{:?}", st.end_reason);
    let steps = &st.plan.as_ref().unwrap().steps;
    assert!(
        steps[0]
            .output
            .as_ref()
            .unwrap()
            .contains("Rust 2.0 released"),
        "{steps:?}"
    );
    let fetched = steps[1].output.as_ref().unwrap();
    assert!(
        fetched.contains("Rust 2.0 adds") && fetched.contains("effects"),
        "{fetched}"
    );
    assert!(
        !fetched.contains("<p>") && !fetched.contains("var x"),
        "{fetched}"
    );
    let urls: Vec<(&str, bool)> = st
        .citations
        .iter()
        .map(|c| (c.source.as_str(), c.cited))
        .collect();
    assert_eq!(
        urls,
        vec![("https://example.org/rust", true), (page.as_str(), true)]
    );
    let asked = web.requests();
    assert_eq!(asked[0].path, "/search");
    assert_eq!(asked[1].path, "/notes");
}

/// Cuts a research run off after its tools ran, then resumes it: the report is written
/// without running a tool twice, and the report cut off is left interrupted.
async fn cut_after_the_tools_then_resume(cut: Cut) {
    let pg = (cut == Cut::StoreLost).then(|| Arc::new(support::pg::TempPostgres::start().unwrap()));
    let store_url = pg.as_ref().map(|pg| pg.socket_url(&pg.create_database()));
    let late = if cut == Cut::Kill { 20 } else { 2 };
    let slow_report = Step::status(200)
        .header("content-type", "text/event-stream")
        .chunk_after(std::time::Duration::from_secs(late), sse("late"));
    let server = ScriptedServer::start(Script::new(vec![
        plan("session_search", "tea"),
        approve(),
        slow_report,
        answer("Tea [1]."),
    ]))
    .await;
    let server = Arc::new(server);
    let data = tempfile::tempdir().unwrap();
    let command = {
        let (dir, url, store_url) = (data.path().to_path_buf(), server.url(), store_url.clone());
        move |args: &[&str]| {
            let mut c = research_cmd(&dir, &url, args);
            if let Some(u) = &store_url {
                c.env("GLASSBOX_STORE_URL", u);
            }
            c
        }
    };
    let (first, server_pg, http) = (command.clone(), pg.clone(), server.clone());
    let run = tokio::task::spawn_blocking(move || {
        let started = run_until(first(&["--approve", "--json", "Tea?"]), |v| {
            v["type"] == "research" && v["node"] == "tool_executor"
        });
        match server_pg {
            None => {
                std::thread::sleep(std::time::Duration::from_millis(300));
                started.kill()
            }
            Some(pg) => {
                // The report is asked for and its node stored as streaming: then the
                // store goes.
                while http.requests().len() < 3 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                std::thread::sleep(std::time::Duration::from_millis(300));
                pg.stop();
                let run = started.fails_on_lost_store();
                pg.start_again();
                run
            }
        }
    })
    .await
    .unwrap();
    assert!(!run.is_empty());
    let out = run_cmd(command(&["--json", "--resume", &run])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = lines(&out.stdout);
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(events.last().unwrap()["state"]["status"], "complete");
    assert_eq!(server.requests().len(), 4);
    let store = match &store_url {
        Some(url) => support::store::open_url(url).unwrap(),
        None => support::store::open(&data.path().join("glassbox.redb")).unwrap(),
    };
    let session: glassbox::store::SessionId =
        events[0]["sessionId"].as_str().unwrap().parse().unwrap();
    let nodes = store.session_nodes(session).unwrap();
    assert_eq!(
        nodes
            .iter()
            .filter(|n| n.kind == NodeType::ToolCall)
            .count(),
        1
    );
    assert!(
        nodes.iter().all(|n| n.status != NodeStatus::Streaming),
        "a node left streaming"
    );
    let reports: Vec<&NodeStatus> = nodes
        .iter()
        .filter(|n| n.kind == NodeType::Synthesis)
        .map(|n| &n.status)
        .collect();
    assert_eq!(
        reports,
        vec![&NodeStatus::Interrupted, &NodeStatus::Complete]
    );
}

#[tokio::test]
async fn kill_9_after_the_tools_then_resume_writes_the_report_without_running_a_tool_twice() {
    cut_after_the_tools_then_resume(Cut::Kill).await;
}

#[tokio::test]
async fn a_lost_store_connection_fails_the_run_resumably() {
    cut_after_the_tools_then_resume(Cut::StoreLost).await;
}

use serde_json::{Value, json};

use super::*;
use crate::store::{
    Edge, EdgeType, Node, NodeType, Run, RunKind, RunStatus, Session, SessionSource,
};

fn cfg() -> VerifyParams {
    VerifyParams {
        correctness_threshold: 0.7,
        incorrect_factor: 0.3,
        neutral_factor: 0.9,
        uncertain_factor: 0.7,
        declining_spread: 0.2,
        declining_min_steps: 3,
        recurring_min_steps: 2,
        high_confidence: 0.8,
        max_steps: 50,
        effort: crate::engines::llm::Effort::High,
        max_tokens: 1024,
    }
}

fn step(i: usize, verdict: Verdict, confidence: f64, issues: &[IssueKind]) -> StepVerification {
    StepVerification {
        step_index: i,
        verdict,
        confidence,
        explanation: String::new(),
        issues: issues
            .iter()
            .map(|&kind| Issue {
                kind,
                description: String::new(),
                severity: Severity::Minor,
            })
            .collect(),
        suggested_correction: None,
        unreadable: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn the_defaults_hold_the_seed_values() {
    assert_eq!(VerifyParams::default(), cfg());
}

#[test]
fn chain_score_is_the_geometric_mean_of_the_step_factors() {
    use Verdict::*;
    // (verdicts with confidences, product by hand, steps, expected score by hand)
    let table: &[(&[(Verdict, f64)], f64)] = &[
        // 0.9 · 0.8 = 0.72; √0.72
        (&[(Correct, 0.9), (Correct, 0.8)], 0.848_528_137_423_857),
        // 0.9 → 0.9
        (&[(Correct, 0.9)], 0.9),
        // (1 − 0.6) · 0.3 = 0.12
        (&[(Incorrect, 0.6)], 0.12),
        // 0.9 · 0.7 = 0.63; √0.63
        (&[(Neutral, 0.2), (Uncertain, 0.5)], 0.793_725_393_319_377),
        // 1.0 · (1 − 0.8)·0.3 = 0.06 · 0.9 = 0.054; ∛0.054
        (
            &[(Correct, 1.0), (Incorrect, 0.8), (Neutral, 0.5)],
            0.377_976_314_968_462,
        ),
        // an incorrect step judged with full confidence zeroes the chain
        (&[(Correct, 0.9), (Incorrect, 1.0)], 0.0),
        // 0.5⁴ = 0.0625; fourth root 0.5
        (
            &[
                (Correct, 0.5),
                (Correct, 0.5),
                (Correct, 0.5),
                (Correct, 0.5),
            ],
            0.5,
        ),
    ];
    for (steps, want) in table {
        let s: Vec<_> = steps
            .iter()
            .enumerate()
            .map(|(i, &(v, c))| step(i, v, c, &[]))
            .collect();
        let got = chain_score(&s, &cfg());
        assert!(close(got, *want), "{steps:?}: got {got}, want {want}");
    }
    assert_eq!(chain_score(&[], &cfg()), 0.0);
}

#[test]
fn validity_and_first_error_follow_the_score() {
    use Verdict::*;
    let s = vec![step(0, Correct, 0.9, &[]), step(1, Correct, 0.8, &[])];
    assert!(chain_score(&s, &cfg()) >= 0.7);
    assert_eq!(first_error(&s), -1);
    let s = vec![
        step(0, Correct, 0.9, &[]),
        step(1, Neutral, 0.5, &[]),
        step(2, Incorrect, 0.7, &[]),
        step(3, Incorrect, 0.7, &[]),
    ];
    // 0.9 · 0.9 · 0.09 · 0.09 = 0.006561; fourth root = 0.284604989…
    assert!(close(chain_score(&s, &cfg()), 0.006_561_f64.powf(0.25)));
    assert!(chain_score(&s, &cfg()) < 0.7);
    assert_eq!(first_error(&s), 2);
}

fn names(p: &[Pattern]) -> Vec<String> {
    p.iter().map(|p| p.name.clone()).collect()
}

#[test]
fn patterns_fire_exactly_on_their_triggers() {
    use IssueKind::*;
    use Verdict::*;
    let table: Vec<(Vec<StepVerification>, Vec<&str>)> = vec![
        // 0.9 ≥ 0.8 ≥ 0.6, spread 0.3 > 0.2
        (
            vec![
                step(0, Correct, 0.9, &[]),
                step(1, Correct, 0.8, &[]),
                step(2, Correct, 0.6, &[]),
            ],
            vec!["declining_confidence"],
        ),
        // spread exactly 0.2 is not more than 0.2 (0.75 − 0.55 = 0.2 in binary too)
        (
            vec![
                step(0, Correct, 0.75, &[]),
                step(1, Correct, 0.7, &[]),
                step(2, Correct, 0.55, &[]),
            ],
            vec![],
        ),
        // a rise breaks the monotone decline
        (
            vec![
                step(0, Correct, 0.9, &[]),
                step(1, Correct, 0.95, &[]),
                step(2, Correct, 0.5, &[]),
            ],
            vec![],
        ),
        // two steps are too few for a decline
        (
            vec![step(0, Correct, 0.9, &[]), step(1, Neutral, 0.4, &[])],
            vec![],
        ),
        // the same issue in two steps; a different one in one step only
        (
            vec![
                step(0, Neutral, 0.5, &[UnsupportedClaim]),
                step(1, Neutral, 0.5, &[UnsupportedClaim, FactualError]),
                step(2, Neutral, 0.5, &[]),
            ],
            vec!["recurring_unsupported_claim"],
        ),
        // an issue listed twice in one step is one step
        (
            vec![step(0, Neutral, 0.5, &[NonSequitur, NonSequitur])],
            vec![],
        ),
        // confident correct step right before an incorrect one
        (
            vec![step(0, Correct, 0.8, &[]), step(1, Incorrect, 0.9, &[])],
            vec!["overconfidence_before_error"],
        ),
        // not confident enough
        (
            vec![step(0, Correct, 0.79, &[]), step(1, Incorrect, 0.9, &[])],
            vec![],
        ),
        // not immediately followed
        (
            vec![
                step(0, Correct, 0.9, &[]),
                step(1, Neutral, 0.9, &[]),
                step(2, Incorrect, 0.9, &[]),
            ],
            vec![],
        ),
    ];
    for (steps, want) in table {
        assert_eq!(names(&detect_patterns(&steps, &cfg())), want, "{steps:?}");
    }
    let p = detect_patterns(
        &[
            step(0, Correct, 0.95, &[LogicalError]),
            step(1, Incorrect, 0.7, &[LogicalError]),
            step(2, Incorrect, 0.6, &[]),
        ],
        &cfg(),
    );
    assert_eq!(
        names(&p),
        vec![
            "declining_confidence",
            "recurring_logical_error",
            "overconfidence_before_error"
        ]
    );
    assert_eq!(p[1].affected_steps, vec![0, 1]);
    assert_eq!(p[2].affected_steps, vec![0, 1]);
}

#[test]
fn step_answers_are_read_tolerantly() {
    let s = parse_step(
        2,
        "Here: {\"verdict\": \"Incorrect\", \"confidence\": 0.8, \"explanation\": \"x\", \"issues\": [{\"type\": \"factual error\", \"description\": \"d\", \"severity\": \"major\"}, {\"type\": \"vibes\"}], \"suggestedCorrection\": \"fix\"}",
    );
    assert_eq!(s.step_index, 2);
    assert_eq!(s.verdict, Verdict::Incorrect);
    assert_eq!(s.confidence, 0.8);
    assert_eq!(s.issues.len(), 1);
    assert_eq!(s.issues[0].kind, IssueKind::FactualError);
    assert_eq!(s.issues[0].severity, Severity::Major);
    assert_eq!(s.suggested_correction.as_deref(), Some("fix"));
    assert_eq!(s.unreadable, None);
    let s = parse_step(0, "I think it is fine");
    assert_eq!((s.verdict, s.confidence), (Verdict::Uncertain, 0.0));
    assert!(s.unreadable.is_some());
    // An object without a verdict is no judgement either.
    let s = parse_step(1, r#"{"confidence": 0.9, "explanation": "looks fine"}"#);
    assert!(
        s.unreadable
            .as_deref()
            .is_some_and(|r| r.contains("no verdict"))
    );
}

/// A verifier whose model answers every step with `reply`.
fn scripted_verifier(store: &Store, reply: &str) -> Verifier {
    Verifier {
        store: store.clone(),
        provider: crate::engines::testing::ScriptedProvider::always(reply),
        call: crate::engines::got::CallSettings::new("scripted", 256),
        prompt: String::new(),
        config: cfg(),
    }
}

fn steps_of(texts: &[&str]) -> Vec<StepInput> {
    texts
        .iter()
        .map(|s| StepInput {
            content: (*s).into(),
            kind: None,
        })
        .collect()
}

#[tokio::test]
async fn an_unreadable_step_makes_the_chain_invalid_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let verifier = scripted_verifier(&store, "the step seems fine to me");
    let steps = steps_of(&["2 + 2 = 4", "so the answer is 4"]);
    let request = VerifyRequest {
        steps,
        source: None,
        original_query: None,
        threshold: Some(0.0),
        session: None,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let outcome = verifier.verify(request, &cancel).await.unwrap();
    // Even a threshold of 0 does not make unread steps a valid chain.
    assert!(!outcome.chain.is_valid);
    assert!(
        outcome.chain.summary.contains("could not be read"),
        "{}",
        outcome.chain.summary
    );
    assert!(outcome.chain.steps.iter().all(|s| s.unreadable.is_some()));
}

/// A session with one stored verification of three steps (model verdicts correct,
/// incorrect, neutral) and the step node ids.
fn labelled_session(store: &Store) -> (SessionId, Vec<NodeId>) {
    let session = Session::new("labels", SessionSource::Glassbox);
    let run = RunId::new();
    let verdicts = ["correct", "incorrect", "neutral"];
    let nodes: Vec<Node> = verdicts
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut n = Node::new(session.id, NodeType::VerifyStep, format!("step {i}"));
            n.meta.insert("verdict".into(), json!(v));
            n
        })
        .collect();
    let ids: Vec<NodeId> = nodes.iter().map(|n| n.id).collect();
    let created = Utc::now();
    store
        .write(|w| {
            w.put_session(&session)?;
            for n in &nodes {
                w.put_node(n)?;
            }
            w.put_run(&Run {
                id: run,
                session: session.id,
                kind: RunKind::Verify,
                params: json!({"originalQuery": "Is 91 prime?"}),
                summary: json!({
                    "overallScore": 0.25,
                    "metadata": {"durationMs": 42},
                    "nodeIds": ids,
                }),
                status: RunStatus::Done,
                created_at: created,
                finished_at: Some(created),
            })
        })
        .unwrap();
    (session.id, ids)
}

/// A human checkpoint on `target`, made `age_s` seconds ago.
fn checkpoint(
    store: &Store,
    session: SessionId,
    target: NodeId,
    verdict: &str,
    correction: Option<&str>,
    age_s: i64,
) {
    let mut a = Node::new(session, NodeType::HumanAnnotation, "checkpoint");
    a.created_at = Utc::now() - chrono::Duration::seconds(age_s);
    a.meta.insert("verdict".into(), json!(verdict));
    a.meta.insert("correction".into(), json!(correction));
    let edge = match verdict {
        "verified" => EdgeType::Supports,
        "disagree" => EdgeType::Contradicts,
        _ => EdgeType::Refines,
    };
    store
        .write(|w| {
            w.put_node(&a)?;
            w.put_edge(&Edge::new(a.id, edge, target))
        })
        .unwrap();
}

fn ratings(prm: &Value) -> Vec<Value> {
    prm[0]["label"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["completions"][0]["rating"].clone())
        .collect()
}

#[test]
fn model_verdicts_become_prm800k_and_processbench_labels() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let (sid, _) = labelled_session(&store);
    let prm = prm800k(&store, sid).unwrap();
    assert_eq!(prm.as_array().unwrap().len(), 1);
    assert_eq!(ratings(&prm), vec![json!(1), json!(-1), json!(0)]);
    let steps = &prm[0]["label"]["steps"];
    assert_eq!(steps[0]["chosen_completion"], 0);
    assert_eq!(steps[1]["chosen_completion"], Value::Null);
    assert_eq!(steps[1]["human_completion"], Value::Null);
    assert_eq!(steps[1]["completions"][0]["source"], "model");
    assert_eq!(steps[1]["completions"][0]["flagged"], false);
    assert_eq!(prm[0]["label"]["finish_reason"], "found_error");
    assert_eq!(prm[0]["label"]["total_time"], 42);
    assert_eq!(prm[0]["question"]["problem"], "Is 91 prime?");
    assert_eq!(
        prm[0]["question"]["pre_generated_steps"],
        json!(["step 0", "step 1", "step 2"])
    );
    assert_eq!(prm[0]["question"]["pre_generated_verifier_score"], 0.25);
    let pb = processbench(&store, sid).unwrap();
    assert_eq!(pb[0]["label"], 1);
    assert_eq!(pb[0]["steps"], json!(["step 0", "step 1", "step 2"]));
    assert_eq!(pb[0]["generator"], Value::Null);
}

#[test]
fn the_newest_human_checkpoint_overrules_the_model_and_older_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let (sid, ids) = labelled_session(&store);
    // Step 1: disagreed with long ago, then verified: the newer verdict holds even
    // though a `contradicts` edge sorts after a `supports` one.
    checkpoint(&store, sid, ids[1], "disagree", Some("old"), 60);
    checkpoint(&store, sid, ids[1], "verified", None, 10);
    // Step 2: verified, then disagreed with a correction.
    checkpoint(&store, sid, ids[2], "verified", None, 50);
    checkpoint(&store, sid, ids[2], "disagree", Some("91 = 7 × 13"), 5);
    let prm = prm800k(&store, sid).unwrap();
    assert_eq!(ratings(&prm), vec![json!(1), json!(1), json!(-1)]);
    let steps = &prm[0]["label"]["steps"];
    assert_eq!(steps[1]["completions"][0]["source"], "human");
    assert_eq!(steps[1]["completions"][0]["modelRating"], -1);
    assert_eq!(steps[1]["completions"][0]["humanRating"], 1);
    assert_eq!(steps[1]["human_completion"], Value::Null);
    assert_eq!(steps[1]["chosen_completion"], 0);
    assert_eq!(
        steps[2]["human_completion"],
        json!({"text": "91 = 7 × 13", "rating": null, "source": "human",
               "flagged": false, "corrected_rating": null})
    );
    assert_eq!(steps[2]["chosen_completion"], Value::Null);
    assert_eq!(steps[2]["completions"][0]["modelRating"], 0);
    assert_eq!(processbench(&store, sid).unwrap()[0]["label"], 2);

    // A questionable checkpoint rates the step 0 and leaves no wrong step.
    checkpoint(&store, sid, ids[2], "questionable", Some("not sure"), 1);
    let prm = prm800k(&store, sid).unwrap();
    assert_eq!(ratings(&prm), vec![json!(1), json!(1), json!(0)]);
    assert_eq!(prm[0]["label"]["steps"][2]["human_completion"], Value::Null);
    assert_eq!(prm[0]["label"]["finish_reason"], "solution");
    assert_eq!(processbench(&store, sid).unwrap()[0]["label"], -1);
}

#[test]
fn a_session_without_verifications_has_no_labels() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let s = Session::new("plain", SessionSource::Glassbox);
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&Node::new(s.id, NodeType::Query, "q"))
        })
        .unwrap();
    assert_eq!(prm800k(&store, s.id).unwrap(), json!([]));
    assert_eq!(processbench(&store, s.id).unwrap(), json!([]));
}

#[test]
fn a_verification_commits_off_the_runtime_thread() {
    use crate::engines::testing::{PATIENCE, commits_during_polls};

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let session = Session::new("source", SessionSource::Glassbox);
    let source = Node::new(session.id, NodeType::Thinking, "91 = 7 × 13, so not prime.");
    store
        .write(|w| {
            w.put_session(&session)?;
            w.put_node(&source)
        })
        .unwrap();
    let verifier = scripted_verifier(
        &store,
        r#"{"verdict": "correct", "confidence": 0.9, "explanation": "fine"}"#,
    );
    let steps = steps_of(&["91 = 7 × 13", "so 91 is not prime"]);
    let request = VerifyRequest {
        steps,
        source: Some(source.id),
        original_query: Some("Is 91 prime?".into()),
        threshold: None,
        session: None,
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let (out, stalls) = commits_during_polls(&store, PATIENCE, verifier.verify(request, &cancel));
    assert_eq!(stalls, 0, "a commit ran on the runtime thread");
    let outcome = out.unwrap();
    // Stored in the source node's session, one node per step.
    assert_eq!(outcome.session, session.id);
    assert_eq!(outcome.nodes.len(), 2);
    assert!(outcome.chain.is_valid);
    let run = store.run(outcome.run).unwrap().unwrap();
    assert_eq!(run.summary["nodeIds"], json!(outcome.nodes));
}

use serde_json::Map;
use tokio::sync::mpsc;

use super::comparison::parse_comparison;
use super::json::parse_conclusion;
use super::*;
use crate::engines::json_extract::extract_object;

#[test]
fn conclusions_are_read_tolerantly() {
    let m = extract_object(
        "```json\n{'conclusion': 'Ship it', 'confidence': '80%', 'keyInsights': 'one', 'risks': [],}\n```",
    )
    .unwrap_or_default();
    let c = parse_conclusion(&m).unwrap_or_default();
    assert_eq!(c.conclusion, "Ship it");
    assert!((c.confidence - 0.8).abs() < 1e-9);
    assert_eq!(c.key_insights, vec!["one".to_string()]);
    assert!(parse_conclusion(&Map::new()).is_err());
}

#[test]
fn comparisons_drop_unknown_styles_and_default_levels() {
    let m = extract_object(
        r#"{"convergencePoints": [{"topic": "t", "agreement": "FULL", "styles": ["Conservative", "wizard"]}],
            "divergencePoints": [{"topic": "d", "positions": [{"style": "aggressive", "position": "p", "confidence": 70}], "significance": "huge"}],
            "metaInsight": "m", "recommendedApproach": {"style": "balanced", "rationale": "r", "confidence": 0.6}}"#,
    )
    .unwrap_or_default();
    let c = parse_comparison(&m);
    assert_eq!(c.convergence_points[0].agreement_level, Agreement::Full);
    assert_eq!(
        c.convergence_points[0].styles,
        vec![ForkStyle::Conservative]
    );
    assert_eq!(c.divergence_points[0].significance, Significance::Medium);
    assert!((c.divergence_points[0].positions[0].confidence - 0.7).abs() < 1e-9);
    assert_eq!(
        c.recommended_approach.map(|r| r.style),
        Some(ForkStyle::Balanced)
    );
}

#[test]
fn styles_parse_case_insensitively() {
    assert_eq!(
        "Contrarian".parse::<ForkStyle>().ok(),
        Some(ForkStyle::Contrarian)
    );
    assert!("wizard".parse::<ForkStyle>().is_err());
}

/// An answer every fork call can read: a conclusion, a debate response, a comparison.
const ANSWER: &str = r#"{"conclusion": "Ship it", "confidence": 0.9, "keyInsights": ["small steps"],
    "response": "Still ship it", "positionChanged": false,
    "convergencePoints": [{"topic": "pace", "agreementLevel": "full", "styles": ["conservative", "aggressive"], "summary": "s"}],
    "divergencePoints": [], "metaInsight": "they agree",
    "claims": [{"text": "Ship it in small steps", "sources": ["A1", "B2"]}]}"#;

#[test]
fn fork_debate_steer_and_checkpoint_leave_the_runtime_thread_free() {
    use crate::engines::prompts::Prompts;
    use crate::engines::testing::{PATIENCE, ScriptedProvider, commits_during_polls};
    use crate::store::{Node, NodeType, RunStatus};

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let engine = ForkEngine::new(
        store.clone(),
        ScriptedProvider::always(ANSWER),
        ForkPrompts::from_prompts(&Prompts::builtin()),
        ForkSettings::new("scripted"),
    );
    let styles = vec![ForkStyle::Conservative, ForkStyle::Aggressive];
    let (events, _seen) = mpsc::unbounded_channel();
    let (out, stalls) = commits_during_polls(&store, PATIENCE, async {
        let fork = engine
            .fork(
                ForkRequest {
                    session: None,
                    query: "Ship on Friday?".into(),
                    styles: styles.clone(),
                    guidance: Vec::new(),
                },
                &events,
            )
            .await?;
        let debate = engine
            .debate(
                ForkRequest {
                    session: Some(fork.session),
                    query: "Ship on Friday?".into(),
                    styles: styles.clone(),
                    guidance: Vec::new(),
                },
                1,
                &events,
            )
            .await?;
        let merge = SteerAction::Merge {
            styles: styles.clone(),
            focus_area: None,
        };
        let steer = engine.steer(fork.run, merge, &events).await?;
        let branch = fork.data.branches[0].node_id.unwrap_or(fork.nodes[0]);
        let checkpoint = engine
            .checkpoint(branch, Verdict::Disagree, Some("too risky".into()), &events)
            .await?;
        Ok::<_, ForkError>((fork, debate, steer, checkpoint))
    });
    let (fork, debate, steer, checkpoint) = out.unwrap();
    assert_eq!(stalls, 0, "a commit ran on the runtime thread");
    assert!(fork.data.branches.iter().all(BranchResult::ok));
    assert!(debate.data.consensus_reached);
    assert!(debate.data.consensus_node_id.is_some());
    assert!(matches!(steer.data, SteerResult::Merge { .. }));
    assert!(checkpoint.alternative_branch.is_some());
    let runs = store.session_runs(fork.session).unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r.status == RunStatus::Done));
    for id in fork.nodes.iter().chain(&debate.nodes).chain(&steer.nodes) {
        assert!(
            store.node(*id).unwrap().is_some(),
            "node {id} was not stored"
        );
    }

    // A fork from inside a stored thinking trace reads it off the runtime thread too.
    let mut thinking = Node::new(fork.session, NodeType::Thinking, "First.\n\nSecond.");
    let steps = crate::engines::thinkgraph::analyze(&thinking.text).steps;
    crate::engines::thinkgraph::Step::store_all(&mut thinking, &steps);
    store.write(|w| w.put_node(&thinking)).unwrap();
    let (out, stalls) = commits_during_polls(&store, PATIENCE, async {
        engine
            .fork_from_step(thinking.id, 1, styles.clone(), Vec::new(), &events)
            .await
    });
    assert_eq!(stalls, 0, "a commit ran on the runtime thread");
    let from_step = out.unwrap();
    assert_eq!(from_step.nodes[0], thinking.id);
    assert_eq!(from_step.data.branches.len(), 2);
}

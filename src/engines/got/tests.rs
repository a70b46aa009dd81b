use super::parse::{parse_score, parse_thoughts};
use super::*;

#[test]
fn thoughts_are_read_from_json_or_lines() {
    assert_eq!(
        parse_thoughts("Sure:\n```json\n{\"thoughts\": [\"a\", {\"content\": \"b\"}]}\n```"),
        vec!["a", "b"]
    );
    assert_eq!(
        parse_thoughts("1. first\n- second\n\n"),
        vec!["first", "second"]
    );
}

#[test]
fn scores_are_clamped_and_failures_score_zero() {
    assert_eq!(parse_score("{\"score\": 0.42}").0, 0.42);
    assert_eq!(parse_score("{\"score\": \"85%\"}").0, 0.85);
    assert_eq!(parse_score("{\"score\": -3}").0, 0.0);
    assert_eq!(parse_score("I would say 0.6 overall").0, 0.6);
    assert_eq!(parse_score("no idea").0, 0.0);
}

#[test]
fn params_out_of_range_are_rejected_with_the_range() {
    let tuning = GotTuning::default();
    let mut p = GotParams::from_config(&tuning);
    assert_eq!(p.max_depth, 5);
    assert_eq!(p.branching_factor, 3);
    assert_eq!(p.max_thoughts, 50);
    assert_eq!(p.prune_threshold, 0.3);
    assert!(p.validate(&tuning).is_ok());
    p.max_depth = 21;
    assert_eq!(
        p.validate(&tuning).map_err(|e| e.to_string()),
        Err("maxDepth = 21 is out of range (allowed 1–20)".into())
    );
    p.max_depth = 20;
    p.branching_factor = 0;
    assert!(p.validate(&tuning).is_err());
    p.branching_factor = 10;
    p.max_thoughts = 101;
    assert!(p.validate(&tuning).is_err());
}

#[test]
fn every_strategy_commits_off_the_runtime_thread() {
    use crate::engines::testing::{PATIENCE, ScriptedProvider, commits_during_polls};
    use tokio::sync::mpsc;

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let engine = GotEngine {
        store: store.clone(),
        provider: ScriptedProvider::always(
            r#"{"thoughts": ["cache it", "index it"], "score": 0.9, "reasoning": "sound", "thought": "cache and index"}"#,
        ),
        call: CallSettings::new("scripted", 256),
        prompts: GotPrompts::default(),
        config: GotTuning::default(),
    };
    for strategy in Strategy::ALL {
        let mut params = GotParams::from_config(&engine.config);
        params.strategy = strategy;
        params.max_depth = 2;
        params.branching_factor = 2;
        params.max_thoughts = 8;
        let (events, _seen) = mpsc::unbounded_channel();
        let (steer, controls) = mpsc::unbounded_channel();
        // Starts paused: the search waits for this resume before it expands anything.
        steer.send(GotControl::Resume).unwrap();
        let request = GotRequest {
            problem: "Make the page fast".into(),
            session: None,
            params,
            start_paused: true,
        };
        let (out, stalls) = commits_during_polls(&store, PATIENCE, async {
            engine
                .run(request, events, controls, CancellationToken::new())
                .await
        });
        assert_eq!(
            stalls, 0,
            "{strategy:?}: a commit ran on the runtime thread"
        );
        let result = out.unwrap();
        assert!(result.stats.total_thoughts > 2, "{strategy:?}: {result:?}");
        assert!(result.stats.aggregations_made > 0, "{strategy:?}");
        let run = store.run(result.run).unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Done, "{strategy:?}");
        for t in &result.thoughts {
            let node = store.node(t.id).unwrap().unwrap();
            assert_eq!(node.meta["state"], json!(t.state.as_str()), "{strategy:?}");
        }
        drop(steer);
    }
}

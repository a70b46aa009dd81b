mod tools;

use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::compaction::server_side_block;
use super::*;
use crate::engines::llm::{Message, ThinkingMode};
use crate::store::{Node, NodeId, NodeType, SessionId};

#[test]
fn history_pairs_queries_with_answers_and_drops_a_dangling_query() {
    let s = SessionId::new();
    let nodes = vec![
        Node::new(s, NodeType::Query, "q1"),
        Node::new(s, NodeType::Thinking, "t1"),
        Node::new(s, NodeType::Response, "a1"),
        Node::new(s, NodeType::Query, "q2"),
    ];
    let h = session_history(&nodes, &Default::default());
    assert_eq!(h, vec![Message::user("q1"), Message::assistant("a1")]);
}

#[test]
fn a_compaction_summary_replaces_what_it_supersedes() {
    let s = SessionId::new();
    let q1 = Node::new(s, NodeType::Query, "q1");
    let a1 = Node::new(s, NodeType::Response, "a1");
    let q2 = Node::new(s, NodeType::Query, "q2");
    let a2 = Node::new(s, NodeType::Response, "a2");
    let c = Node::new(s, NodeType::Compaction, "they asked q1");
    let superseded = [q1.id, a1.id].into_iter().collect();
    let h = session_history(&[q1, a1, q2, a2, c], &superseded);
    assert_eq!(h.len(), 4);
    assert!(h[0].content.contains("they asked q1"));
    assert_eq!(h[2], Message::user("q2"));
    assert_eq!(h[3], Message::assistant("a2"));
}

#[test]
fn a_provider_summary_goes_back_with_the_answer_of_its_turn() {
    let s = SessionId::new();
    let q1 = Node::new(s, NodeType::Query, "q1");
    let a1 = Node::new(s, NodeType::Response, "a1");
    let q2 = Node::new(s, NodeType::Query, "q2");
    let mut c = Node::new(s, NodeType::Compaction, "sum");
    c.meta.insert(SERVER_SIDE.into(), json!(true));
    c.meta.insert("encrypted_content".into(), json!("opaque"));
    let a2 = Node::new(s, NodeType::Response, "a2");
    let q3 = Node::new(s, NodeType::Query, "q3");
    let block = server_side_block(&c);
    assert_eq!(block.encrypted_content.as_deref(), Some("opaque"));
    let superseded = [q1.id, a1.id].into_iter().collect();
    let nodes = [q1, a1, q2.clone(), c.clone(), a2, q3.clone()];
    assert_eq!(
        session_history(&nodes, &superseded),
        vec![
            Message::user("q2"),
            Message::assistant("a2").with_compaction(block.clone())
        ]
    );
    // The compacting turn gave no answer: the summary goes back on its own.
    let a3 = Node::new(s, NodeType::Response, "a3");
    let h = session_history(&[q2.clone(), c.clone(), q3, a3], &Default::default());
    assert_eq!(
        h,
        vec![
            Message::user("q2"),
            Message::assistant("").with_compaction(block.clone()),
            Message::user("q3"),
            Message::assistant("a3"),
        ]
    );
    let h = session_history(&[q2, c], &Default::default());
    assert_eq!(h[1], Message::assistant("").with_compaction(block));
    assert_eq!(h.len(), 2);
}

#[test]
fn a_branch_sends_the_history_up_to_its_node() {
    let s = SessionId::new();
    let q1 = Node::new(s, NodeType::Query, "q1");
    let t1 = Node::new(s, NodeType::Thinking, "hmm");
    let a1 = Node::new(s, NodeType::Response, "a1");
    let q2 = Node::new(s, NodeType::Query, "q2");
    let a2 = Node::new(s, NodeType::Response, "a2");
    let nodes = vec![q1.clone(), t1.clone(), a1.clone(), q2, a2];
    assert_eq!(
        history_until(&nodes, a1.id).unwrap(),
        vec![Message::user("q1"), Message::assistant("a1")]
    );
    assert_eq!(
        history_until(&nodes, t1.id).unwrap(),
        vec![
            Message::user("q1"),
            Message::assistant("My reasoning so far:\nhmm")
        ]
    );
    assert_eq!(history_until(&nodes, q1.id).unwrap(), Vec::<Message>::new());
    assert!(history_until(&nodes, NodeId::new()).is_none());
}

#[test]
fn a_failed_turn_is_not_sent_twice() {
    let s = SessionId::new();
    let nodes = vec![
        Node::new(s, NodeType::Query, "q1"),
        Node::new(s, NodeType::Query, "q1 again"),
        Node::new(s, NodeType::Response, "a"),
    ];
    let h = session_history(&nodes, &Default::default());
    assert_eq!(h, vec![Message::user("q1 again"), Message::assistant("a")]);
}

fn routing() -> RoutingParams {
    RoutingParams::default()
}

#[test]
fn routes_by_pattern_and_length() {
    let r = routing();
    assert_eq!(classify("hi there", &r), Route::Simple);
    assert_eq!(
        classify(
            "What is a monad, in the sense functional programmers use it?",
            &r
        ),
        Route::Simple
    );
    assert_eq!(classify("Please debug this", &r), Route::Complex);
    assert_eq!(
        classify(
            &"How do tides work across the different oceans of the world? ".repeat(2),
            &r
        ),
        Route::Standard
    );
    assert_eq!(
        classify(
            &"Tell me about tides and the moon and the sun. ".repeat(20),
            &r
        ),
        Route::Complex
    );
    assert_eq!(
        classify(
            "Walk me through it step by step, please, with care and rigour",
            &r
        ),
        Route::Complex
    );
}

#[test]
fn an_invalid_routing_pattern_is_skipped_and_the_others_still_match() {
    let mut r = routing();
    r.complex_patterns.insert(0, "(unclosed".into());
    r.simple_patterns.push("[z-a]".into());
    assert_eq!(classify("Please DEBUG this", &r), Route::Complex);
    assert_eq!(classify("hi there", &r), Route::Simple);
    r.complex_patterns = vec!["(".into(), "[".into()];
    assert_eq!(
        classify(
            "Please debug this: it is long enough to be a standard question",
            &r
        ),
        Route::Standard
    );
}

#[test]
fn output_tokens_add_up_over_responses() {
    let s = SessionId::new();
    let mut a = Node::new(s, NodeType::Response, "a");
    a.meta.insert(
        "usage".into(),
        json!({"input_tokens": 5, "output_tokens": 7}),
    );
    let mut b = Node::new(s, NodeType::Response, "b");
    b.meta.insert(
        "usage".into(),
        json!({"input_tokens": 5, "output_tokens": 3}),
    );
    assert_eq!(
        session_output_tokens(&[a, Node::new(s, NodeType::Query, "q"), b]),
        10
    );
}

#[test]
fn titles_are_the_first_line_cut_to_80() {
    assert_eq!(title_from("\n  Why?\nmore"), "Why?");
    let long = "x".repeat(100);
    assert_eq!(title_from(&long).chars().count(), 81);
}

fn ask(session: Option<SessionId>, question: &str) -> TurnRequest {
    TurnRequest {
        session,
        question: question.into(),
        system: None,
        thinking: ThinkingMode::Off,
        effort: None,
        max_tokens: 256,
        temperature: None,
        top_p: None,
        seed: None,
        branch_from: None,
    }
}

#[test]
fn turns_commit_off_the_runtime_thread() {
    use crate::engines::testing::{PATIENCE, Reply, ScriptedProvider, commits_during_polls};

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let provider = ScriptedProvider::new(vec![
        // 1: thinking with a decision point, a tool call, an answer.
        Reply {
            thinking:
                "I could either cache it or index it. I'll go with the cache.\n\nTherefore cache."
                    .into(),
            tool: Some(("lookup".into(), json!({"q": "cache"}))),
            text: "Cache it.".into(),
            pieces: 3,
            ..Reply::default()
        },
        // 2: a plain answer.
        Reply::text("Then index it."),
        // 3: the summary the orchestrator asks for before turn 3, 4: turn 3's answer.
        Reply::text("They asked about caching."),
        Reply::text("Both."),
        // 5: the provider compacts while it answers.
        Reply {
            compaction: Some("Caching and indexing were discussed.".into()),
            text: "Done.".into(),
            ..Reply::default()
        },
        // 6: the branch.
        Reply::text("Or neither."),
    ]);
    let roomy = Orchestrator::new(store.clone(), provider, "scripted");
    let mut tight = roomy.clone();
    tight.context_tokens = 10;
    tight.budget.keep_recent_turns = 1;
    let (events, mut seen) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let (out, stalls) = commits_during_polls(&store, PATIENCE, async {
        let first = roomy
            .run_turn(
                ask(None, "How do I speed it up?"),
                events.clone(),
                cancel.clone(),
            )
            .await?;
        let s = Some(first.session);
        let second = roomy
            .run_turn(ask(s, "And then?"), events.clone(), cancel.clone())
            .await?;
        let third = tight
            .run_turn(ask(s, "Which one?"), events.clone(), cancel.clone())
            .await?;
        let fourth = roomy
            .run_turn(ask(s, "Summing up?"), events.clone(), cancel.clone())
            .await?;
        let mut branch = ask(s, "What if neither?");
        branch.branch_from = second.response;
        let fifth = roomy
            .run_turn(branch, events.clone(), cancel.clone())
            .await?;
        anyhow::Ok([first, second, third, fourth, fifth])
    });
    assert_eq!(stalls, 0, "a commit ran on the runtime thread");
    let turns = out.unwrap();
    assert!(
        turns
            .iter()
            .all(|t| t.response.is_some() && t.error.is_none())
    );
    let session = turns[0].session;
    let nodes = store.session_nodes(session).unwrap();
    let count = |kind| nodes.iter().filter(|n| n.kind == kind).count();
    assert_eq!(count(NodeType::Query), 5);
    assert_eq!(count(NodeType::ToolCall), 1);
    // One compaction by the orchestrator (turn 3), one by the provider (turn 4).
    assert_eq!(count(NodeType::Compaction), 2);
    let thinking = turns[0].thinking.unwrap();
    assert!(!store.decision_points(thinking).unwrap().is_empty());
    let stored = store.session(session).unwrap().unwrap();
    assert_eq!(stored.meta[COMPACTIONS], json!(2));
    let mut compacted = 0;
    while let Ok(ev) = seen.try_recv() {
        compacted += usize::from(matches!(ev, TurnEvent::Compacted { .. }));
    }
    assert_eq!(compacted, 2);
}

#[tokio::test]
async fn streamed_deltas_are_committed_in_batches() {
    use crate::engines::testing::{Reply, ScriptedProvider};

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let thinking = "Step by step, the load grows with the users. ".repeat(40);
    let text = "Add a cache in front of the database. ".repeat(40);
    let provider = ScriptedProvider::new(vec![Reply {
        thinking: thinking.clone(),
        text: text.clone(),
        pieces: 400,
        ..Reply::default()
    }]);
    let o = Orchestrator::new(store.clone(), provider, "scripted");
    let (events, _seen) = mpsc::unbounded_channel();
    let before = store.last_seq().unwrap();
    let turn = o
        .run_turn(
            ask(None, "Why is it slow?"),
            events,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    // 800 deltas; a commit per delta would journal at least that many changes.
    let journalled = store.last_seq().unwrap() - before;
    assert!(journalled < 40, "{journalled} journal entries for one turn");
    let stored = |id: Option<NodeId>| store.node(id.unwrap()).unwrap().unwrap().text;
    assert_eq!(stored(turn.thinking), thinking);
    assert_eq!(stored(turn.response), text);
}

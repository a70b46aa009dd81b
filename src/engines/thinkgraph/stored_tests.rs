//! Tests of how steps are kept on their thinking node: by offset and length into the node's
//! own text, the text itself only where it is not found there.

use super::tests::{analyze_chunked, fragment};
use super::*;
use crate::store::{NodeType, SessionId};
use proptest::prelude::*;

fn stored(node: &Node) -> &Vec<serde_json::Value> {
    node.meta[STEPS_KEY].as_array().unwrap()
}

#[test]
fn steps_found_while_streaming_are_kept_without_their_text() {
    let text = "First I weigh the budget.\n\nMaybe the cache helps, but it may not.\n\n\
                So I will choose the cache.";
    let mut node = Node::new(SessionId::new(), NodeType::Thinking, "");
    let mut builder = ThinkGraphBuilder::new();
    let mut updates = Vec::new();
    for piece in text.as_bytes().chunks(7) {
        let piece = std::str::from_utf8(piece).unwrap();
        node.text.push_str(piece);
        updates.extend(builder.push(piece));
        for u in updates.drain(..) {
            if let GraphUpdate::Step(s) = u {
                s.append_to(&mut node);
            }
        }
    }
    for u in builder.finish() {
        if let GraphUpdate::Step(s) = u {
            s.append_to(&mut node);
        }
    }
    assert_eq!(Step::of(&node), analyze(text).steps);
    assert_eq!(Step::count(&node), 3);
    for v in stored(&node) {
        // [index, kind, start, len, confidence]: no text.
        assert_eq!(v.as_array().unwrap().len(), 5, "{v}");
        assert!(v[3].as_u64().unwrap() > 0);
    }
    for (v, step) in stored(&node).iter().zip(analyze(text).steps) {
        assert_eq!(v[0], step.index);
        assert_eq!(v[1], step.kind.as_str());
        assert_eq!(v[2], step.start);
    }
}

#[test]
fn a_step_not_found_at_its_offset_keeps_its_text() {
    let mut node = Node::new(SessionId::new(), NodeType::Thinking, "Other text here.");
    let steps = analyze("First.\n\nSecond.").steps;
    Step::store_all(&mut node, &steps);
    assert!(stored(&node).iter().all(|v| v[5].is_string()));
    assert_eq!(Step::of(&node), steps);
}

#[test]
fn older_steps_with_text_and_broken_offsets_still_read() {
    let mut node = Node::new(SessionId::new(), NodeType::Thinking, "héllo world");
    node.meta.insert(
        STEPS_KEY.into(),
        serde_json::json!([
            {"index": 0, "kind": "analysis", "text": "written before", "start": 0},
            {"index": 1, "kind": "conclusion", "start": 2, "len": 3},
            {"index": 2, "kind": "conclusion", "start": 7, "len": 999},
            {"index": 3, "kind": "analysis"}
        ]),
    );
    let texts: Vec<String> = Step::of(&node).into_iter().map(|s| s.text).collect();
    // Offset 2 falls inside "é": no text rather than a panic; past the end likewise.
    assert_eq!(texts, ["written before", "", "", ""]);
}

#[test]
fn rows_and_older_objects_read_alike_and_odd_rows_are_left_out() {
    let mut node = Node::new(SessionId::new(), NodeType::Thinking, "héllo world");
    node.meta.insert(
        STEPS_KEY.into(),
        serde_json::json!([
            [0, "analysis", 7, 5, 0.7],
            {"index": 1, "kind": "conclusion", "start": 0, "len": 6, "confidence": 0.4},
            [2, "hypothesis", 0, 3, 0.5, "kept apart"],
            [3, "no such kind", 0, 1, 0.5],
            [4, "analysis", 0],
            [-1, "analysis", 0, 1, 0.5]
        ]),
    );
    let steps = Step::of(&node);
    let read: Vec<_> = steps
        .iter()
        .map(|s| (s.index, s.kind, s.text.as_str(), s.confidence))
        .collect();
    assert_eq!(
        read,
        [
            (0, StepKind::Analysis, "world", 0.7),
            (1, StepKind::Conclusion, "héllo", 0.4),
            (2, StepKind::Hypothesis, "kept apart", 0.5),
        ]
    );
    // What a row says is what the step was: written again, it is the same row.
    let mut again = Node::new(SessionId::new(), NodeType::Thinking, "héllo world");
    Step::store_all(&mut again, &steps[..1]);
    assert_eq!(
        again.meta[STEPS_KEY],
        serde_json::json!([[0, "analysis", 7, 5, 0.7]])
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stored_steps_read_back_as_they_were_found(
        text in fragment(),
        cuts in proptest::collection::vec(0usize..600, 0..6),
    ) {
        let analysis = analyze_chunked(&text, &cuts);
        let mut node = Node::new(SessionId::new(), NodeType::Thinking, &text);
        for s in &analysis.steps {
            s.append_to(&mut node);
        }
        prop_assert_eq!(Step::of(&node), analysis.steps.clone());
        let mut whole = Node::new(SessionId::new(), NodeType::Thinking, &text);
        Step::store_all(&mut whole, &analysis.steps);
        // Stored one by one as they stream, or all at once: the same entries.
        let streamed = node.meta.get(STEPS_KEY).cloned().unwrap_or(serde_json::json!([]));
        prop_assert_eq!(&whole.meta[STEPS_KEY], &streamed);
        prop_assert!(stored(&whole).iter().all(|v| v.get(5).is_none()));
    }
}

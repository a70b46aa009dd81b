use serde_json::json;

use super::output::SequentialOutput;
use super::thoughts::critique_from_value;
use super::*;

#[test]
fn critiques_are_read_from_single_or_many_blocks() {
    let c = critique_from_value(
        &json!({"role": "assistant", "content": {"type": "text", "text": "gap"}, "model": "m"}),
    )
    .unwrap();
    assert_eq!((c.text.as_str(), c.model.as_deref()), ("gap", Some("m")));
    let c = critique_from_value(&json!({"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}))
        .unwrap();
    assert_eq!(c.text, "a\nb");
    assert!(
        critique_from_value(&json!({"code": -1, "message": "no"}))
            .unwrap_err()
            .contains("declined: no")
    );
    assert!(critique_from_value(&json!({"content": {"type": "text", "text": " "}})).is_err());
}

#[test]
fn the_reference_output_keeps_its_field_order() {
    let args = ThoughtArgs {
        thought: "t".into(),
        thought_number: 3,
        total_thoughts: 2,
        ..Default::default()
    };
    let rec = Recorded {
        node: crate::store::Node::new(SessionId::new(), crate::store::NodeType::LedgerThought, "t"),
        session: SessionId::new(),
        total_thoughts: 3,
        history_len: 3,
        branches: vec!["b".into()],
        revises: None,
        branches_from: None,
        warnings: vec![],
    };
    let text = serde_json::to_string_pretty(&SequentialOutput::new(&args, &rec)).unwrap();
    assert_eq!(
        text,
        "{\n  \"thoughtNumber\": 3,\n  \"totalThoughts\": 3,\n  \"nextThoughtNeeded\": false,\n  \"branches\": [\n    \"b\"\n  ],\n  \"thoughtHistoryLength\": 3\n}"
    );
}

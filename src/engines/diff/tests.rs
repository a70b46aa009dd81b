use serde_json::json;

use super::merge::read_claims;
use super::*;
use crate::store::{Node, NodeId, NodeType, SessionId};

fn grid(a: &[&str], b: &[&str]) -> Vec<Vec<f64>> {
    a.iter()
        .map(|x| b.iter().map(|y| lexical_similarity(x, y)).collect())
        .collect()
}

#[test]
fn identical_lists_align_one_to_one() {
    let a = [
        "rent costs less",
        "buying builds equity",
        "moving is likely",
    ];
    assert_eq!(
        align(&grid(&a, &a), 0.2, 0.0),
        vec![(Some(0), Some(0)), (Some(1), Some(1)), (Some(2), Some(2))]
    );
}

#[test]
fn a_step_only_one_side_has_stays_unpaired_and_order_is_kept() {
    let a = [
        "rent costs less each month",
        "interest rates are high now",
        "so rent",
    ];
    let b = ["rent costs less each month", "so rent"];
    assert_eq!(
        align(&grid(&a, &b), 0.2, 0.0),
        vec![(Some(0), Some(0)), (Some(1), None), (Some(2), Some(1))]
    );
    // The other way round, the extra step is B's.
    assert_eq!(
        align(&grid(&b, &a), 0.2, 0.0),
        vec![(Some(0), Some(0)), (None, Some(1)), (Some(1), Some(2))]
    );
}

#[test]
fn unrelated_steps_are_never_paired_and_crossings_are_not_made() {
    let a = ["alpha beta", "gamma delta"];
    let b = ["gamma delta", "alpha beta"];
    let rows = align(&grid(&a, &b), 0.2, 0.0);
    let pairs: Vec<_> = rows
        .iter()
        .filter(|(i, j)| i.is_some() && j.is_some())
        .collect();
    assert_eq!(pairs.len(), 1, "{rows:?}");
    assert_eq!(rows.len(), 3);
    let none = align(&grid(&["alpha"], &["omega"]), 0.2, 0.0);
    assert_eq!(none, vec![(Some(0), None), (None, Some(0))]);
    assert!(align(&[], 0.2, 0.0).is_empty());
}

#[test]
fn lexical_similarity_is_one_for_the_same_words_and_zero_for_none() {
    assert!((lexical_similarity("Rent is cheaper.", "rent is  cheaper") - 1.0).abs() < 1e-9);
    assert_eq!(lexical_similarity("apples", "oranges"), 0.0);
    let s = lexical_similarity("rent is cheaper here", "buying is cheaper there");
    assert!(s > 0.0 && s < 1.0, "{s}");
}

#[test]
fn a_fork_branch_reads_as_its_conclusion_then_its_lists() {
    let mut n = Node::new(SessionId::new(), NodeType::ForkBranch, "Rent for now.");
    n.meta
        .insert("keyInsights".into(), json!(["Flexibility matters", " "]));
    n.meta.insert("risks".into(), json!(["Rents may rise"]));
    let steps = steps_of(&n);
    let got: Vec<(u32, &str, &str)> = steps
        .iter()
        .map(|s| (s.index, s.kind.as_str(), s.text.as_str()))
        .collect();
    assert_eq!(
        got[1..],
        [
            (1, "insight", "Flexibility matters"),
            (2, "risk", "Rents may rise")
        ]
    );
    assert_eq!(got[0].2, "Rent for now.");
}

#[test]
fn other_nodes_are_cut_into_paragraph_steps() {
    let n = Node::new(
        SessionId::new(),
        NodeType::Response,
        "First point.\n\nSecond point.\n\n",
    );
    let texts: Vec<String> = steps_of(&n).into_iter().map(|s| s.text).collect();
    assert_eq!(texts, ["First point.", "Second point."]);
    assert!(steps_of(&Node::new(SessionId::new(), NodeType::Response, "  ")).is_empty());
}

fn source(letter: char, steps: &[&str]) -> MergeSource {
    MergeSource {
        letter,
        node: NodeId::new(),
        kind: NodeType::ForkBranch,
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, t)| DiffStep {
                index: i as u32,
                kind: "analysis".into(),
                text: t.to_string(),
            })
            .collect(),
    }
}

#[test]
fn claims_name_existing_steps_or_are_new() {
    let s = [source('A', &["x", "y"]), source('B', &["z"])];
    let raw = r#"{"claims": [
        {"text": "both", "sources": ["A2", "b1", "A2"]},
        {"text": "invented", "sources": ["C4", "A9"]},
        {"text": "fresh", "sources": ["new"]},
        {"text": "as a string", "sources": "A1, [B1]"},
        {"text": "  ", "sources": ["A1"]}
    ]}"#;
    let c = read_claims(raw, &s).unwrap();
    assert_eq!(c.len(), 4);
    assert_eq!(
        c[0].provenance,
        vec![
            Provenance {
                node: s[0].node,
                steps: vec![1]
            },
            Provenance {
                node: s[1].node,
                steps: vec![0]
            }
        ]
    );
    assert!(!c[0].new);
    assert!(c[1].new && c[1].provenance.is_empty());
    assert!(c[2].new);
    assert_eq!(c[3].provenance.len(), 2);
    assert!(read_claims(r#"{"claims": []}"#, &s).is_err());
    assert!(read_claims("no json", &s).is_err());
}

#[test]
fn the_merge_schema_lists_only_the_given_references() {
    let spec = merge_schema(&["A1".into(), "B1".into()]);
    let text = spec.input_schema.to_string();
    assert!(text.contains(r#"["A1","B1","new"]"#), "{text}");
}

#[test]
fn the_cache_key_ignores_order_case_and_spacing_but_not_the_model() {
    assert_eq!(cache_key("m", "A b", "c"), cache_key("m", "c", "a  B"));
    assert_ne!(cache_key("m", "a", "c"), cache_key("n", "a", "c"));
}

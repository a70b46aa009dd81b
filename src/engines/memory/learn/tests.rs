#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{Duration, TimeZone, Utc};
use serde_json::json;

use super::*;
use crate::engines::memory::assoc::{LearnInfo, TemporalScores, s_temporal};
use crate::engines::memory::index::{Filter, SearchMode};
use crate::engines::memory::{MemoryParams, NewMemory};
use crate::store::learning::{
    CLOCK_MAX_KEYS, EventSource, LearningEvent, LearningEventType, LearningStatus,
    TemporalConfidence, VectorClock, clock_compare, clock_merge, clock_trim, idempotency_key,
};
use crate::store::{MemoryScope, MemoryTier, Node, NodeType, Session, SessionSource};

fn memory() -> (tempfile::TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("m.redb"));
    let m = Memory::new(
        store,
        MemoryParams::default(),
        None,
        MemoryScope::Project("/p".into()),
        Vec::new(),
    );
    (dir, m)
}

fn insert(m: &Memory, text: &str, tags: &[&str]) -> MemoryId {
    let mut n = NewMemory::archival(text, "cli");
    n.tags = tags.iter().map(|t| t.to_string()).collect();
    m.insert(n).unwrap().ids[0]
}

fn event(
    kind: LearningEventType,
    id: MemoryId,
    key: &str,
    payload: serde_json::Value,
) -> LearningEvent {
    let Value::Object(p) = payload else { panic!() };
    LearningEvent::new(kind, id, key.into(), "s", "/p", EventSource::UserReview, p)
}

#[test]
fn an_insert_is_an_extraction_event_and_its_row_a_projection() {
    let (_d, m) = memory();
    let id = insert(&m, "Use redb for the store", &["Storage", "redb"]);
    let evs = m.store().learning_events_of(id).unwrap();
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].event_type, LearningEventType::LearningExtracted);
    assert_eq!(evs[0].payload["extractor_version"], "manual");
    let l = m.store().learning(id).unwrap().unwrap();
    assert_eq!(l.concepts, vec!["redb", "storage"]);
    assert_eq!(m.store().concept_members("redb").unwrap(), vec![id]);
    assert_eq!(
        m.store().memory(id).unwrap().unwrap().content,
        "Use redb for the store"
    );
    assert_eq!(m.store().rebuild_learnings(false).unwrap().differences, 0);
}

#[test]
fn events_are_validated_and_deduplicated_by_key() {
    let (_d, m) = memory();
    let id = insert(&m, "A fact", &["x"]);
    let store = m.store();
    // A missing payload key is refused with its name.
    let bad = event(LearningEventType::LearningReinforced, id, "k1", json!({}));
    let err = store
        .write(|w| w.append_learning_event(bad))
        .unwrap_err()
        .to_string();
    assert!(err.contains("reinforcement_delta"), "{err}");
    // An unknown type does not even parse.
    let unknown = json!({"event_type": "LearningForgotten"});
    assert!(serde_json::from_value::<LearningEventType>(unknown["event_type"].clone()).is_err());
    assert!(
        "LearningForgotten"
            .parse::<LearningEventType>()
            .unwrap_err()
            .contains("unknown")
    );
    // Events on a learning that was never extracted are refused.
    let orphan = event(
        LearningEventType::LearningReinforced,
        MemoryId::new(),
        "k2",
        json!({"reinforcement_delta": 0.1}),
    );
    assert!(store.write(|w| w.append_learning_event(orphan)).is_err());
    // The same key twice: one event.
    let good = || {
        event(
            LearningEventType::LearningReinforced,
            id,
            "k3",
            json!({"reinforcement_delta": 0.1}),
        )
    };
    let a = store.write(|w| w.append_learning_event(good())).unwrap();
    let b = store.write(|w| w.append_learning_event(good())).unwrap();
    assert!(a.new && !b.new && a.event_id == b.event_id);
    assert!((store.learning(id).unwrap().unwrap().reinforcement - 0.6).abs() < 1e-9);
    // A bad multiplier is refused.
    let bad = event(
        LearningEventType::LearningContradicted,
        id,
        "k4",
        json!({"contradicted_with": id.to_string(), "contradiction_multiplier": 7}),
    );
    assert!(store.write(|w| w.append_learning_event(bad)).is_err());
}

#[test]
fn the_lifecycle_folds_and_a_replay_agrees_and_repairs() {
    let (_d, m) = memory();
    let a = insert(&m, "Deploy on Fridays", &["deploy"]);
    let b = insert(&m, "Never deploy on Fridays", &["deploy"]);
    let store = m.store();
    store
        .write(|w| {
            w.append_learning_event(event(
                LearningEventType::LearningContradicted,
                a,
                "c1",
                json!({"contradicted_with": b.to_string(), "contradiction_multiplier": 0.7}),
            ))?;
            w.append_learning_event(event(
                LearningEventType::LearningSuperseded,
                a,
                "s1",
                json!({"superseded_by": b.to_string()}),
            ))
        })
        .unwrap();
    let la = store.learning(a).unwrap().unwrap();
    assert!((la.reinforcement - 0.5 * 0.7 * 0.5).abs() < 1e-9);
    assert_eq!(la.status, LearningStatus::Superseded);
    assert!(la.valid_until.is_some());
    // Removing archives: the row leaves memories, the events stay.
    assert_eq!(m.remove(&[b]).unwrap(), 1);
    assert!(store.memory(b).unwrap().is_none());
    assert_eq!(
        store.learning(b).unwrap().unwrap().status,
        LearningStatus::Archived
    );
    assert!(store.concept_members("deploy").unwrap() == vec![a]);
    let check = store.rebuild_learnings(false).unwrap();
    assert_eq!((check.differences, check.events), (0, 5), "{check:?}");
    // Damage a read model: the check sees it, the rebuild repairs it.
    let mut e = store.memory(a).unwrap().unwrap();
    e.content = "tampered".into();
    store.write(|w| w.put_memory(&e)).unwrap();
    assert_eq!(store.rebuild_learnings(false).unwrap().differences, 1);
    let fixed = store.rebuild_learnings(true).unwrap();
    assert!(fixed.repaired);
    assert_eq!(
        store.memory(a).unwrap().unwrap().content,
        "Deploy on Fridays"
    );
    assert_eq!(store.rebuild_learnings(false).unwrap().differences, 0);
}

#[test]
fn vector_clocks_compare_merge_and_stay_bounded() {
    let c = |pairs: &[(&str, u64)]| -> VectorClock {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    };
    assert_eq!(
        clock_compare(&c(&[("a", 1)]), &c(&[("a", 2)])),
        Some(std::cmp::Ordering::Less)
    );
    assert_eq!(clock_compare(&c(&[("a", 1)]), &c(&[("b", 1)])), None);
    let mut m = c(&[("a", 3), ("b", 1)]);
    clock_merge(&mut m, &c(&[("b", 4), ("c", 2)]));
    assert_eq!(m, c(&[("a", 3), ("b", 4), ("c", 2)]));
    assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":3,"b":4,"c":2}"#);
    let mut big: VectorClock = (0..100).map(|i| (format!("s{i:03}"), i)).collect();
    clock_trim(&mut big, "s000", &["s001".to_string()]);
    assert_eq!(big.len(), CLOCK_MAX_KEYS);
    assert!(big.contains_key("s000") && big.contains_key("s001") && big.contains_key("s099"));
}

#[test]
fn the_idempotency_key_is_the_seeds_sha256() {
    let k = idempotency_key("/p", "s1", "0", "v1");
    assert_eq!(k.len(), 64);
    assert_eq!(k, idempotency_key("/p", "s1", "0", "v1"));
    assert_ne!(k, idempotency_key("/p", "s1", "1", "v1"));
}

#[test]
fn s_temporal_takes_the_seeds_values() {
    let now = Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap();
    let info = |from: Option<i64>, until: Option<i64>, c: TemporalConfidence| LearnInfo {
        concepts: Vec::new(),
        reinforcement: 0.5,
        recurrence: 1,
        useful: 0,
        wrong: 0,
        valid_from: from.map(|d| now + Duration::days(d)),
        valid_until: until.map(|d| now + Duration::days(d)),
        confidence: c,
        extracted_at: now,
        reinforced_at: now,
        edges: Vec::new(),
    };
    let t = TemporalScores::default();
    let last = Some(now - Duration::days(10));
    assert_eq!(
        s_temporal(
            &info(None, Some(-1), TemporalConfidence::High),
            now,
            last,
            &t
        ),
        0.2
    );
    assert_eq!(
        s_temporal(
            &info(Some(-2), None, TemporalConfidence::High),
            now,
            last,
            &t
        ),
        1.0
    );
    assert_eq!(
        s_temporal(
            &info(Some(-20), None, TemporalConfidence::Low),
            now,
            last,
            &t
        ),
        0.5
    );
    assert_eq!(
        s_temporal(&info(None, None, TemporalConfidence::Medium), now, last, &t),
        0.8
    );
}

#[test]
fn associative_search_scores_seven_dimensions_and_honours_time_bounds() {
    let (_d, m) = memory();
    let a = insert(&m, "The cache uses redis streams", &["redis", "cache"]);
    let _b = insert(&m, "Lunch is at noon", &["lunch"]);
    let hits = m
        .find(
            "redis cache",
            &[],
            5,
            SearchMode::Associative,
            Filter::default(),
        )
        .unwrap();
    assert_eq!(hits[0].entry.id, a);
    let d = hits[0].dims.unwrap();
    assert!((d.concept - 1.0).abs() < 1e-6 && d.text > 0.0, "{d:?}");
    let w = &m.params().nous.weights;
    let parts = [
        (w.text, d.text),
        (w.concept, d.concept),
        (w.vector, d.vector),
        (w.graph, d.graph),
        (w.reinforcement, d.reinforcement),
        (w.temporal, d.temporal),
        (w.recency, d.recency),
    ];
    let total: f32 = parts.iter().map(|(w, x)| w * x).sum();
    assert!((total - d.total).abs() < 1e-6);
    let before = Filter {
        as_of: Some(Utc::now() - Duration::days(1)),
        ..Filter::default()
    };
    assert!(
        m.find("redis cache", &[], 5, SearchMode::Associative, before)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_disagreement_weakens_what_the_turn_used_and_what_came_from_it() {
    let (_d, m) = memory();
    let store = m.store().clone();
    let s = Session::new("s", SessionSource::Glassbox);
    let used = insert(&m, "The build needs clang", &["build"]);
    let mut q = Node::new(s.id, NodeType::Query, "How do I build?");
    q.meta
        .insert("memory_used".into(), json!([used.to_string()]));
    let r = Node::new(s.id, NodeType::Response, "Install gcc.");
    store
        .write(|w| {
            w.put_session(&s)?;
            w.put_node(&q)?;
            w.put_node(&r)
        })
        .unwrap();
    let mut from_answer = NewMemory::archival("gcc builds it", "cli");
    from_answer.provenance.node = Some(r.id);
    let derived = m.insert(from_answer).unwrap().ids[0];
    let p = LearnParams::default();
    let n = checkpoint_feedback(&store, &r, crate::store::NodeId::new(), false, &[], &p).unwrap();
    assert_eq!(n, 2);
    for id in [used, derived] {
        let l = store.learning(id).unwrap().unwrap();
        assert!((l.reinforcement - 0.3).abs() < 1e-9, "{l:?}");
        assert_eq!(l.wrong, 1);
    }
    // Verified reinforces what the turn used.
    let ann = crate::store::NodeId::new();
    checkpoint_feedback(&store, &r, ann, true, &[], &p).unwrap();
    assert!((store.learning(used).unwrap().unwrap().reinforcement - 0.4).abs() < 1e-9);
    // The same checkpoint twice counts once.
    assert_eq!(
        checkpoint_feedback(&store, &r, ann, true, &[], &p).unwrap(),
        0
    );
}

#[test]
fn decay_halves_the_score_every_half_life() {
    let (_d, m) = memory();
    let id = insert(&m, "Old news", &["news"]);
    let mut l = m.store().learning(id).unwrap().unwrap();
    l.reinforced_at = Utc::now() - Duration::days(60);
    let d = decayed(&l, Utc::now(), 30.0);
    assert!((d - 0.125).abs() < 1e-3, "{d}");
    assert_eq!(
        m.store().learning(id).unwrap().unwrap().tier,
        MemoryTier::Archival
    );
}

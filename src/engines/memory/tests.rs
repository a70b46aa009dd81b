#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::*;
use crate::store::{CoreSection, MemoryId, MemoryTier, NodeId, Provenance, SessionId};

/// A small deterministic embedder for the engine's own logic: words hashed into 64
/// buckets. (The real MiniLM model is exercised by the embed module and the CLI tests.)
struct Buckets;

impl Embedder for Buckets {
    fn id(&self) -> &str {
        "buckets/64"
    }
    fn dim(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 64];
                for w in crate::store::search::tokenize(t) {
                    let h = w
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
                    v[(h % 64) as usize] += 1.0;
                }
                embed::normalize(&mut v);
                v
            })
            .collect())
    }
}

fn memory(params: MemoryParams) -> (tempfile::TempDir, Memory) {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("m.redb"));
    let m = Memory::new(
        store,
        params,
        Some(Arc::new(Buckets)),
        MemoryScope::Project("/p".into()),
        Vec::new(),
    );
    (dir, m)
}

fn working(text: &str, importance: f32) -> NewMemory {
    NewMemory {
        tier: MemoryTier::Working,
        importance: Some(importance),
        ..NewMemory::archival(text, "test")
    }
}

#[test]
fn insert_then_search_finds_the_fact_first_and_counts() {
    let (_d, m) = memory(MemoryParams::default());
    for i in 0..50 {
        m.insert(NewMemory::archival(
            format!("unrelated note number {i} about lunch"),
            "test",
        ))
        .unwrap();
    }
    let id = m
        .insert(NewMemory::archival(
            "The staging database for project BLUEHERON runs on host db7.internal, port 6432",
            "test",
        ))
        .unwrap()
        .ids[0];
    let hits = m
        .search(
            "where is the blueheron staging database",
            &[],
            5,
            SearchMode::Hybrid,
            Default::default(),
        )
        .unwrap();
    assert_eq!(hits[0].entry.id, id);
    let s = m.stats().unwrap();
    assert_eq!(s.archival_storage_entries, 51);
    assert_eq!(s.total_inserts, 51);
    assert_eq!(s.total_searches, 1);
    let json = serde_json::to_value(&s).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for k in [
        "mainContextEntries",
        "recallStorageEntries",
        "archivalStorageEntries",
        "mainContextTokens",
        "mainContextCapacity",
        "mainContextUtilization",
        "totalInserts",
        "totalSearches",
        "totalEvictions",
        "totalPromotions",
    ] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    assert_eq!(keys.len(), 10);
}

#[test]
fn bad_values_are_one_line_errors_naming_them() {
    let (_d, m) = memory(MemoryParams::default());
    let e = m.insert(NewMemory::archival("  ", "test")).unwrap_err();
    assert_eq!(e.to_string(), "memory text is empty");
    let e = m
        .insert(NewMemory {
            importance: Some(1.5),
            ..NewMemory::archival("x", "test")
        })
        .unwrap_err();
    assert!(e.to_string().contains("1.5"), "{e}");
    assert!("bogus".parse::<MemoryTier>().unwrap_err().contains("bogus"));
    assert!(
        "persona"
            .parse::<CoreSection>()
            .unwrap_err()
            .contains("persona")
    );
}

#[test]
fn auto_eviction_keeps_the_main_context_at_most_80_percent() {
    let params = MemoryParams {
        capacity_tokens: 1_000,
        ..Default::default()
    };
    let (_d, m) = memory(params);
    // Entries of 100 tokens each (400 characters): ten fill the capacity, the eleventh
    // takes the main context over it.
    let mut all = Vec::new();
    let mut evicted = Vec::new();
    for i in 0..11 {
        let text = format!("entry {i:02} {}", "x".repeat(391));
        let out = m.insert(working(&text, i as f32 / 20.0)).unwrap();
        all.extend(out.ids);
        if i < 10 {
            assert!(out.evicted.is_empty());
        }
        evicted.extend(out.evicted);
    }
    let s = m.stats().unwrap();
    assert!(s.main_context_tokens <= 800, "{s:?}");
    assert!(s.main_context_utilization <= 0.8);
    assert!(s.total_evictions >= 3);
    // The least important went first, and each is findable in archival.
    assert_eq!(evicted[0], all[0]);
    for id in &evicted {
        let e = m.store().memory(*id).unwrap().unwrap();
        assert_eq!(e.tier, MemoryTier::Archival);
        assert!(e.meta.contains_key("evicted_at"));
    }
    let hits = m
        .search(
            "entry 00",
            &[MemoryTier::Archival],
            3,
            SearchMode::Keyword,
            Default::default(),
        )
        .unwrap();
    assert_eq!(hits[0].entry.id, all[0]);
    // The store's journal announces them.
    let evictions = m
        .store()
        .follow(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|(_, c)| c.kind == crate::store::ChangeKind::MemoryEvicted)
        .count();
    assert_eq!(evictions, evicted.len());
}

#[test]
fn core_append_replace_promote_evict_and_remove() {
    let (_d, m) = memory(MemoryParams::default());
    let prov = Provenance {
        origin: "test".into(),
        ..Default::default()
    };
    let a = m
        .core_append(CoreSection::Human, "Prefers metric units", prov.clone())
        .unwrap()
        .ids[0];
    m.core_append(CoreSection::Agent, "Answers tersely", prov)
        .unwrap();
    let replaced = m
        .core_replace(CoreSection::Human, "metric", "Prefers imperial units")
        .unwrap();
    assert_eq!(replaced, a);
    assert_eq!(
        m.store().memory(a).unwrap().unwrap().content,
        "Prefers imperial units"
    );
    let e = m
        .core_replace(CoreSection::Agent, "metric", "x")
        .unwrap_err();
    assert!(e.to_string().contains("no agent fact"), "{e}");

    let id = m
        .insert(NewMemory::archival("paged fact", "test"))
        .unwrap()
        .ids[0];
    let out = m.promote(&[id]).unwrap();
    assert!(out.evicted.is_empty());
    assert_eq!(
        m.store().memory(id).unwrap().unwrap().tier,
        MemoryTier::Working
    );
    assert!(
        m.promote(&[id])
            .unwrap_err()
            .to_string()
            .contains("already")
    );
    assert_eq!(m.evict(&[id]).unwrap(), vec![id]);
    assert!(m.evict(&[a]).unwrap_err().to_string().contains("core"));
    let s = m.stats().unwrap();
    assert_eq!((s.total_promotions, s.total_evictions), (1, 1));
    assert_eq!(s.main_context_entries, 2);
    assert_eq!(m.remove(&[id, id]).unwrap(), 1);
    assert_eq!(m.stats().unwrap().archival_storage_entries, 0);
}

#[test]
fn turns_go_to_recall_and_the_window_spills_to_archival() {
    let params = MemoryParams {
        recall_window: 4,
        ..Default::default()
    };
    let (_d, m) = memory(params);
    let session = record_turns(&m, 3);
    let s = m.stats().unwrap();
    assert_eq!(s.recall_storage_entries, 4);
    assert_eq!(s.archival_storage_entries, 2);
    let archived = m.entries(MemoryTier::Archival).unwrap();
    assert!(archived.iter().any(|e| e.content == "question 0"));
    assert_eq!(archived[0].provenance.session, Some(session));
    assert!(archived[0].provenance.node.is_some());
}

/// Entries of other tiers in the scope do not count against the recall window: a scope
/// over the window with recall under it keeps every recall entry where it is.
#[test]
fn other_tiers_do_not_push_recall_out() {
    let params = MemoryParams {
        recall_window: 4,
        ..Default::default()
    };
    let (_d, m) = memory(params);
    for text in [
        "Lunch is at noon",
        "The build takes ten minutes",
        "Tea, not coffee",
    ] {
        m.insert(NewMemory::archival(text, "test")).unwrap();
    }
    record_turns(&m, 2);
    // The scope itself is over the window: the trim had to look at its recall.
    assert_eq!(m.store.scope_memory_count(&m.scope).unwrap(), 7);
    let s = m.stats().unwrap();
    assert_eq!(s.recall_storage_entries, 4);
    assert_eq!(s.archival_storage_entries, 3);
}

/// Records `turns` answered turns of one new session ("question i", "answer i"); returns
/// the session.
fn record_turns(m: &Memory, turns: usize) -> SessionId {
    let session = SessionId::new();
    for i in 0..turns {
        m.record_turn(&FinishedTurn {
            session,
            query: NodeId::new(),
            question: format!("question {i}"),
            response: Some((NodeId::new(), format!("answer {i}"))),
        })
        .unwrap();
    }
    session
}

#[test]
fn context_has_core_facts_and_the_relevant_entry_within_budget() {
    let (_d, m) = memory(MemoryParams::default());
    assert!(m.context_for("anything").unwrap().is_none());
    let prov = Provenance::default();
    let core = m
        .core_append(CoreSection::Human, "Name is Ada", prov)
        .unwrap()
        .ids[0];
    let fact = m
        .insert(NewMemory::archival(
            "The build server is called hopper",
            "test",
        ))
        .unwrap()
        .ids[0];
    m.insert(NewMemory::archival("Lunch is at noon", "test"))
        .unwrap();
    let block = m
        .context_for("what is the build server called?")
        .unwrap()
        .unwrap();
    assert!(block.text.contains("Name is Ada"), "{}", block.text);
    assert!(block.text.contains("hopper"), "{}", block.text);
    assert_eq!(block.used[0], core);
    assert!(block.used.contains(&fact));
    // A tiny budget takes what fits.
    let small = Memory::new(
        m.store().clone(),
        MemoryParams {
            context_tokens: 6,
            ..Default::default()
        },
        None,
        m.scope().clone(),
        Vec::new(),
    );
    let block = small.context_for("build server").unwrap().unwrap();
    assert_eq!(block.used, vec![core]);
}

#[test]
fn long_text_is_split_with_one_provenance() {
    let params = MemoryParams {
        max_entry_bytes: 1_000,
        chunk_bytes: 300,
        ..Default::default()
    };
    let (_d, m) = memory(params);
    let text = "word ".repeat(500);
    let out = m.insert(NewMemory::archival(text.clone(), "test")).unwrap();
    assert!(out.ids.len() >= 8);
    let parts: Vec<_> = out
        .ids
        .iter()
        .map(|id| m.store().memory(*id).unwrap().unwrap())
        .collect();
    assert_eq!(
        parts.iter().map(|e| e.content.as_str()).collect::<String>(),
        text
    );
    assert!(parts.iter().all(|e| e.content.len() <= 300));
    assert_eq!(parts[1].provenance.chunk, Some((1, out.ids.len() as u32)));
}

#[test]
fn export_import_is_lossless_and_bad_lines_import_nothing() {
    let (_d, m) = memory(MemoryParams::default());
    m.insert(NewMemory::archival("first", "test")).unwrap();
    m.core_append(CoreSection::Agent, "second", Provenance::default())
        .unwrap();
    let mut out = Vec::new();
    assert_eq!(m.export(&mut out).unwrap(), 2);

    let (_d2, other) = memory(MemoryParams::default());
    let bad = format!("{}\n{{not json\n", String::from_utf8_lossy(&out));
    let e = other
        .import(&mut bad.as_bytes(), &mut |_, _| {})
        .unwrap_err();
    assert!(e.to_string().starts_with("line 4:"), "{e}");
    assert_eq!(other.store().memory_count().unwrap(), 0);

    let report = other.import(&mut out.as_slice(), &mut |_, _| {}).unwrap();
    assert_eq!(report.imported, 2);
    let mut again = Vec::new();
    other.export(&mut again).unwrap();
    assert_eq!(out, again);
    assert_eq!(
        other
            .import(&mut out.as_slice(), &mut |_, _| {})
            .unwrap()
            .unchanged,
        2
    );
}

#[test]
fn a_second_handle_sees_the_first_ones_writes() {
    let (_d, m) = memory(MemoryParams::default());
    let other = Memory::new(
        m.store().clone(),
        MemoryParams::default(),
        Some(Arc::new(Buckets)),
        m.scope().clone(),
        Vec::new(),
    );
    assert_eq!(other.stats().unwrap().archival_storage_entries, 0);
    let id = m
        .insert(NewMemory::archival("shared note", "test"))
        .unwrap()
        .ids[0];
    let hits = other
        .find(
            "shared note",
            &[],
            5,
            SearchMode::Hybrid,
            Default::default(),
        )
        .unwrap();
    assert_eq!(hits[0].entry.id, id);
    m.remove(&[id]).unwrap();
    assert!(
        other
            .find(
                "shared note",
                &[],
                5,
                SearchMode::Hybrid,
                Default::default()
            )
            .unwrap()
            .is_empty()
    );
    // Another scope's entries stay out of view.
    let global_only = Memory::new(
        m.store().clone(),
        MemoryParams::default(),
        None,
        MemoryScope::Global,
        Vec::new(),
    );
    m.insert(NewMemory::archival("project note", "test"))
        .unwrap();
    assert!(
        global_only
            .find(
                "project note",
                &[],
                5,
                SearchMode::Hybrid,
                Default::default()
            )
            .unwrap()
            .is_empty()
    );
}

#[test]
fn import_embeds_lines_without_vectors_in_batches_and_reports_progress() {
    let lines: String = (0..600)
        .map(|i| {
            let at = "2026-10-01T10:00:00Z";
            format!(
                "{}\n",
                serde_json::json!({
                    "id": uuid::Uuid::now_v7(),
                    "tier": "archival",
                    "scope": "project:/p",
                    "content": format!("note {i} about the ferry"),
                    "tags": [],
                    "importance": 0.5,
                    "created_at": at,
                    "updated_at": at,
                    "provenance": {"origin": "test"},
                })
            )
        })
        .collect();
    let (_d, m) = memory(MemoryParams::default());
    let mut seen = Vec::new();
    let report = m
        .import(&mut lines.as_bytes(), &mut |done, total| {
            seen.push((done, total))
        })
        .unwrap();
    assert_eq!((report.imported, report.embedded), (600, 600));
    assert_eq!(seen, vec![(256, 600), (512, 600), (600, 600)]);
    assert_eq!(
        m.rank(
            "ferry",
            None,
            &[],
            1000,
            SearchMode::Keyword,
            Default::default()
        )
        .unwrap()
        .len(),
        600
    );
}

/// A memory over `m`'s store with its own index, loaded afresh.
fn reopened(m: &Memory, params: MemoryParams) -> Memory {
    Memory::new(
        m.store.clone(),
        params,
        Some(Arc::new(Buckets)),
        m.scope.clone(),
        Vec::new(),
    )
}

fn ranked(m: &Memory, query: &str) -> Vec<(MemoryId, f32)> {
    ranked_by(m, query, SearchMode::Hybrid)
}

fn ranked_by(m: &Memory, query: &str, mode: SearchMode) -> Vec<(MemoryId, f32)> {
    m.find(query, &[], 10, mode, Default::default())
        .unwrap()
        .into_iter()
        .map(|h| (h.entry.id, h.score))
        .collect()
}

#[test]
fn a_saved_index_is_read_back_and_follows_what_changed_after_it() {
    let params = MemoryParams {
        index_snapshot_entries: 4,
        ..MemoryParams::default()
    };
    let (_d, m) = memory(params.clone());
    let scope = m.scope.clone();
    let mut ids = Vec::new();
    for i in 0..6 {
        let text = format!("harbor crane {i} lifts containers at dawn");
        ids.push(m.insert(NewMemory::archival(text, "test")).unwrap().ids[0]);
    }
    // Too few entries in the global scope: only the project's index is saved.
    assert_eq!(ranked(&m, "harbor crane").len(), 6);
    let saved: snapshot::ScopeIndex = m.store.memory_index(&scope).unwrap().unwrap();
    assert_eq!(saved.seq, m.store.last_seq().unwrap());
    assert!(
        m.store
            .memory_index::<snapshot::ScopeIndex>(&MemoryScope::Global)
            .unwrap()
            .is_none()
    );
    // Changes after it: one entry goes, one comes, one changes tier.
    m.remove(&ids[..1]).unwrap();
    let late = m
        .insert(NewMemory::archival(
            "harbor crane seven, delivered late",
            "test",
        ))
        .unwrap()
        .ids[0];
    m.promote(&ids[1..2]).unwrap();
    let from_saved = reopened(&m, params.clone());
    let got = ranked(&from_saved, "harbor crane");
    assert!(got.iter().any(|(id, _)| *id == late));
    assert!(!got.iter().any(|(id, _)| *id == ids[0]));
    assert_eq!(
        from_saved.entries(MemoryTier::Working).unwrap()[0].id,
        ids[1]
    );
    // The same ranking as an index built from the entries themselves.
    m.store.write(|w| w.clear_memory_indexes()).unwrap();
    let built = reopened(
        &m,
        MemoryParams {
            index_snapshot_entries: 0,
            ..params
        },
    );
    assert_eq!(ranked(&built, "harbor crane"), got);
    assert!(
        m.store
            .memory_index::<snapshot::ScopeIndex>(&scope)
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_saved_index_is_used_only_when_this_glassbox_can_trust_it() {
    let params = MemoryParams {
        index_snapshot_entries: 1,
        ..MemoryParams::default()
    };
    let (_d, m) = memory(params.clone());
    let scope = m.scope.clone();
    let kept = m
        .insert(NewMemory::archival(
            "the lighthouse keeper logs the fog",
            "test",
        ))
        .unwrap()
        .ids[0];
    // A saved index that says the entry holds other words: read back, it is what answers.
    let mut other = m.store.memory(kept).unwrap().unwrap();
    other.content = "an orchard of pears".into();
    let mut ix = MemoryIndex::new(None);
    ix.upsert(&other, None, None);
    let save = |seq: u64| {
        let s = snapshot::ScopeIndex::of(seq, ix.scope_docs(&scope));
        m.store.write(|w| w.put_memory_index(&scope, &s)).unwrap();
    };
    let last = m.store.last_seq().unwrap();
    save(last);
    assert!(
        ranked_by(
            &reopened(&m, params.clone()),
            "lighthouse fog",
            SearchMode::Keyword
        )
        .is_empty()
    );
    assert_eq!(
        ranked_by(
            &reopened(&m, params.clone()),
            "orchard pears",
            SearchMode::Keyword
        )[0]
        .0,
        kept
    );
    // One current to a sequence the journal has not reached (a store put back from an
    // older copy) is not: the index is built from the entries, and saved again.
    save(last + 10);
    let fresh = reopened(&m, params.clone());
    assert_eq!(
        ranked_by(&fresh, "lighthouse fog", SearchMode::Keyword)[0].0,
        kept
    );
    let again: snapshot::ScopeIndex = m.store.memory_index(&scope).unwrap().unwrap();
    assert_eq!(again.seq, last);
    assert_eq!(
        ranked_by(&reopened(&m, params), "lighthouse fog", SearchMode::Keyword)[0].0,
        kept
    );
    // One that does not decode is passed over the same way.
    m.store
        .write(|w| w.put_memory_index(&scope, &serde_json::json!({"format": "?"})))
        .unwrap();
    let fresh = reopened(&m, MemoryParams::default());
    assert_eq!(
        ranked_by(&fresh, "lighthouse fog", SearchMode::Keyword)[0].0,
        kept
    );
}

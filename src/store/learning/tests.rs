//! The batched reads of the learnings read model, on every arm.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{Duration, Utc};

use super::{EntryLearning, EventSource, LEARNING_SCHEMA_VERSION};
use crate::store::testing::{Fixture, on_every_arm};
use crate::store::{CoreSection, MemoryEntry, MemoryId, MemoryScope, MemoryTier, Provenance};

on_every_arm!(learnings_are_read_in_batches_as_one_at_a_time);

fn entry(scope: &MemoryScope, i: i64, tier: MemoryTier) -> MemoryEntry {
    MemoryEntry {
        id: MemoryId::new(),
        tier,
        scope: scope.clone(),
        section: (tier == MemoryTier::Core).then_some(CoreSection::Human),
        content: format!("entry {i}"),
        tags: vec![format!("tag{}", i % 3)],
        importance: 0.5,
        created_at: Utc::now() + Duration::seconds(i),
        updated_at: Utc::now(),
        provenance: Provenance {
            origin: "cli".into(),
            ..Default::default()
        },
        meta: Default::default(),
    }
}

/// `scope_memories_with_learnings` lists what `scope_memories` lists, in its order, each
/// entry with what `learning` reads for it (none for a core fact), and nothing of another
/// scope; `learnings_of` answers each id in the order given, an unknown one with `None`.
fn learnings_are_read_in_batches_as_one_at_a_time(fx: &Fixture) {
    let store = fx.open();
    let project = MemoryScope::Project("/p".into());
    // A scope whose key extends the project's: its entries are not the project's.
    let longer = MemoryScope::Project("/p2".into());
    let how = EntryLearning {
        extractor_version: "manual".into(),
        source: EventSource::UserReview,
        schema_version: LEARNING_SCHEMA_VERSION,
        concepts: None,
    };
    let learned: Vec<MemoryEntry> = (0..40)
        .map(|i| entry(&project, i, MemoryTier::Archival))
        .collect();
    let core = entry(&project, 41, MemoryTier::Core);
    let other = entry(&longer, 42, MemoryTier::Archival);
    store
        .write(|w| {
            w.put_memory(&core)?;
            for e in learned.iter().chain([&other]) {
                w.learn_entry(e, &how)?;
            }
            Ok(())
        })
        .unwrap();

    let rows = store.scope_memories_with_learnings(&project).unwrap();
    let entries = store.scope_memories(&project).unwrap();
    assert_eq!(entries.len(), 41);
    assert_eq!(
        rows.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
        entries
    );
    for (e, l) in &rows {
        assert_eq!(l, &store.learning(e.id).unwrap(), "{}", e.content);
        assert_eq!(l.is_some(), e.id != core.id, "{}", e.content);
    }
    assert_eq!(
        store.scope_memories_with_learnings(&longer).unwrap().len(),
        1
    );
    assert!(
        store
            .scope_memories_with_learnings(&MemoryScope::Global)
            .unwrap()
            .is_empty()
    );

    let ids = [
        learned[3].id,
        MemoryId::new(),
        core.id,
        learned[0].id,
        learned[3].id,
    ];
    let got = store.learnings_of(&ids).unwrap();
    let want: Vec<_> = ids.iter().map(|id| store.learning(*id).unwrap()).collect();
    assert_eq!(got, want);
    assert_eq!(
        got.iter().map(Option::is_some).collect::<Vec<_>>(),
        [true, false, false, true, true]
    );
    assert!(store.learnings_of(&[]).unwrap().is_empty());
}

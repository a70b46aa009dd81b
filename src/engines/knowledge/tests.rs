//! The knowledge base on a scratch store: adding (dedupe, replace, skips), notes and URLs,
//! removing with its chunks, and search by words and by (toy) vectors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::engines::memory::embed::{EmbedError, normalize};

/// Words hashed into 64 buckets: texts sharing words point the same way.
struct Buckets {
    calls: AtomicUsize,
    fail: bool,
}

impl Embedder for Buckets {
    fn id(&self) -> &str {
        "buckets/64"
    }
    fn dim(&self) -> usize {
        64
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(EmbedError::Failed("the toy embedder is down".into()));
        }
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; 64];
                for w in crate::store::search::tokenize(t) {
                    let h = w
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
                    v[(h % 64) as usize] += 1.0;
                }
                normalize(&mut v);
                v
            })
            .collect())
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    docs: PathBuf,
    kb: Knowledge,
}

fn setup(embedder: Option<Arc<dyn Embedder>>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let params = KnowledgeParams {
        chunk_chars: 120,
        overlap_chars: 20,
        ..KnowledgeParams::default()
    };
    Setup {
        _dir: dir,
        docs,
        kb: Knowledge::new(store, embedder, params).with_batch_size(2),
    }
}

const VOLCANO: &str = "Volcanoes form where magma rises through the crust. Basaltic lava flows \
    are runny; rhyolitic magma is viscous and erupts explosively. Pyroclastic flows are the \
    deadliest hazard of an eruption.";
const BREAD: &str = "Sourdough bread rises with a starter of wild yeast and lactobacilli. \
    Feed the starter flour and water daily; a long cold proof gives the crumb its open \
    structure and the crust its tang.";
const TIDES: &str = "Tides come from the Moon's gravity pulling the oceans. Spring tides happen \
    at new and full moon, neap tides at the quarters, when Sun and Moon pull at right angles.";

fn write_three(docs: &Path) {
    std::fs::write(docs.join("a-volcano.md"), VOLCANO).unwrap();
    std::fs::write(docs.join("b-bread.md"), BREAD).unwrap();
    std::fs::write(docs.join("c-tides.txt"), TIDES).unwrap();
}

fn add(kb: &Knowledge, path: &Path) -> (AddReport, Vec<AddEvent>) {
    let mut events = Vec::new();
    let r = kb.add_path(path, &mut |e| events.push(e.clone())).unwrap();
    (r, events)
}

#[test]
fn adds_a_folder_once_and_finds_the_right_document_by_words() {
    let s = setup(None);
    write_three(&s.docs);
    std::fs::create_dir_all(s.docs.join(".hidden")).unwrap();
    std::fs::write(s.docs.join(".hidden/x.md"), "secret").unwrap();
    std::fs::write(s.docs.join(".dotfile"), "secret").unwrap();
    let (r, events) = add(&s.kb, &s.docs);
    assert_eq!(r.added.len(), 3, "{r:?}");
    assert!(r.skipped.is_empty() && r.warnings.is_empty() && r.unchanged.is_empty());
    assert_eq!(events[0], AddEvent::Found { files: 3 });
    let labels: Vec<&str> = r.added.iter().map(|d| d.label.as_str()).collect();
    assert_eq!(labels, ["a-volcano.md", "b-bread.md", "c-tides.txt"]);
    let bread = &r.added[1];
    assert_eq!(bread.kind, DocKind::File);
    assert!(Path::new(&bread.source).is_absolute());
    assert_eq!(bread.chars, BREAD.chars().count());
    assert_eq!(bread.embedder, None);
    assert!(bread.chunks >= 2, "{bread:?}");
    let chunks = s.kb.store().knowledge_chunks(bread.id).unwrap();
    assert_eq!(chunks.len() as u32, bread.chunks);
    for c in &chunks {
        let span: String = BREAD.chars().skip(c.start).take(c.end - c.start).collect();
        assert_eq!(span, c.text);
        assert!(c.vector.is_none());
    }

    let hits =
        s.kb.search("how do I feed a sourdough starter?", 8)
            .unwrap();
    assert_eq!(hits[0].doc.id, bread.id, "{hits:?}");
    assert!(hits.len() <= 8);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(
        s.kb.search("spring tides", 1).unwrap()[0].doc.label,
        "c-tides.txt"
    );
    assert!(s.kb.search("zzzz qqqq", 8).unwrap().is_empty());
    assert!(matches!(
        s.kb.search("  ", 8),
        Err(KnowledgeError::EmptyQuery)
    ));

    // Again: nothing added.
    let (again, events) = add(&s.kb, &s.docs);
    assert!(again.added.is_empty());
    assert_eq!(again.unchanged.len(), 3);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AddEvent::Unchanged { .. }))
    );
    assert_eq!(s.kb.list().unwrap().len(), 3);
}

#[test]
fn a_changed_file_replaces_its_old_version_and_keeps_its_label() {
    let s = setup(None);
    let file = s.docs.join("notes.md");
    std::fs::write(&file, VOLCANO).unwrap();
    let mut none = |_: &AddEvent| {};
    let first =
        s.kb.add_path_labeled(&file, Some("Geology"), &mut none)
            .unwrap();
    let old = &first.added[0];
    assert_eq!(old.label, "Geology");
    std::fs::write(&file, TIDES).unwrap();
    let (r, events) = add(&s.kb, &file);
    assert_eq!((r.added.len(), r.replaced), (1, 1));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AddEvent::Added { replaced: true, .. }))
    );
    let docs = s.kb.list().unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].label, "Geology");
    assert_ne!(docs[0].id, old.id);
    assert!(s.kb.store().knowledge_chunks(old.id).unwrap().is_empty());
    assert!(s.kb.search("magma", 8).unwrap().is_empty());
    // A label names one file, not a folder.
    let err =
        s.kb.add_path_labeled(&s.docs, Some("x"), &mut none)
            .unwrap_err();
    assert!(matches!(err, KnowledgeError::LabelOnFolder(_)));
}

#[test]
fn unreadable_files_are_skipped_with_their_reason() {
    let s = setup(None);
    write_three(&s.docs);
    std::fs::write(s.docs.join("image.png"), [0x89, b'P', b'N', b'G', 0, 0, 1]).unwrap();
    std::fs::write(
        s.docs.join("broken.pdf"),
        b"%PDF-1.4\n%garbage \x00\x01 trailer?",
    )
    .unwrap();
    std::fs::write(s.docs.join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).unwrap();
    let (r, events) = add(&s.kb, &s.docs);
    assert_eq!(r.added.len(), 3);
    assert_eq!(r.skipped.len(), 3, "{:?}", r.skipped);
    let reason = |name: &str| {
        r.skipped
            .iter()
            .find(|s| s.contains(name))
            .unwrap_or_else(|| panic!("{name} not skipped: {:?}", r.skipped))
            .clone()
    };
    assert!(reason("image.png").ends_with("binary file (it holds NUL bytes)"));
    assert!(reason("broken.pdf").contains("cannot read the PDF"));
    assert!(reason("latin1.txt").contains("not UTF-8"));
    assert!(reason("image.png").starts_with(&s.docs.display().to_string()));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AddEvent::Skipped { .. }))
            .count(),
        3
    );
    let missing =
        s.kb.add_path(&s.docs.join("nope"), &mut |_| {})
            .unwrap_err();
    assert!(missing.to_string().starts_with("cannot read"), "{missing}");
}

#[test]
fn a_pdf_is_read() {
    let s = setup(None);
    let file = s.docs.join("paper.pdf");
    std::fs::write(
        &file,
        extract::tests::minimal_pdf("Tidal locking keeps one face"),
    )
    .unwrap();
    let (r, _) = add(&s.kb, &file);
    assert_eq!(r.added.len(), 1, "{r:?}");
    assert_eq!(
        s.kb.search("tidal locking", 1).unwrap()[0].doc.label,
        "paper.pdf"
    );
}

#[test]
fn notes_and_urls() {
    let s = setup(None);
    let r =
        s.kb.add_note("  The office wifi password rotates on Mondays.  ", None)
            .unwrap();
    let note = r.added[0].clone();
    assert_eq!((note.kind, note.source.as_str()), (DocKind::Note, "note"));
    assert_eq!(note.label, "The office wifi password rotates on Mondays.");
    let again =
        s.kb.add_note("The office wifi password rotates on Mondays.", Some("x"))
            .unwrap();
    assert!(again.added.is_empty());
    assert_eq!(again.unchanged[0].id, note.id);
    assert!(matches!(
        s.kb.add_note(" ", None),
        Err(KnowledgeError::EmptyNote)
    ));
    // Another note is another document.
    s.kb.add_note("Lunch is at noon.", Some("lunch")).unwrap();

    let u =
        s.kb.add_url("https://example.org/paper", Some("The paper"))
            .unwrap();
    let url = &u.added[0];
    assert_eq!(
        (
            url.kind,
            url.source.as_str(),
            url.label.as_str(),
            url.chunks
        ),
        (DocKind::Url, "https://example.org/paper", "The paper", 1)
    );
    let chunk = &s.kb.store().knowledge_chunks(url.id).unwrap()[0];
    assert_eq!(
        chunk.text,
        "URL: https://example.org/paper\nLabel: The paper"
    );
    assert!(
        s.kb.add_url("https://example.org/paper", Some("The paper"))
            .unwrap()
            .added
            .is_empty()
    );
    // A new label replaces it.
    let relabelled =
        s.kb.add_url("https://example.org/paper", Some("Paper"))
            .unwrap();
    assert_eq!(relabelled.replaced, 1);
    for bad in [
        "ftp://example.org/x",
        "not a url",
        "file:///etc/passwd",
        "https://",
    ] {
        assert!(
            matches!(s.kb.add_url(bad, None), Err(KnowledgeError::BadUrl(_))),
            "{bad}"
        );
    }
    assert_eq!(s.kb.list().unwrap().len(), 3);
    assert_eq!(s.kb.search("wifi password", 1).unwrap()[0].doc.id, note.id);
}

#[test]
fn remove_by_id_prefix_source_or_label_takes_the_chunks_along() {
    let s = setup(None);
    write_three(&s.docs);
    let (r, _) = add(&s.kb, &s.docs);
    let [volcano, bread, tides] = [&r.added[0], &r.added[1], &r.added[2]];
    let before = s.kb.store().knowledge_chunk_count().unwrap();
    let gone = s.kb.remove(&bread.id.short()).unwrap();
    assert_eq!(gone.id, bread.id);
    assert!(s.kb.store().knowledge_chunks(bread.id).unwrap().is_empty());
    assert_eq!(
        s.kb.store().knowledge_chunk_count().unwrap(),
        before - u64::from(bread.chunks)
    );
    assert!(s.kb.search("sourdough", 8).unwrap().is_empty());
    assert_eq!(s.kb.remove(&volcano.source).unwrap().id, volcano.id);
    assert_eq!(s.kb.remove("c-tides.txt").unwrap().id, tides.id);
    assert!(matches!(
        s.kb.remove(&tides.id.to_string()),
        Err(KnowledgeError::NotFound(_))
    ));
    assert!(matches!(
        s.kb.remove("nothing"),
        Err(KnowledgeError::NotFound(_))
    ));
    assert!(s.kb.list().unwrap().is_empty());
    // Two notes with one label: ambiguous.
    s.kb.add_note("one", Some("same")).unwrap();
    s.kb.add_note("two", Some("same")).unwrap();
    let err = s.kb.remove("same").unwrap_err();
    assert!(err.to_string().contains("matches 2 documents"), "{err}");
}

#[test]
fn vectors_rank_by_similarity_and_a_failing_embedder_leaves_words() {
    let e = Arc::new(Buckets {
        calls: AtomicUsize::new(0),
        fail: false,
    });
    let s = setup(Some(e.clone()));
    write_three(&s.docs);
    let (r, _) = add(&s.kb, &s.docs);
    assert!(r.warnings.is_empty());
    let bread = &r.added[1];
    assert_eq!(bread.embedder.as_deref(), Some("buckets/64"));
    let chunks = s.kb.store().knowledge_chunks(bread.id).unwrap();
    assert!(
        chunks
            .iter()
            .all(|c| c.vector.as_ref().is_some_and(|v| v.len() == 64))
    );
    // Batches of 2: at least one call per two chunks.
    let total: u32 = r.added.iter().map(|d| d.chunks).sum();
    assert!(e.calls.load(Ordering::SeqCst) >= total.div_ceil(2) as usize);
    let hits = s.kb.search("sourdough starter flour yeast", 3).unwrap();
    assert_eq!(hits[0].doc.id, bread.id, "{hits:?}");
    assert_eq!(hits.len(), 3);

    // The same store with a failing embedder: chunks kept without vectors, a warning, and
    // search by words (the earlier vectors are not comparable with no query vector).
    let down = Knowledge::new(
        s.kb.store().clone(),
        Some(Arc::new(Buckets {
            calls: AtomicUsize::new(0),
            fail: true,
        })),
        s.kb.params().clone(),
    );
    let r = down
        .add_note("Neap tides are the weakest tides.", None)
        .unwrap();
    assert_eq!(r.added[0].embedder, None);
    assert!(
        r.warnings[0].contains("the toy embedder is down"),
        "{:?}",
        r.warnings
    );
    let hits = down.search("neap tides", 2).unwrap();
    assert_eq!(hits[0].doc.id, r.added[0].id);
    assert!(down.take_warnings()[0].contains("searched by words"));
    assert!(down.take_warnings().is_empty());
}

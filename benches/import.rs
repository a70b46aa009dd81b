//! Claude Code import throughput: a corpus built from the test fixtures (every fixture session
//! repeated with fresh ids) imported into a fresh store, and the re-import that finds nothing new.

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use glassbox::engines::transcript::{Importer, discover};
use glassbox::store::Store;

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude_code/projects"
);
const SESSION_IDS: [&str; 3] = [
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-3333-4333-8333-333333333333",
];

/// The complete, valid lines of every fixture file, by path relative to the fixtures.
fn fixture_lines() -> Vec<(PathBuf, Vec<String>)> {
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for path in discover(&[PathBuf::from(FIXTURES)], &mut errors).unwrap_or_default() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let lines = text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n') && serde_json::from_str::<serde_json::Value>(l).is_ok())
            .map(str::to_string)
            .collect();
        let rel = path
            .strip_prefix(FIXTURES)
            .map(Path::to_path_buf)
            .unwrap_or(path);
        out.push((rel, lines));
    }
    out
}

/// Writes `copies` copies of each fixture session, each repeating its lines `reps` times with
/// fresh line, message and tool ids. Returns the bytes written.
fn write_corpus(root: &Path, copies: usize, reps: usize) -> u64 {
    let fixtures = fixture_lines();
    let mut bytes = 0;
    for copy in 0..copies {
        let sid = format!("{copy:08x}-bbbb-4bbb-8bbb-{copy:012x}");
        for (rel, lines) in &fixtures {
            let mut rel = rel.display().to_string();
            for old in SESSION_IDS {
                rel = rel.replace(old, &sid);
            }
            let path = root.join(rel);
            let _ = std::fs::create_dir_all(path.parent().unwrap_or(root));
            let mut text = String::new();
            for rep in 0..reps {
                let tag = format!("{copy:04x}{rep:04x}");
                for line in lines {
                    let mut l = line.clone();
                    for old in SESSION_IDS {
                        l = l.replace(old, &sid);
                    }
                    for prefix in ["1", "2", "3"] {
                        l = l.replace(
                            &format!("{prefix}0000000-0000-4000-8000-"),
                            &format!("{prefix}{}-0000-4000-8000-", &tag[1..]),
                        );
                    }
                    l = l
                        .replace("\"msg", &format!("\"r{tag}msg"))
                        .replace("\"toolu_", &format!("\"toolu_{tag}_"));
                    text.push_str(&l);
                }
            }
            bytes += text.len() as u64;
            let _ = std::fs::write(&path, text);
        }
    }
    bytes
}

fn import_all(store: &Store, root: &Path) -> u64 {
    let mut errors = Vec::new();
    let files = discover(&[root.to_path_buf()], &mut errors).unwrap_or_default();
    let Ok(mut importer) = Importer::new(store.clone()) else {
        return 0;
    };
    let _ = importer.import_files(&files, None);
    importer.take_summary().new_nodes()
}

fn bench_import(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path().join("projects");
    let bytes = write_corpus(&root, 2, 20);
    let mut group = c.benchmark_group("import_claude_code");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("first_import", |b| {
        b.iter_batched(
            || {
                let store_dir = tempfile::tempdir().ok();
                let store = store_dir
                    .as_ref()
                    .and_then(|d| Store::open(&d.path().join("s.redb")).ok());
                (store_dir, store)
            },
            |(_dir, store)| store.map(|s| import_all(&s, &root)),
            criterion::BatchSize::PerIteration,
        )
    });
    let Ok(store_dir) = tempfile::tempdir() else {
        return;
    };
    let Ok(store) = Store::open(&store_dir.path().join("s.redb")) else {
        return;
    };
    import_all(&store, &root);
    group.bench_function("reimport_unchanged", |b| {
        b.iter(|| import_all(&store, &root))
    });
    group.finish();
}

criterion_group!(benches, bench_import);
criterion_main!(benches);

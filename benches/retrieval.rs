//! Retrieval benches. `query_embedding`: turning a short search query into a vector with the
//! local all-MiniLM-L6-v2 model (skipped, with a note, when the model files are missing).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use glassbox::engines::memory::embed::{Embedder, EmbeddingParams, MiniLm};

/// A ten-word query, the typical size of a memory search.
const QUERY: &str = "what did we decide about the database migration last week";

fn query_embedding(c: &mut Criterion) {
    let Some(models_dir) = glassbox::paths::default_models_dir() else {
        println!("query_embedding skipped: no models dir (set GLASSBOX_MODELS_DIR)");
        return;
    };
    let dir = glassbox::models::minilm_dir(&models_dir);
    let model = match MiniLm::load(&dir, &EmbeddingParams::default()) {
        Ok(m) => m,
        Err(e) => {
            println!("query_embedding skipped: {e} (run scripts/setup.sh)");
            return;
        }
    };
    print_latency_percentiles(&model);
    let mut group = c.benchmark_group("query_embedding");
    group.bench_function("minilm 10-word query", |b| {
        b.iter(|| {
            model
                .embed(black_box(&[QUERY]))
                .unwrap_or_else(|e| panic!("{e}"))
        })
    });
    group.finish();
}

/// Criterion reports means over batches of calls; the latency budget is a p95 of single
/// calls, so that is timed directly and printed first.
fn print_latency_percentiles(model: &MiniLm) {
    const CALLS: usize = 300;
    // Warm up caches and rayon's pool first.
    for _ in 0..20 {
        black_box(model.embed(&[QUERY]).unwrap_or_else(|e| panic!("{e}")));
    }
    let mut times: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            black_box(
                model
                    .embed(black_box(&[QUERY]))
                    .unwrap_or_else(|e| panic!("{e}")),
            );
            start.elapsed()
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((CALLS as f64 * q) as usize).min(CALLS - 1)];
    println!(
        "query_embedding single calls ({CALLS}): p50 {:.2?}, p95 {:.2?}, p99 {:.2?}, max {:.2?}",
        at(0.50),
        at(0.95),
        at(0.99),
        times[CALLS - 1]
    );
}

/// P4: one hybrid memory search (BM25 + cosine against every vector + importance, recency
/// and date terms, top 10) over 10k and over 100k memories, with the query vector made
/// beforehand, so the query embedding is not counted. The bar is a p95 of at most 10 ms.
///
/// The texts are made up from word pools by a seeded generator: 10–60 words each, with
/// names, hosts, numbers and dates, so the word statistics look like notes. The vectors are
/// seeded random unit vectors of 384 dimensions, not MiniLM's: the index compares the query
/// with every vector whatever their values, so the timing is the same, and embedding 100k
/// texts with MiniLM on a CPU would take far longer than the bench may run.
fn hybrid_retrieval(c: &mut Criterion) {
    use std::sync::Arc;

    use chrono::{TimeDelta, TimeZone, Utc};
    use glassbox::engines::memory::embed::EmbedError;
    use glassbox::engines::memory::index::quantize;
    use glassbox::engines::memory::{Memory, MemoryParams, SearchMode};
    use glassbox::store::{
        MemoryEntry, MemoryId, MemoryScope, MemoryTier, Provenance, Store, StoredVector,
    };

    const DIM: usize = 384;
    const MODEL: &str = "bench-random/384";
    const TIMED: usize = 200;

    /// Gives the index its model id and size; the bench passes query vectors in itself.
    struct Fixed;
    impl Embedder for Fixed {
        fn id(&self) -> &str {
            MODEL
        }
        fn dim(&self) -> usize {
            DIM
        }
        fn embed(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Err(EmbedError::Unavailable(
                "the bench makes its own vectors".into(),
            ))
        }
    }

    fn unit_vector(rng: &mut fastrand::Rng) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM).map(|_| rng.f32() * 2.0 - 1.0).collect();
        let norm = v
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::EPSILON);
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }

    /// One of the `|`-separated choices of `pool`.
    fn pick<'a>(rng: &mut fastrand::Rng, pool: &'a str) -> &'a str {
        let n = pool.matches('|').count() + 1;
        pool.split('|').nth(rng.usize(..n)).unwrap_or(pool)
    }

    /// One note of 10 to 60 words.
    fn note(rng: &mut fastrand::Rng) -> String {
        const WHO: &str = "I|We|Priya|Tomasz|The team|Ines|Marcus|Dolores|The customer|Ops|\
            My sister|The landlord|Joana|Erik";
        const DID: &str = "fixed|moved|decided on|looked at|postponed|reviewed|deployed|tested|\
            booked|cancelled|measured|rewrote|discussed|approved|broke|upgraded|benchmarked|\
            documented|worried about|paid for";
        const ADJ: &str = "staging|production|new|old|flaky|slow|nightly|shared|legacy|main|\
            backup|weekly|second|cheaper|noisy";
        const THING: &str = "database|build server|ingest worker|query API|dashboard|migration|\
            certificate|cache|queue|release|export|retention policy|rate limit|flight|hotel|\
            dentist appointment|running plan|budget|contract|firmware|backfill job|alert|\
            postmortem|test suite|load balancer|replica|pipeline|schema|index|report|bike|lease|\
            passport|speech|slides|knee exercises|tea order";
        const WHERE: &str = "on heron|on cormorant|on kestrel|on osprey|in staging|in Lisbon|\
            at the office|at home|in CI|for Halvorsen|for Quayside|before the demo|after lunch|\
            in Galway|on the north pier";
        const WHEN: &str = "today|yesterday|this morning|last week|on Friday|next Monday|\
            in March|before the release|tonight|at 3pm|on May 14|in October";
        const WHY: &str = "because the disk filled up|since the tests kept timing out|\
            so that it can resume after a crash|because Kafka was overkill|to save money|\
            after the outage|because legal asked|so customers can test with curl|\
            because it was too slow|to keep the on-call rota sane";
        const MORE: &str = "It took {n} minutes.|It cost {n} euros.|{n} rows were affected.|\
            Ticket {n} tracks it.|The p95 went from {n} ms to {m} ms.|\
            We need to follow up next week.|Nobody noticed.|I'm a bit worried about it.|\
            Let's revisit it in the spring.|Remind me to check it again on Thursday.";
        let target = 10 + rng.usize(..51);
        let mut words: Vec<String> = Vec::new();
        while words.len() < target {
            let mut s = format!(
                "{} {} the {} {} {} {}",
                pick(rng, WHO),
                pick(rng, DID),
                pick(rng, ADJ),
                pick(rng, THING),
                pick(rng, WHERE),
                pick(rng, WHEN)
            );
            if rng.bool() {
                s.push(' ');
                s.push_str(pick(rng, WHY));
            }
            s.push('.');
            if rng.u8(..3) == 0 {
                s.push(' ');
                s.push_str(
                    &pick(rng, MORE)
                        .replace("{n}", &rng.u32(2..5000).to_string())
                        .replace("{m}", &rng.u32(2..500).to_string()),
                );
            }
            words.extend(s.split_whitespace().map(str::to_string));
        }
        words.truncate(60);
        words.join(" ")
    }

    /// A store of `n` notes made over the two years before November 2026, bulk-written in
    /// transactions of 10k, and memory over it with the index already loaded.
    fn build(n: usize) -> (tempfile::TempDir, Memory) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(&dir.path().join("bench.redb")).unwrap_or_else(|e| panic!("{e}"));
        let scope = MemoryScope::Project("/bench".into());
        let end = Utc
            .with_ymd_and_hms(2026, 11, 1, 12, 0, 0)
            .single()
            .unwrap_or_else(|| panic!("bad date"));
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        let mut made = 0;
        while made < n {
            let rows: Vec<(MemoryEntry, StoredVector)> = (made..n.min(made + 10_000))
                .map(|_| {
                    let at = end - TimeDelta::seconds(rng.i64(0..2 * 365 * 86_400));
                    let entry = MemoryEntry {
                        id: MemoryId::new(),
                        tier: MemoryTier::Archival,
                        scope: scope.clone(),
                        section: None,
                        content: note(&mut rng),
                        tags: Vec::new(),
                        importance: rng.u8(1..10) as f32 / 10.0,
                        created_at: at,
                        updated_at: at,
                        provenance: Provenance {
                            origin: "bench".into(),
                            ..Default::default()
                        },
                        meta: Default::default(),
                    };
                    let vector = StoredVector {
                        model: MODEL.into(),
                        values: quantize(&unit_vector(&mut rng)),
                    };
                    (entry, vector)
                })
                .collect();
            made += rows.len();
            store
                .write(|w| {
                    for (e, v) in &rows {
                        w.put_memory(e)?;
                        w.put_memory_vector(e.id, v)?;
                    }
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let memory = Memory::new(
            store,
            MemoryParams::default(),
            Some(Arc::new(Fixed)),
            scope,
            Vec::new(),
        );
        (dir, memory)
    }

    const QUERIES: &[&str] = &[
        "what did we decide about the database migration last week",
        "why did the staging database fill up",
        "when is my flight to Lisbon",
        "who fixed the flaky test on kestrel",
        "rate limit for Halvorsen",
        "certificate on the load balancer",
        "what did Priya say about the retention policy on May 14",
        "ticket 1234",
        "backup replica on cormorant",
        "how is the running plan going",
        "how long did the backfill job take",
        "what happened on 2026-05-14",
        "worried about the budget",
        "dentist appointment",
        "what did Tomasz deploy before the demo",
        "the knee exercises",
        "Quayside export contract",
        "why was the pipeline so slow in March",
        "the speech for Galway",
        "cheaper hotel near the office",
    ];
    let mut rng = fastrand::Rng::with_seed(0x9e7);
    let queries: Vec<(&str, Vec<f32>)> = QUERIES
        .iter()
        .map(|q| (*q, unit_vector(&mut rng)))
        .collect();
    let rank = |memory: &Memory, i: usize| {
        let (text, vector) = &queries[i % queries.len()];
        memory
            .rank(
                black_box(text),
                Some(vector),
                &[],
                10,
                SearchMode::Hybrid,
                Default::default(),
            )
            .unwrap_or_else(|e| panic!("{e}"))
    };

    let mut group = c.benchmark_group("hybrid_retrieval");
    group.sample_size(20);
    for (n, label) in [(10_000, "10k"), (100_000, "100k")] {
        let started = Instant::now();
        let (_dir, memory) = build(n);
        let written = started.elapsed();
        // The first search loads the index from the store.
        black_box(rank(&memory, 0));
        eprintln!(
            "hybrid_retrieval {label}: store written in {written:.1?}, index loaded in {:.1?}",
            started.elapsed() - written
        );
        for i in 0..20 {
            black_box(rank(&memory, i));
        }
        let mut times: Vec<Duration> = (0..TIMED)
            .map(|i| {
                let start = Instant::now();
                black_box(rank(&memory, i));
                start.elapsed()
            })
            .collect();
        times.sort();
        let at = |q: f64| times[((TIMED as f64 * q) as usize).min(TIMED - 1)];
        let p95 = at(0.95);
        eprintln!(
            "hybrid_retrieval {label} single queries ({TIMED}): p50 {:.2?}, p95 {p95:.2?}, p99 {:.2?}, max {:.2?} — P4 bar 10 ms: {}",
            at(0.50),
            at(0.99),
            times[TIMED - 1],
            if p95 <= Duration::from_millis(10) {
                "met"
            } else {
                "MISSED"
            }
        );
        let mut i = 0;
        group.bench_function(format!("{label} memories, top 10"), |b| {
            b.iter(|| {
                i += 1;
                rank(&memory, i)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, query_embedding, hybrid_retrieval);
criterion_main!(benches);

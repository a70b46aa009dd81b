//! Measures memory retrieval on a labelled data set (tests/data/memory-eval): every turn of
//! 26 conversations goes into a throw-away store as an archival entry made at the turn's
//! time, then every question is searched three ways — keyword only (BM25), vector only
//! (MiniLM cosine) and hybrid (the engine's default weights) — and the share of the
//! question's evidence turns found in the top 5 and top 10 is averaged, overall and per kind
//! of question.
//!
//!     cargo run --release --example eval_memory -- [--json] [--misses] [--models-dir DIR]
//!                                                  [--weights keyword=0.4,vector=0.6,...]
//!                                                  [--grid] [--check]
//!
//! --json        one JSON document (per-question results included) instead of the table
//! --misses      after the table, the hybrid's misses: each question with what it ranked
//! --models-dir  where all-MiniLM-L6-v2/ is (default: $GLASSBOX_MODELS_DIR or the data dir's)
//! --weights     hybrid weights to use instead of the defaults (any of keyword, vector,
//!               importance, recency, recency_half_life_days, date)
//! --grid        also tries a grid of keyword/vector/date weights on the same store and
//!               prints the hybrid's recall for each (for tuning the defaults)
//! --check       only checks the data set (evidence exists, paraphrases share no content
//!               word with their evidence) and prints its size; needs no model
//!
//! The real MiniLM model is required; without it the example says where it looked and
//! exits with status 2.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/data/memory-eval/mod.rs"]
mod dataset;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use glassbox::engines::memory::embed::{Embedder, EmbeddingParams, MiniLm};
use glassbox::engines::memory::{Memory, MemoryParams, NewMemory, SearchMode, SearchWeights};
use glassbox::store::{MemoryId, MemoryScope, MemoryTier, Provenance, Store};
use serde_json::json;

use dataset::{Dataset, Kind, Question};

const MODES: [SearchMode; 4] = [
    SearchMode::Keyword,
    SearchMode::Vector,
    SearchMode::Hybrid,
    SearchMode::Associative,
];
const DEPTH: usize = 10;

struct Args {
    json: bool,
    misses: bool,
    grid: bool,
    check: bool,
    models_dir: Option<PathBuf>,
    weights: SearchWeights,
}

fn usage() -> &'static str {
    "usage: eval_memory [--json] [--misses] [--grid] [--check] [--models-dir DIR] [--weights k=v,...]"
}

fn parse_weights(spec: &str, mut w: SearchWeights) -> Result<SearchWeights, String> {
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("--weights: '{part}' is not name=value"))?;
        let v: f32 = v
            .trim()
            .parse()
            .map_err(|_| format!("--weights: '{v}' is not a number"))?;
        match k.trim() {
            "keyword" => w.keyword = v,
            "vector" => w.vector = v,
            "importance" => w.importance = v,
            "recency" => w.recency = v,
            "recency_half_life_days" => w.recency_half_life_days = v,
            "date" => w.date = v,
            other => return Err(format!("--weights: unknown weight '{other}'")),
        }
    }
    Ok(w)
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        misses: false,
        grid: false,
        check: false,
        models_dir: None,
        weights: SearchWeights::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--misses" => a.misses = true,
            "--grid" => a.grid = true,
            "--check" => a.check = true,
            "--models-dir" => {
                a.models_dir = Some(it.next().ok_or("--models-dir needs a directory")?.into())
            }
            "--weights" => {
                let spec = it.next().ok_or("--weights needs name=value pairs")?;
                a.weights = parse_weights(&spec, a.weights)?;
            }
            "-h" | "--help" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}'\n{}", usage())),
        }
    }
    Ok(a)
}

/// The share of `evidence` among the first `k` of `ranked`.
fn recall(evidence: &[String], ranked: &[String], k: usize) -> f64 {
    let top = &ranked[..ranked.len().min(k)];
    let found = evidence.iter().filter(|e| top.contains(e)).count();
    found as f64 / evidence.len() as f64
}

/// One question's ranked turn ids per mode.
struct Ranked {
    by_mode: Vec<Vec<String>>,
}

/// Mean recall@5 and @10 of one mode over some questions.
#[derive(Clone, Copy, Default)]
struct Cell {
    n: usize,
    r5: f64,
    r10: f64,
}

fn cell(questions: &[&Question], ranked: &[&Ranked], mode: usize) -> Cell {
    let n = questions.len();
    if n == 0 {
        return Cell::default();
    }
    let (mut r5, mut r10) = (0.0, 0.0);
    for (q, r) in questions.iter().zip(ranked) {
        r5 += recall(&q.evidence, &r.by_mode[mode], 5);
        r10 += recall(&q.evidence, &r.by_mode[mode], 10);
    }
    Cell {
        n,
        r5: r5 / n as f64,
        r10: r10 / n as f64,
    }
}

/// Rows of the table: each kind, then all questions.
fn rows(data: &Dataset, ranked: &[Ranked]) -> Vec<(&'static str, Vec<Cell>)> {
    let modes = ranked.first().map_or(0, |r| r.by_mode.len());
    let mut out = Vec::new();
    for kind in Kind::ALL {
        let (qs, rs): (Vec<&Question>, Vec<&Ranked>) = data
            .questions
            .iter()
            .zip(ranked)
            .filter(|(q, _)| q.kind == kind)
            .unzip();
        out.push((kind.name(), (0..modes).map(|m| cell(&qs, &rs, m)).collect()));
    }
    let qs: Vec<&Question> = data.questions.iter().collect();
    let rs: Vec<&Ranked> = ranked.iter().collect();
    out.push(("overall", (0..modes).map(|m| cell(&qs, &rs, m)).collect()));
    out
}

/// A mode's column title.
fn mode_title(m: SearchMode) -> &'static str {
    match m {
        SearchMode::Keyword => "keyword (BM25)",
        other => mode_name(other),
    }
}

fn mode_name(m: SearchMode) -> &'static str {
    match m {
        SearchMode::Keyword => "keyword",
        SearchMode::Vector => "vector",
        SearchMode::Hybrid => "hybrid",
        SearchMode::Associative => "associative",
    }
}

/// Loads every turn as an archival entry; returns the store's ids mapped to turn ids.
fn load(memory: &Memory, data: &Dataset) -> Result<HashMap<MemoryId, String>, String> {
    let mut ids = HashMap::new();
    for t in &data.turns {
        let inserted = memory
            .insert(NewMemory {
                content: t.text.clone(),
                tags: vec![t.session.to_string()],
                importance: None,
                tier: MemoryTier::Archival,
                provenance: Provenance {
                    origin: "eval".into(),
                    ..Default::default()
                },
                created_at: Some(t.at),
            })
            .map_err(|e| format!("cannot store turn {}: {e}", t.id))?;
        for id in inserted.ids {
            ids.insert(id, t.id.clone());
        }
    }
    let warnings = memory.take_warnings();
    if !warnings.is_empty() {
        return Err(format!(
            "embedding failed while loading: {}",
            warnings.join("; ")
        ));
    }
    Ok(ids)
}

/// Ranks every question in every mode.
fn rank_all(
    memory: &Memory,
    data: &Dataset,
    vectors: &[Vec<f32>],
    ids: &HashMap<MemoryId, String>,
    modes: &[SearchMode],
) -> Result<Vec<Ranked>, String> {
    data.questions
        .iter()
        .zip(vectors)
        .map(|(q, v)| {
            let by_mode = modes
                .iter()
                .map(|m| {
                    memory
                        .rank(
                            &q.text,
                            Some(v),
                            &[MemoryTier::Archival],
                            DEPTH,
                            *m,
                            Default::default(),
                        )
                        .map(|hits| {
                            hits.iter()
                                .filter_map(|h| ids.get(&h.id).cloned())
                                .collect::<Vec<_>>()
                        })
                        .map_err(|e| format!("{}: search failed: {e}", q.id))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Ranked { by_mode })
        })
        .collect()
}

fn memory_with(store: &Store, embedder: &Arc<dyn Embedder>, weights: SearchWeights) -> Memory {
    Memory::new(
        store.clone(),
        MemoryParams {
            search: weights,
            ..MemoryParams::default()
        },
        Some(embedder.clone()),
        MemoryScope::Project("memory-eval".into()),
        Vec::new(),
    )
}

fn print_table(data: &Dataset, rows: &[(&'static str, Vec<Cell>)], model: &str, w: &SearchWeights) {
    let filler = data.turns.iter().filter(|t| t.filler).count();
    let sessions = {
        let mut s: Vec<&str> = data.turns.iter().map(|t| t.session).collect();
        s.dedup();
        s.len()
    };
    println!(
        "memory retrieval: {sessions} sessions, {} turns ({filler} filler), {} questions; embedder {model}",
        data.turns.len(),
        data.questions.len()
    );
    if data.shift_days != 0 {
        println!(
            "(timeline moved by {} days to lie in the past year)",
            data.shift_days
        );
    }
    println!(
        "hybrid weights: keyword {} vector {} importance {} recency {} (half-life {} d) date {}",
        w.keyword, w.vector, w.importance, w.recency, w.recency_half_life_days, w.date
    );
    println!();
    print!("{:<11} {:>3}", "", "");
    for m in MODES {
        print!("   {:>15}", mode_title(m));
    }
    println!();
    print!("{:<11} {:>3}", "questions", "n");
    for _ in MODES {
        print!("   {:>7} {:>7}", "R@5", "R@10");
    }
    println!();
    for (name, cells) in rows {
        print!("{:<11} {:>3}", name, cells[0].n);
        for c in cells {
            print!("   {:>7.3} {:>7.3}", c.r5, c.r10);
        }
        println!();
    }
}

fn print_misses(data: &Dataset, ranked: &[Ranked], texts: &HashMap<String, String>) {
    let hybrid = MODES
        .iter()
        .position(|m| *m == SearchMode::Hybrid)
        .unwrap_or(2);
    println!();
    println!("hybrid misses (evidence not in the top 10 marked with ✗):");
    for (q, r) in data.questions.iter().zip(ranked) {
        let top = &r.by_mode[hybrid];
        if recall(&q.evidence, top, DEPTH) >= 1.0 {
            continue;
        }
        println!();
        println!("{} [{}] {}", q.id, q.kind.name(), q.text);
        for e in &q.evidence {
            let mark = if top.contains(e) { "✓" } else { "✗" };
            println!("  {mark} {e}: {}", texts.get(e).map_or("", String::as_str));
        }
        for (i, id) in top.iter().take(5).enumerate() {
            let text = texts.get(id).map_or("", String::as_str);
            let short: String = text.chars().take(90).collect();
            println!("    {}. {id}: {short}", i + 1);
        }
    }
}

fn run() -> Result<(), (u8, String)> {
    let args = parse_args().map_err(|e| (2, e))?;
    let data = dataset::build(dataset::natural_shift(chrono::Utc::now()));
    let problems = dataset::check(&data);
    if !problems.is_empty() {
        return Err((
            1,
            format!("the data set has problems:\n  {}", problems.join("\n  ")),
        ));
    }
    if args.check {
        let count = |k: Kind| data.questions.iter().filter(|q| q.kind == k).count();
        println!(
            "data set ok: {} turns ({} filler), {} questions ({} lexical, {} paraphrase, {} date)",
            data.turns.len(),
            data.turns.iter().filter(|t| t.filler).count(),
            data.questions.len(),
            count(Kind::Lexical),
            count(Kind::Paraphrase),
            count(Kind::Date)
        );
        return Ok(());
    }

    let models_dir = args
        .models_dir
        .clone()
        .or_else(glassbox::paths::default_models_dir)
        .ok_or((
            2,
            "no models dir: set GLASSBOX_MODELS_DIR or pass --models-dir".to_string(),
        ))?;
    let minilm_dir = glassbox::models::minilm_dir(&models_dir);
    let model = MiniLm::load(&minilm_dir, &EmbeddingParams::default()).map_err(|e| {
        (
            2,
            format!(
                "the MiniLM model is needed and could not be loaded from {}: {e}\n\
                 install it with scripts/setup.sh, or point GLASSBOX_MODELS_DIR (or --models-dir) \
                 at the folder holding all-MiniLM-L6-v2/",
                minilm_dir.display()
            ),
        )
    })?;
    let embedder: Arc<dyn Embedder> = Arc::new(model);

    let tmp = tempfile::tempdir().map_err(|e| (1, format!("cannot make a temp dir: {e}")))?;
    let store = Store::open(&tmp.path().join("eval.redb"))
        .map_err(|e| (1, format!("cannot open the temp store: {e}")))?;
    let memory = memory_with(&store, &embedder, args.weights.clone());
    let started = std::time::Instant::now();
    let ids = load(&memory, &data).map_err(|e| (1, e))?;
    let load_secs = started.elapsed().as_secs_f64();

    // The query vectors are made once, as `Memory::find` makes them, and shared by every
    // mode and weight setting.
    let texts: Vec<&str> = data.questions.iter().map(|q| q.text.as_str()).collect();
    let vectors = embedder
        .embed(&texts)
        .map_err(|e| (1, format!("cannot embed the questions: {e}")))?;
    let ranked = rank_all(&memory, &data, &vectors, &ids, &MODES).map_err(|e| (1, e))?;
    let table = rows(&data, &ranked);

    if args.json {
        let results: serde_json::Map<String, serde_json::Value> = MODES
            .iter()
            .enumerate()
            .map(|(m, mode)| {
                let per: serde_json::Map<String, serde_json::Value> = table
                    .iter()
                    .map(|(name, cells)| {
                        let c = cells[m];
                        (
                            (*name).to_string(),
                            json!({"n": c.n, "recall_at_5": c.r5, "recall_at_10": c.r10}),
                        )
                    })
                    .collect();
                (mode_name(*mode).to_string(), serde_json::Value::Object(per))
            })
            .collect();
        let questions: Vec<serde_json::Value> = data
            .questions
            .iter()
            .zip(&ranked)
            .map(|(q, r)| {
                let modes: serde_json::Map<String, serde_json::Value> = MODES
                    .iter()
                    .enumerate()
                    .map(|(m, mode)| {
                        (
                            mode_name(*mode).to_string(),
                            json!({
                                "recall_at_5": recall(&q.evidence, &r.by_mode[m], 5),
                                "recall_at_10": recall(&q.evidence, &r.by_mode[m], 10),
                                "top": r.by_mode[m],
                            }),
                        )
                    })
                    .collect();
                json!({
                    "id": q.id,
                    "kind": q.kind.name(),
                    "text": q.text,
                    "evidence": q.evidence,
                    "results": modes,
                })
            })
            .collect();
        let out = json!({
            "dataset": {
                "sessions": data.turns.iter().map(|t| t.session).collect::<std::collections::BTreeSet<_>>().len(),
                "turns": data.turns.len(),
                "filler_turns": data.turns.iter().filter(|t| t.filler).count(),
                "questions": data.questions.len(),
                "shift_days": data.shift_days,
            },
            "embedder": embedder.id(),
            "weights": args.weights,
            "load_seconds": load_secs,
            "results": results,
            "questions": questions,
        });
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_table(&data, &table, embedder.id(), &args.weights);
        eprintln!(
            "\n(loaded and embedded {} turns in {load_secs:.1} s)",
            data.turns.len()
        );
    }

    if args.misses {
        let texts: HashMap<String, String> = data
            .turns
            .iter()
            .map(|t| (t.id.clone(), t.text.clone()))
            .collect();
        print_misses(&data, &ranked, &texts);
    }

    if args.grid {
        println!();
        println!("grid (hybrid only; other weights as above):");
        println!(
            "{:>7} {:>7} {:>5}   {:>7} {:>7}   {:>7} {:>7}   {:>7} {:>7}   {:>7} {:>7}",
            "keyword",
            "vector",
            "date",
            "lex@5",
            "lex@10",
            "par@5",
            "par@10",
            "date@5",
            "date@10",
            "all@5",
            "all@10"
        );
        for keyword in [0.2f32, 0.3, 0.4, 0.5, 0.6] {
            for vector in [0.4f32, 0.6, 0.8, 1.0] {
                for date in [0.3f32, 0.5, 0.8] {
                    let w = SearchWeights {
                        keyword,
                        vector,
                        date,
                        ..args.weights.clone()
                    };
                    let m = memory_with(&store, &embedder, w);
                    let r = rank_all(&m, &data, &vectors, &ids, &[SearchMode::Hybrid])
                        .map_err(|e| (1, e))?;
                    let t = rows(&data, &r);
                    print!("{keyword:>7} {vector:>7} {date:>5}");
                    for (_, cells) in &t {
                        print!("   {:>7.3} {:>7.3}", cells[0].r5, cells[0].r10);
                    }
                    println!();
                }
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, msg)) => {
            eprintln!("eval_memory: {msg}");
            ExitCode::from(code)
        }
    }
}

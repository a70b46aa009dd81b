//! ThinkFork wall time: four branches on the scripted server answering after 200, 400, 600
//! and 800 ms, then a comparison. Reported as fork wall time over the slowest branch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use glassbox::engines::fork::{ForkEngine, ForkPrompts, ForkRequest, ForkSettings, ForkStyle};
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::prompts::Prompts;
use glassbox::store::Store;
use serde_json::json;
use support::{Script, ScriptedServer, Step};

const DELAYS_MS: [u64; 4] = [200, 400, 600, 800];

fn sse(v: &serde_json::Value) -> String {
    let delta = json!({"choices":[{"index":0,"delta":{"content": v.to_string()}}]});
    let stop = json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

fn script() -> Script {
    let conclusion = json!({"conclusion": "c", "confidence": 0.7, "keyInsights": ["i"]});
    let mut steps: Vec<Step> = DELAYS_MS
        .iter()
        .map(|&ms| {
            Step::status(200)
                .header("content-type", "text/event-stream")
                .chunk_after(Duration::from_millis(ms), sse(&conclusion))
        })
        .collect();
    let comparison = json!({"convergencePoints": [], "divergencePoints": [], "metaInsight": "m"});
    steps.push(Step::sse(sse(&comparison)));
    Script::new(steps)
}

/// One fork against a fresh server; returns its wall time.
async fn one_fork() -> Duration {
    let server = ScriptedServer::start(script()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{}/v1", server.url()),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let engine = ForkEngine::new(
        store,
        Arc::new(provider),
        ForkPrompts::from_prompts(&Prompts::load(dir.path())),
        ForkSettings::new("bench"),
    );
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let req = ForkRequest {
        session: None,
        query: "Which way?".into(),
        styles: ForkStyle::ALL.to_vec(),
        guidance: Vec::new(),
    };
    let start = Instant::now();
    let out = engine.fork(req, &tx).await.unwrap();
    let wall = start.elapsed();
    assert!(out.data.branches.iter().all(|b| b.ok()));
    wall
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let slowest = Duration::from_millis(DELAYS_MS[3]);
    let mut ratios = Vec::new();
    let mut g = c.benchmark_group("fork");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("4_branches_200_to_800ms", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let wall = rt.block_on(one_fork());
                ratios.push(wall.as_secs_f64() / slowest.as_secs_f64());
                total += wall;
            }
            total
        })
    });
    g.finish();
    ratios.sort_by(f64::total_cmp);
    if let (Some(min), Some(max)) = (ratios.first(), ratios.last()) {
        let median = ratios[ratios.len() / 2];
        println!(
            "fork wall time / slowest branch: median {median:.3} (min {min:.3}, max {max:.3}, {} forks)",
            ratios.len()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

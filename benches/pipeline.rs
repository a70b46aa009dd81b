//! Ultra-deep's solver stage: the three solvers on the scripted server answering after 200,
//! 400 and 600 ms. Reported as the stage's wall time (from `parallel_start` to the last
//! solver's `layer_complete`) over the slowest solver's own duration: 1.0 is perfect overlap,
//! 2.0 would be the three run one after another.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use glassbox::config::{Config, DEFAULT_TOML};
use glassbox::engines::llm::http::{ApiKey, HttpSettings};
use glassbox::engines::llm::openai::OpenAiProvider;
use glassbox::engines::pipeline::{
    Grounder, Layer, LayerThinking, Mode, PipelineEngine, PipelineEvent, PipelinePrompts,
    PipelineRequest,
};
use glassbox::engines::prompts::Prompts;
use glassbox::store::Store;
use serde_json::json;
use support::{Script, ScriptedServer, Step};
use tokio_util::sync::CancellationToken;

const SOLVER_DELAYS_MS: [u64; 3] = [200, 400, 600];

fn sse(text: &str) -> String {
    let delta = json!({"choices":[{"index":0,"delta":{"content": text}}]});
    let stop = json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

fn script() -> Script {
    let artifact = json!({"score": 90, "facts": ["f"], "missing_elements": []}).to_string();
    // cortex, deep decomposition, the three solvers (in whatever order they ask), then the
    // skeptic, verifier, synthesizer, meta-critic and final confidence.
    let mut steps = vec![Step::sse(sse(&artifact)), Step::sse(sse(&artifact))];
    for ms in SOLVER_DELAYS_MS {
        steps.push(
            Step::status(200)
                .header("content-type", "text/event-stream")
                .chunk_after(Duration::from_millis(ms), sse("A solution.")),
        );
    }
    for _ in 0..5 {
        steps.push(Step::sse(sse(&artifact)));
    }
    Script::new(steps)
}

/// One ultra-deep run; returns (solver stage wall time, slowest solver's duration).
async fn one_run() -> (Duration, Duration) {
    let server = ScriptedServer::start(script()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb")).unwrap();
    let cfg: Config = toml::from_str(DEFAULT_TOML).unwrap();
    let provider = OpenAiProvider::new(HttpSettings {
        base_url: format!("{}/v1", server.url()),
        keys: vec![ApiKey::new("k")],
        max_retries: 0,
        ..Default::default()
    })
    .unwrap();
    let engine = PipelineEngine {
        grounder: Grounder::new(store.clone(), None, cfg.search.clone()),
        store,
        provider: Arc::new(provider),
        model: "bench".into(),
        params: cfg.pipeline.clone(),
        prompts: PipelinePrompts::from(&Prompts::builtin()),
        thinking: LayerThinking::default(),
        seed: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watch = tokio::spawn(async move {
        let mut start = None;
        let mut end = None;
        let mut slowest = 0;
        while let Some(ev) = rx.recv().await {
            match ev {
                PipelineEvent::ParallelStart { .. } => start = Some(Instant::now()),
                PipelineEvent::LayerComplete {
                    layer, duration_ms, ..
                } if Layer::SOLVERS.contains(&layer) => {
                    end = Some(Instant::now());
                    slowest = slowest.max(duration_ms);
                }
                _ => {}
            }
        }
        (
            end.unwrap() - start.unwrap(),
            Duration::from_millis(slowest),
        )
    });
    let req = PipelineRequest {
        question: "Which way?".into(),
        mode: Mode::UltraDeep,
        session: None,
        escalate: true,
    };
    engine.run(req, tx, CancellationToken::new()).await.unwrap();
    watch.await.unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut ratios = Vec::new();
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    g.bench_function("ultra_solvers_200_to_600ms", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (stage, slowest) = rt.block_on(one_run());
                ratios.push(stage.as_secs_f64() / slowest.as_secs_f64());
                total += stage;
            }
            total
        })
    });
    g.finish();
    ratios.sort_by(f64::total_cmp);
    if let (Some(min), Some(max)) = (ratios.first(), ratios.last()) {
        let median = ratios[ratios.len() / 2];
        println!(
            "ultra-deep solver stage / slowest solver: median {median:.3} (min {min:.3}, max {max:.3}, {} runs)",
            ratios.len()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

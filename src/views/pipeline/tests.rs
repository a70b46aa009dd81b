#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::*;
use crate::engines::pipeline::Source;
use crate::views::Keys;
use crate::views::markdown::{HighlightCache, MarkdownCache};
use crate::views::theme::{ColorDepth, Theme};

/// The keys of the built-in `[pipeline]` section and the panes, as the keymap would answer.
struct PipelineKeys;

impl Keys for PipelineKeys {
    fn keys(&self, action: &str) -> Vec<String> {
        let k: &[&str] = match action {
            "ask_pipeline" => &["i"],
            "pipeline_mode" => &["tab", "m"],
            "toggle_layer" => &["space"],
            "resume_pipeline" => &["r"],
            "move_down" => &["j"],
            "move_up" => &["k"],
            "page_down" => &["pgdn"],
            "page_up" => &["pgup"],
            "cancel_run" => &["esc"],
            _ => &[],
        };
        k.iter().map(|s| s.to_string()).collect()
    }
}

fn done(layer: Layer, ms: u64) -> LayerPane {
    LayerPane {
        status: LayerStatus::Done,
        duration_ms: Some(ms),
        ..LayerPane::pending(layer)
    }
}

fn with_text(mut p: LayerPane, text: &str) -> LayerPane {
    p.text = text.to_string();
    p
}

fn with_artifact(mut p: LayerPane, a: Value) -> LayerPane {
    p.text = a.to_string();
    p.artifact = Some(a);
    p
}

fn cortex() -> LayerPane {
    with_artifact(
        done(Layer::Cortex, 640),
        json!({"complexity": "medium", "domain": "science", "needs_web_search": false,
               "recommended_mode": "deep", "reasoning_modes": ["causal"]}),
    )
}

fn deep_layers() -> Vec<LayerPane> {
    let mut solver = with_text(
        done(Layer::PrimarySolver, 4210),
        "Rayleigh scattering: air molecules scatter short wavelengths far more than long \
         ones (∝ 1/λ⁴), so blue light reaches the eye from every direction of the sky.",
    );
    solver.thinking = "The question is about the colour of the sky. Start from scattering.".into();
    vec![
        cortex(),
        with_artifact(
            done(Layer::Decomposition, 1320),
            json!({"facts": ["sunlight is white", "air scatters light"],
                   "intent": "explain why the daytime sky looks blue",
                   "constraints": [], "unknowns": [], "output_type": "explanation"}),
        ),
        solver,
        with_artifact(
            done(Layer::FastCritic, 980),
            json!({"issues": ["violet is scattered even more"], "confidence_flags": [],
                   "missing_angles": []}),
        ),
        with_text(
            done(Layer::Refiner, 2650),
            "The sky is blue because air scatters short wavelengths most (Rayleigh \
             scattering); violet scatters even more, but the sun emits less of it and our \
             eyes are less sensitive to it.",
        ),
        with_artifact(
            done(Layer::ConfidenceGate, 410),
            json!({"score": 92, "assumptions": ["a clear daytime sky"],
                   "uncertainty_notes": []}),
        ),
    ]
}

fn finished_deep() -> RunView {
    RunView {
        question: "Why is the sky blue?".into(),
        requested: Some(Mode::Deep),
        mode: Some(Mode::Deep),
        phase: Phase::Done,
        layers: deep_layers(),
        answer: Some(
            "The sky is blue because air scatters short wavelengths most (Rayleigh \
             scattering); violet scatters even more, but the sun emits less of it and our \
             eyes are less sensitive to it."
                .into(),
        ),
        fin: Some(Final {
            confidence: Some(92),
            assumptions: vec!["a clear daytime sky".into()],
            mode: Some(Mode::Deep),
            ..Final::default()
        }),
        ..RunView::default()
    }
}

fn escalated_ultra() -> RunView {
    let mut layers = deep_layers();
    layers[5] = with_artifact(
        done(Layer::ConfidenceGate, 390),
        json!({"score": 55, "assumptions": [], "uncertainty_notes": ["sources disagree"]}),
    );
    layers.push(with_artifact(
        done(Layer::DeepDecomposition, 1500),
        json!({"facts": ["2 + 2 = 4"], "intent": "check the sum", "constraints": [],
               "unknowns": ["the base"], "output_type": "number"}),
    ));
    layers.push(with_text(
        done(Layer::SolverA, 2100),
        "In base ten the sum is 4, the usual reading.",
    ));
    layers.push(with_text(
        done(Layer::SolverB, 2400),
        "Failure mode: a base below five has no digit 4; in base three 2 + 2 = 11.",
    ));
    layers.push(with_text(
        done(Layer::SolverC, 3050),
        "Contrarian: as strings, \"2\" + \"2\" is \"22\".",
    ));
    let mut skeptic = done(Layer::Skeptic, 800);
    skeptic.status = LayerStatus::Failed;
    skeptic.text = "not json at all".into();
    skeptic.error = Some("the answer holds no JSON object".into());
    layers.push(skeptic);
    layers.push(with_artifact(
        done(Layer::Verifier, 700),
        json!({"logical_flow_valid": true, "assumption_issues": [], "consistency_issues": [],
               "overall_validity": "high"}),
    ));
    layers.push(with_text(
        done(Layer::Synthesizer, 1900),
        "4, in base ten; other readings are noted.",
    ));
    layers.push(with_artifact(
        done(Layer::MetaCritic, 500),
        json!({"fully_answers_user": true, "missing_elements": [],
               "quality_assessment": "clear"}),
    ));
    layers.push(with_artifact(
        done(Layer::FinalConfidence, 350),
        json!({"score": 64, "assumptions": ["base ten"], "uncertainty_notes": []}),
    ));
    RunView {
        question: "What is 2 + 2?".into(),
        requested: Some(Mode::Deep),
        mode: Some(Mode::UltraDeep),
        phase: Phase::Done,
        layers,
        escalation: Some("confidence 55 is below 70".into()),
        answer: Some("4, in base ten; other readings are noted.".into()),
        fin: Some(Final {
            confidence: Some(64),
            assumptions: vec!["base ten".into()],
            mode: Some(Mode::UltraDeep),
            was_escalated: true,
            failed_layers: vec![Layer::Skeptic],
            notes: vec!["no skeptic's report: the synthesis went on without it".into()],
            sources: vec![Source {
                title: "Positional notation".into(),
                url: "glassbox:session/1#2".into(),
                snippet: String::new(),
                origin: "sessions".into(),
            }],
            ..Final::default()
        }),
        ..RunView::default()
    }
}

fn running() -> RunView {
    let mut solver = LayerPane::pending(Layer::PrimarySolver);
    solver.status = LayerStatus::Running;
    solver.thinking = "Scattering depends on wavelength. Shorter wavelengths scatter more.".into();
    solver.text = "Air molecules scatter blue light".into();
    let mut layers = deep_layers();
    layers.truncate(2);
    layers.push(solver);
    layers.extend(
        [Layer::FastCritic, Layer::Refiner, Layer::ConfidenceGate]
            .into_iter()
            .map(LayerPane::pending),
    );
    RunView {
        question: "Why is the sky blue?".into(),
        requested: Some(Mode::Auto),
        mode: Some(Mode::Deep),
        phase: Phase::Running,
        layers,
        ..RunView::default()
    }
}

fn screen(
    w: u16,
    h: u16,
    run: &RunView,
    focus: Option<Unit>,
    input: &str,
    typing: bool,
    hint: Option<&str>,
) -> String {
    let mut question = InputBox::default();
    question.set_text(input);
    let toggled = HashMap::new();
    let view = PipelineView {
        run,
        input: &question,
        mode: Mode::Deep,
        typing,
        focus,
        toggled: &toggled,
        scroll: 0,
        hint,
    };
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let highlights = HighlightCache::new(4);
    let markdown = MarkdownCache::default();
    let cx = ViewCx {
        theme: &theme,
        keys: &PipelineKeys,
        highlights: &highlights,
        markdown: &markdown,
    };
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, f.area(), &view, &cx)).unwrap();
    term.backend().to_string()
}

#[test]
fn units_group_the_solvers_and_end_with_the_answer() {
    let run = escalated_ultra();
    let units = run.units();
    assert_eq!(units.first(), Some(&Unit::Layer(Layer::Cortex)));
    assert_eq!(units.iter().filter(|u| **u == Unit::Solvers).count(), 1);
    assert_eq!(units.last(), Some(&Unit::Final));
    assert_eq!(run.status(Unit::Solvers), LayerStatus::Done);
    assert!(run.escalated());
    // A pane added later lands in layer order.
    let mut run = running();
    run.pane_mut(Layer::WebSearch).status = LayerStatus::Done;
    assert_eq!(run.layers[1].layer, Layer::WebSearch);
    assert_eq!(confidence_role(90), Role::ConfidenceHigh);
    assert_eq!(confidence_role(70), Role::ConfidenceMid);
    assert_eq!(confidence_role(69), Role::ConfidenceLow);
}

#[test]
fn finished_deep_run_80x24() {
    let text = screen(80, 24, &finished_deep(), None, "", false, None);
    assert!(text.contains("confidence  92%"), "{text}");
    assert!(text.contains("✓ Decomposing problem"), "{text}");
    insta::assert_snapshot!("finished_deep_run_80x24", text);
}

#[test]
fn finished_deep_run_160x45() {
    // The decomposition has the focus: its artifact is drawn as a table.
    let run = finished_deep();
    let text = screen(
        160,
        45,
        &run,
        Some(Unit::Layer(Layer::Decomposition)),
        "",
        false,
        None,
    );
    assert!(text.contains("• sunlight is white"), "{text}");
    assert!(text.contains("output type"), "{text}");
    insta::assert_snapshot!("finished_deep_run_160x45", text);
}

#[test]
fn escalated_ultra_deep_run_80x24() {
    let text = screen(
        80,
        24,
        &escalated_ultra(),
        Some(Unit::Solvers),
        "",
        false,
        None,
    );
    assert!(text.contains("ESCALATED"), "{text}");
    insta::assert_snapshot!("escalated_ultra_deep_run_80x24", text);
}

#[test]
fn escalated_ultra_deep_run_160x45() {
    let text = screen(
        160,
        45,
        &escalated_ultra(),
        Some(Unit::Solvers),
        "",
        false,
        None,
    );
    // The three solvers share one row.
    let row = text
        .lines()
        .find(|l| l.contains("Solver A") && l.contains("Solver B") && l.contains("Solver C"));
    assert!(row.is_some(), "{text}");
    assert!(text.contains("skeptic"), "{text}");
    insta::assert_snapshot!("escalated_ultra_deep_run_160x45", text);
}

#[test]
fn running_layer_80x24() {
    let text = screen(80, 24, &running(), None, "", false, None);
    assert!(text.contains("⟳ Solving"), "{text}");
    insta::assert_snapshot!("running_layer_80x24", text);
}

#[test]
fn running_layer_160x45() {
    let text = screen(160, 45, &running(), None, "", false, None);
    assert!(
        text.contains("┆ Scattering depends on wavelength"),
        "{text}"
    );
    assert!(text.contains("○ Critiquing"), "{text}");
    insta::assert_snapshot!("running_layer_160x45", text);
}

#[test]
fn empty_state_80x24() {
    let run = RunView::default();
    let text = screen(80, 24, &run, None, "", false, Some("no session open"));
    assert!(text.contains("[deep] ▏i asks a question"), "{text}");
    insta::assert_snapshot!("empty_state_80x24", text);
}

#[test]
fn empty_state_160x45() {
    // Typing a question: the line shows it with its keys.
    let run = RunView::default();
    let text = screen(160, 45, &run, None, "Why is the sky blue?", true, None);
    assert!(text.contains("[deep] ▏Why is the sky blue?"), "{text}");
    insta::assert_snapshot!("empty_state_160x45", text);
}

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::*;
use crate::engines::research::{
    AuditResult, Citation, CitationKind, Plan, ReasoningEntry, ResearchState, Stage, Status, Step,
    Tool, Verdict, Violation,
};
use crate::store::{NodeId, RunId, SessionId};
use crate::views::Keys;
use crate::views::markdown::{HighlightCache, MarkdownCache};
use crate::views::theme::{ColorDepth, Theme};

/// The keys of the built-in `[research]` section and the panes, as the keymap would answer.
struct ResearchKeys;

impl Keys for ResearchKeys {
    fn keys(&self, action: &str) -> Vec<String> {
        let k: &[&str] = match action {
            "ask_research" => &["i"],
            "review_plan" => &["A"],
            "resume_research" => &["r"],
            "focus_next" => &["tab"],
            "move_down" => &["j"],
            "move_up" => &["k"],
            "select" => &["enter"],
            "cancel_run" => &["esc"],
            _ => &[],
        };
        k.iter().map(|s| s.to_string()).collect()
    }
}

fn entry(min: u32, node: Stage, summary: &str) -> ReasoningEntry {
    ReasoningEntry {
        node,
        timestamp: Utc.with_ymd_and_hms(2025, 3, 1, 10, min, 0).unwrap(),
        summary: summary.into(),
        raw_thought: None,
    }
}

fn step(tool: Tool, input: &str, rationale: &str) -> Step {
    Step {
        id: format!("s-{input}"),
        tool,
        input: input.into(),
        rationale: rationale.into(),
        output: None,
        error: None,
        node: None,
    }
}

/// A plan of three steps that passed its second audit, waiting at the gate.
pub(crate) fn awaiting() -> ResearchState {
    ResearchState {
        thread_id: RunId::new(),
        session_id: SessionId::new(),
        user_query: "Why is the sky blue?".into(),
        plan: Some(Plan {
            objective: "Explain why the daytime sky looks blue, from the notes and past sessions"
                .into(),
            steps: vec![
                step(
                    Tool::KnowledgeSearch,
                    "rayleigh scattering wavelength",
                    "the physics notes cover scattering",
                ),
                step(
                    Tool::SessionSearch,
                    "sky colour",
                    "an earlier session discussed it",
                ),
                step(Tool::MemorySearch, "sky", "anything learned before"),
            ],
            estimated_token_budget: 6_000,
            revision: 2,
        }),
        audit_result: Some(AuditResult {
            verdict: Verdict::Approved,
            policy_violations: Vec::new(),
            suggestions: vec!["Prefer the notes over memory when they disagree.".into()],
            notes: vec!["listed with an approval, not counted: budget is generous".into()],
        }),
        revision: 1,
        max_plan_revisions: 3,
        reasoning: vec![
            entry(
                0,
                Stage::Thinker,
                "plan revision 1: 2 step(s) — Explain the blue sky",
            ),
            entry(
                1,
                Stage::Auditor,
                "rejected plan revision 1 (1 of 3): web_search needs the network (policy: \"Use only the tools the run allows.\")",
            ),
            entry(
                2,
                Stage::Thinker,
                "plan revision 2: 3 step(s) — Explain why the daytime sky looks blue",
            ),
            entry(3, Stage::Auditor, "approved plan revision 2"),
        ],
        status: Status::AwaitingApproval,
        human_approved: false,
        next: Stage::HitlGate,
        feedback: Vec::new(),
        final_report: None,
        citations: Vec::new(),
        error_message: None,
        end_reason: None,
        last_node: NodeId::new(),
        report_node: None,
    }
}

/// The same run approved, its first step done and the second running.
fn running() -> RunView {
    let mut st = awaiting();
    st.status = Status::Executing;
    st.human_approved = true;
    st.next = Stage::ToolExecutor;
    let p = st.plan.as_mut().unwrap();
    p.steps[0].output = Some(
        "[1] Physics notes (notes/optics.md:120-480): Rayleigh scattering goes as 1/λ⁴\n[2] Physics notes (notes/optics.md:480-900): the sun emits less violet".into(),
    );
    st.reasoning
        .push(entry(4, Stage::HitlGate, "approved by you"));
    st.reasoning.push(entry(
        5,
        Stage::ToolExecutor,
        "step 1 knowledge_search \"rayleigh scattering wavelength\": 2 source(s)",
    ));
    RunView {
        run: Some(st.thread_id),
        question: st.user_query.clone(),
        phase: Phase::Running,
        state: Some(st),
        ..RunView::default()
    }
}

fn citation(n: usize, kind: CitationKind, source: &str, label: &str, cited: bool) -> Citation {
    Citation {
        n,
        kind,
        source: source.into(),
        span: (kind == CitationKind::Knowledge).then_some([120, 480]),
        label: label.into(),
        text: "Rayleigh scattering: the intensity of scattered light goes as 1/λ⁴.".into(),
        step: None,
        cited,
    }
}

/// The run complete: every step ran (the last failed), the report cites two sources.
pub(crate) fn complete() -> ResearchState {
    let mut st = running().state.unwrap();
    st.status = Status::Complete;
    st.next = Stage::End;
    let p = st.plan.as_mut().unwrap();
    p.steps[1].output = Some("[3] Sky colour (session/1#2): blue from scattering".into());
    p.steps[2].error = Some("memory is not available to this run".into());
    st.reasoning.push(entry(
        6,
        Stage::ToolExecutor,
        "step 2 session_search \"sky colour\": 1 source(s)",
    ));
    st.reasoning.push(entry(
        7,
        Stage::ToolExecutor,
        "step 3 memory_search failed: memory is not available to this run",
    ));
    st.reasoning.push(entry(
        8,
        Stage::Synthesizer,
        "report of 260 characters citing 2 of 3 source(s)",
    ));
    st.final_report = Some(
        "## Why the sky is blue\n\nAir molecules scatter short wavelengths far more than long ones: \
         the intensity goes as **1/λ⁴** [1]. Violet scatters even more, but the sun emits less of it \
         and the eye is less sensitive to it [1, 3].\n\n## Sources\n\n[1] Physics notes — notes/optics.md:120-480"
            .into(),
    );
    st.citations = vec![
        citation(
            1,
            CitationKind::Knowledge,
            "notes/optics.md",
            "Physics notes",
            true,
        ),
        citation(
            2,
            CitationKind::Knowledge,
            "notes/optics.md",
            "Physics notes (sun)",
            false,
        ),
        citation(
            3,
            CitationKind::Session,
            "session/0195a0c0-0000-7000-8000-000000000001#0195a0c0-0000-7000-8000-000000000002",
            "Sky colour",
            true,
        ),
    ];
    st
}

fn view_of(st: ResearchState, phase: Phase) -> RunView {
    RunView {
        run: Some(st.thread_id),
        question: st.user_query.clone(),
        phase,
        state: Some(st),
        ..RunView::default()
    }
}

struct Shot<'a> {
    run: &'a RunView,
    focus: Pane,
    step: usize,
    citation: usize,
    modal: Option<(ModalMode, &'a str)>,
    source: Option<&'a SourceView>,
}

fn screen(w: u16, h: u16, s: Shot<'_>) -> String {
    let question = InputBox::default();
    let mut typed = InputBox::default();
    if let Some((_, t)) = &s.modal {
        typed.set_text(*t);
    }
    let mode = s.modal.as_ref().map(|(m, _)| m.clone());
    let view = ResearchView {
        run: s.run,
        input: &question,
        typing: false,
        focus: s.focus,
        step: s.step,
        citation: s.citation,
        scroll: 0,
        hint: None,
        modal: mode.as_ref().map(|m| ModalView {
            mode: m,
            input: &typed,
            step: s.step,
            scroll: 0,
        }),
        source: s.source,
    };
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let highlights = HighlightCache::new(4);
    let markdown = MarkdownCache::default();
    let cx = ViewCx {
        theme: &theme,
        keys: &ResearchKeys,
        highlights: &highlights,
        markdown: &markdown,
    };
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| render(f, f.area(), &view, &cx)).unwrap();
    term.backend().to_string()
}

fn shot(run: &RunView) -> Shot<'_> {
    Shot {
        run,
        focus: Pane::Plan,
        step: 0,
        citation: 0,
        modal: None,
        source: None,
    }
}

#[test]
fn running_step_states_and_output_160x45() {
    let run = running();
    assert_eq!(run.running_step(), Some(1));
    assert_eq!(run.step_state(0), StepState::Done);
    assert_eq!(run.step_state(1), StepState::Running);
    assert_eq!(run.step_state(2), StepState::Pending);
    let text = screen(160, 45, shot(&run));
    assert!(text.contains("⟳ running step 2…"), "{text}");
    assert!(text.contains("✓ 1. knowledge_search"), "{text}");
    assert!(text.contains("→ [1] Physics notes"), "{text}");
    assert!(text.contains("⟳ 2. session_search"), "{text}");
    assert!(text.contains("Tools · step 2"), "{text}");
    assert!(text.contains("approved by you"), "{text}");
    insta::assert_snapshot!("research_running_160x45", text);
}

#[test]
fn running_with_streamed_audit_80x24() {
    let mut run = running();
    run.live = Some(Live {
        node: "synthesizer".into(),
        text: "Air molecules scatter short wavelengths".into(),
        thinking: String::new(),
    });
    let text = screen(80, 24, shot(&run));
    assert!(text.contains("writing the report"), "{text}");
    assert!(text.contains("Air molecules scatter"), "{text}");
    insta::assert_snapshot!("research_running_80x24", text);
}

#[test]
fn awaiting_approval_modal_160x45() {
    let run = view_of(awaiting(), Phase::Interrupted);
    assert!(run.awaiting());
    let mut s = shot(&run);
    s.step = 1;
    s.modal = Some((ModalMode::Review, ""));
    let text = screen(160, 45, s);
    assert!(text.contains("Approve this plan?"), "{text}");
    assert!(text.contains("APPROVED"), "{text}");
    assert!(text.contains("▶ 2. session_search"), "{text}");
    assert!(text.contains("a approve"), "{text}");
    insta::assert_snapshot!("research_awaiting_modal_160x45", text);
}

#[test]
fn editing_a_step_in_the_modal_80x24() {
    let run = view_of(awaiting(), Phase::Interrupted);
    let mut s = shot(&run);
    s.modal = Some((
        ModalMode::Edit {
            tool: Tool::SessionSearch,
        },
        "rayleigh",
    ));
    let text = screen(80, 24, s);
    assert!(
        text.contains("Step 1 input · tool session_search"),
        "{text}"
    );
    assert!(text.contains("▏rayleigh"), "{text}");
    insta::assert_snapshot!("research_modal_edit_80x24", text);
}

#[test]
fn a_rejected_audit_quotes_its_rules() {
    let mut st = awaiting();
    st.audit_result = Some(AuditResult {
        verdict: Verdict::Rejected,
        policy_violations: vec![Violation {
            rule: "Use only the tools the run allows.".into(),
            problem: "step 2 uses web_search with the network off".into(),
        }],
        suggestions: vec!["Search the knowledge base instead.".into()],
        notes: Vec::new(),
    });
    st.status = Status::Thinking;
    let run = view_of(st, Phase::Running);
    let text = screen(160, 45, shot(&run));
    assert!(text.contains("REJECTED"), "{text}");
    assert!(
        text.contains("rule: “Use only the tools the run allows.”"),
        "{text}"
    );
    assert!(
        text.contains("Search the knowledge base instead."),
        "{text}"
    );
}

#[test]
fn complete_report_with_citations_160x45() {
    let run = view_of(complete(), Phase::Done);
    let mut s = shot(&run);
    s.focus = Pane::Report;
    s.citation = 2;
    let text = screen(160, 45, s);
    assert!(text.contains("✓ complete"), "{text}");
    assert!(text.contains("[1, 3]"), "{text}");
    assert!(text.contains("Sources (3)"), "{text}");
    assert!(text.contains("▶[3] Sky colour"), "{text}");
    assert!(text.contains("(not cited)"), "{text}");
    assert!(text.contains("✗ 3. memory_search"), "{text}");
    // The engine's own source list is replaced by the pane's.
    assert!(!text.contains("## Sources"), "{text}");
    insta::assert_snapshot!("research_complete_160x45", text);
}

#[test]
fn complete_report_80x24_and_a_source_overlay() {
    let run = view_of(complete(), Phase::Done);
    let mut s = shot(&run);
    s.focus = Pane::Report;
    let text = screen(80, 24, s);
    assert!(text.contains("Report"), "{text}");
    insta::assert_snapshot!("research_complete_80x24", text);

    let src = SourceView {
        title: "[1] knowledge".into(),
        rows: vec![
            ("document".into(), "Physics notes".into()),
            ("source".into(), "notes/optics.md".into()),
            ("span".into(), "characters 120–480".into()),
        ],
        text: "Rayleigh scattering: the intensity of scattered light goes as 1/λ⁴.".into(),
        scroll: 0,
    };
    let mut s = shot(&run);
    s.source = Some(&src);
    let text = screen(80, 24, s);
    assert!(text.contains("[1] knowledge · Esc closes"), "{text}");
    assert!(text.contains("characters 120–480"), "{text}");
    assert!(text.contains("1/λ⁴."), "{text}");
}

#[test]
fn the_empty_workspace_says_what_it_does() {
    let run = RunView::default();
    let text = screen(80, 24, shot(&run));
    assert!(
        text.contains("[research] ▏i asks a research question"),
        "{text}"
    );
    assert!(
        text.contains("no research run in this session yet"),
        "{text}"
    );
}

#[test]
fn rows_kept_in_view() {
    // Tail panes show the newest rows; others scroll and keep the anchor row in view.
    assert_eq!(skip_rows(30, 10, true, 0, None), 20);
    assert_eq!(skip_rows(30, 10, true, 5, None), 15);
    assert_eq!(skip_rows(30, 10, false, 0, Some(25)), 16);
    assert_eq!(skip_rows(30, 10, false, 20, Some(3)), 3);
    assert_eq!(skip_rows(5, 10, false, 3, None), 0);
}

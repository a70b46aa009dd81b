//! The Think workspace's run: a question sent from the question box, its turn's events as
//! they stream (thinking, answer, steps, decision points, usage) and its end.

use crate::app::action::Action;
use crate::app::graph::{DecisionEntry, NodeEntry, StepEntry};
use crate::app::keymap::Keymap;
use crate::app::state::{Level, LoadedSession, RunPhase, RunView, State};
use crate::app::tree::TreeCursor;
use crate::app::update::{Effect, Settings};
use crate::engines::llm::StopReason;
use crate::engines::llm::loops::{LoopAction, LoopReport};
use crate::engines::orchestrator::{TurnEvent, TurnOutcome};
use crate::store::{Node, NodeId, NodeStatus, NodeType, SessionId};

fn next_run_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The turn `run` ended: the run state, a notice on error, and the session read back.
pub fn finished(
    state: &mut State,
    run: u64,
    outcome: Result<TurnOutcome, String>,
    fx: &mut Vec<Effect>,
) {
    if state.run.as_ref().is_some_and(|r| r.id == run) {
        let session = state.run.as_ref().and_then(|r| r.session);
        state.run = None;
        match outcome {
            Ok(o) => {
                state.phase = match (&o.error, &o.stop) {
                    (_, StopReason::Cancelled) => RunPhase::Interrupted,
                    (Some(e), _) => RunPhase::Failed(e.to_string()),
                    _ => RunPhase::Done,
                };
                if let Some(e) = &o.error {
                    state.notice = Some((format!("{e} — what arrived was kept"), Level::Error));
                }
                fx.push(Effect::LoadSession(o.session));
            }
            Err(e) => {
                state.notice = Some((e.clone(), Level::Error));
                state.phase = RunPhase::Failed(e);
                if let Some(s) = session {
                    fx.push(Effect::LoadSession(s));
                }
            }
        }
        fx.push(Effect::LoadSessions);
    }
}

fn live_entry(id: NodeId, kind: NodeType, text: &str) -> NodeEntry {
    let mut n = Node::new(SessionId::new(), kind, text);
    n.id = id;
    n.status = NodeStatus::Streaming;
    NodeEntry::from_node(&n, &[])
}

/// Applies one event of the turn `run` to the live run and the graph. `keymap` names the
/// keys in notices.
pub fn event(state: &mut State, run: u64, event: TurnEvent, keymap: &Keymap) {
    let Some(r) = state.run.as_mut().filter(|r| r.id == run) else {
        return;
    };
    match event {
        TurnEvent::Started { session, query } => {
            r.session = Some(session);
            r.query = Some(query);
            if state.loaded.id() != Some(session) {
                state.loaded = LoadedSession::default();
                state.graph = Default::default();
            }
            let mut q = live_entry(query, NodeType::Query, &r.question);
            q.status = NodeStatus::Complete;
            state.graph.upsert_live(q);
            state.graph.select_last();
        }
        TurnEvent::NodeCreated { id, kind } => {
            match kind {
                NodeType::Thinking => r.thinking_node = Some(id),
                NodeType::Response => r.response_node = Some(id),
                _ => {}
            }
            state.graph.upsert_live(live_entry(id, kind, ""));
        }
        TurnEvent::Thinking(t) => {
            r.thinking.push_str(&t);
            state.phase = RunPhase::Thinking;
        }
        TurnEvent::Text(t) => {
            r.response.push_str(&t);
            state.phase = RunPhase::Answering;
        }
        TurnEvent::Step { node, step } => {
            state.graph.push_step(
                node,
                StepEntry {
                    index: step.index,
                    kind: step.kind.as_str().to_string(),
                    excerpt: crate::app::graph::excerpt(&step.text, 120),
                    confidence: Some(step.confidence),
                    decisions: Vec::new(),
                },
            );
        }
        TurnEvent::Decision { node, decision } => {
            state.graph.push_decision(
                node,
                decision.step_index,
                DecisionEntry {
                    index: 0,
                    chosen: crate::app::graph::excerpt(&decision.chosen_path, 100),
                    alternatives: decision.alternatives.len(),
                    confidence: decision.confidence,
                },
            );
        }
        TurnEvent::Usage(u) => r.usage = u,
        TurnEvent::BudgetWarning { used, limit } => {
            state.notice = Some((
                format!("this session has used {used} of {limit} output tokens"),
                Level::Warn,
            ));
        }
        TurnEvent::Compacted { superseded, .. } => {
            state.notice = Some((
                format!("older turns ({superseded} nodes) were summarised to fit the context"),
                Level::Info,
            ));
        }
        TurnEvent::Loop {
            period,
            repeats,
            unit,
            in_thinking,
            action,
            ..
        } => {
            state.notice = Some((
                loop_notice(
                    LoopReport {
                        unit,
                        period,
                        repeats,
                    },
                    in_thinking,
                    action,
                    keymap,
                ),
                Level::Warn,
            ));
        }
        TurnEvent::Signature(_) | TurnEvent::Redacted | TurnEvent::ToolUse { .. } => {}
    }
}

/// The status line when the model loops: stopped, or still going and how to stop it.
fn loop_notice(
    report: LoopReport,
    in_thinking: bool,
    action: LoopAction,
    keymap: &Keymap,
) -> String {
    let place = if in_thinking { "thinking" } else { "answer" };
    match action {
        LoopAction::Stop => format!("stopped: the model was looping in its {place} ({report})"),
        LoopAction::Warn | LoopAction::Off => {
            let hint = keymap
                .keys_for(&Action::CancelRun)
                .first()
                .map(|k| format!(" — {k} stops it"))
                .unwrap_or_default();
            format!("model is looping in its {place} ({report}){hint}")
        }
    }
}

/// Sends the question in the box (or continues from the armed node when it is empty).
pub fn submit(state: &mut State, settings: &Settings<'_>, fx: &mut Vec<Effect>) {
    if state.phase.is_running() {
        state.notice = Some(("a run is in progress; Esc cancels it".into(), Level::Warn));
        return;
    }
    if state.input.is_empty() {
        match state.branch_from.and_then(|id| continuation(state, id)) {
            Some(q) => state.input.set_text(q),
            None => return,
        }
    }
    if let Err(e) = &settings.provider_ready {
        state.notice = Some((e.clone(), Level::Error));
        return;
    }
    let question = state.input.take();
    let (route, routed_effort) = settings.router.effort(&question, settings.default_effort);
    let route = state.route_override.unwrap_or(route);
    let effort = state
        .effort_override
        .or_else(|| {
            state
                .route_override
                .map(|r| r.effort(settings.router.config()))
        })
        .unwrap_or(routed_effort);
    let run = next_run_id();
    state.run = Some(RunView {
        id: run,
        session: state.loaded.id(),
        query: None,
        thinking_node: None,
        response_node: None,
        question: question.clone(),
        thinking: String::new(),
        response: String::new(),
        usage: Default::default(),
        cancel: tokio_util::sync::CancellationToken::new(),
    });
    state.phase = RunPhase::Starting;
    state.thinking_scroll = 0;
    state.response_scroll = 0;
    state.notice = None;
    let branch_from = state.branch_from.take();
    fx.push(Effect::StartTurn {
        run,
        session: state.loaded.id(),
        question,
        effort,
        route,
        branch_from,
    });
}

/// What an empty question sends when continuing from `node`: a question is asked again (a
/// new answer to it, as a branch); anything else is carried on from where it stops.
fn continuation(state: &State, node: NodeId) -> Option<String> {
    let n = state.loaded.node(node)?;
    Some(match n.kind {
        NodeType::Query if !n.text.trim().is_empty() => n.text.clone(),
        _ => CONTINUE_PROMPT.to_string(),
    })
}

/// The question an empty continuation sends after anything but a question.
pub const CONTINUE_PROMPT: &str = "Continue from here.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::llm::loops::LoopUnit;

    fn three_lines() -> LoopReport {
        LoopReport {
            unit: LoopUnit::Lines,
            period: 3,
            repeats: 5,
        }
    }

    #[test]
    fn a_loop_notice_names_the_bound_interrupt_key() {
        let mut keymap = Keymap::builtin();
        let key = keymap.keys_for(&Action::CancelRun)[0].clone();
        assert_eq!(
            loop_notice(three_lines(), false, LoopAction::Warn, &keymap),
            format!("model is looping in its answer (3-line cycle ×5) — {key} stops it")
        );
        keymap
            .merge(
                std::path::Path::new("keymap.toml"),
                "[global]\n\"esc\" = \"none\"\n\"ctrl-x\" = \"cancel_run\"\n",
            )
            .unwrap();
        assert!(
            loop_notice(three_lines(), true, LoopAction::Warn, &keymap)
                .ends_with("in its thinking (3-line cycle ×5) — ctrl-x stops it")
        );
        assert_eq!(
            loop_notice(three_lines(), true, LoopAction::Stop, &keymap),
            "stopped: the model was looping in its thinking (3-line cycle ×5)"
        );
    }

    #[test]
    fn a_loop_event_sets_the_notice_of_its_run() {
        let mut state = State::new("p".into(), "m".into(), 0);
        let mut fx = Vec::new();
        state.input.set_text("tea?");
        submit(
            &mut state,
            &Settings {
                keymap: &Keymap::builtin(),
                router: &crate::engines::orchestrator::Router::new(&Default::default()),
                default_effort: crate::engines::llm::Effort::Low,
                provider_ready: Ok(()),
            },
            &mut fx,
        );
        let run = state.run.as_ref().unwrap().id;
        event(
            &mut state,
            run,
            TurnEvent::Loop {
                node: NodeId::new(),
                period: 4,
                repeats: 4,
                unit: LoopUnit::Words,
                in_thinking: false,
                action: LoopAction::Stop,
            },
            &Keymap::builtin(),
        );
        let (text, level) = state.notice.clone().unwrap();
        assert_eq!(
            text,
            "stopped: the model was looping in its answer (4-word cycle ×4)"
        );
        assert_eq!(level, Level::Warn);
    }
}

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::app::state::{LoadedSession, Overlay};
use crate::app::update::Effect;
use crate::app::workspaces::fork::{Column as ForkColumn, Fork, FormPurpose};
use crate::app::workspaces::pipeline::{LayerPane, Pipeline};
use crate::app::workspaces::{Failure, Place, Workspaces, cx, research, sessions, think};
use crate::engines::diff::Label;
use crate::engines::fork::{BranchResult, ForkStyle};
use crate::engines::pipeline::Layer;
use crate::store::{Node, NodeId, NodeType, Session, SessionSource};
use crate::views::diff::tests::{merged, rent_or_buy};
use crate::views::pipeline::Unit;

fn state() -> State {
    State::new("openai".into(), "m".into(), 0)
}

/// Presses `=` wherever `st.workspace` says the user is.
fn mark(ws: &mut Workspaces, st: &mut State) -> Vec<Effect> {
    let mut fx = Vec::new();
    assert!(ws.action(&DiffAction::Mark.action(), st, &mut fx));
    fx
}

fn act(ws: &mut DiffWs, st: &mut State, a: Action) -> Vec<Effect> {
    let mut fx = Vec::new();
    assert!(ws.on_action(&a, &mut cx::<DiffWs>(st, &mut fx)), "{a:?}");
    fx
}

fn msg(ws: &mut DiffWs, st: &mut State, m: DiffMsg) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_msg(m, &mut cx::<DiffWs>(st, &mut fx));
    fx
}

fn effects(fx: &[Effect]) -> Vec<&DiffEffect> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Ws(ID, e) => e.downcast_ref::<DiffEffect>(),
            _ => None,
        })
        .collect()
}

fn notice(st: &State) -> String {
    st.notice
        .as_ref()
        .map(|(t, _)| t.clone())
        .unwrap_or_default()
}

fn branch(style: ForkStyle, node: NodeId) -> ForkColumn {
    ForkColumn::from_result(&BranchResult {
        style,
        body: Default::default(),
        output_tokens_used: 0,
        duration_ms: 0,
        error: None,
        node_id: Some(node),
    })
}

fn picked(node: NodeId) -> Picked {
    Picked {
        node,
        kind: NodeType::ForkBranch,
        what: None,
    }
}

/// A diff of the rent-or-buy branches started here and answered.
/// A Diff workspace (the current one) that has started diffing `a` against `b`, and the
/// effects that start asked for.
fn started(a: NodeId, b: NodeId) -> (DiffWs, State, Vec<Effect>) {
    let (mut ws, mut st) = (DiffWs::default(), state());
    st.workspace = ID;
    let mut fx = Vec::new();
    ws.start(picked(a), picked(b), &mut cx::<DiffWs>(&mut st, &mut fx));
    (ws, st, fx)
}

fn diffed() -> (DiffWs, State) {
    let d = rent_or_buy();
    let (mut ws, mut st, _) = started(d.a.node, d.b.node);
    let seq = ws.seq;
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Diffed {
            seq,
            result: Ok(Box::new(d)),
        },
    );
    (ws, st)
}

#[test]
fn the_actions_keep_their_names_and_only_marking_works_anywhere() {
    let names: Vec<(&str, Place)> = DiffAction::SPECS
        .iter()
        .map(|s| (s.name, s.place))
        .collect();
    assert_eq!(
        names,
        [
            ("diff_mark", Place::Anywhere),
            ("next_difference", Place::Own),
            ("prev_difference", Place::Own),
            ("merge_diff", Place::Own),
            ("fork_step", Place::Own),
        ]
    );
    assert_eq!(
        DiffAction::of(&DiffAction::Merge.action()),
        Some(DiffAction::Merge)
    );
    assert_eq!(DiffAction::of(&Action::MoveDown), None);
}

#[test]
fn marking_two_fork_branches_opens_the_diff_and_starts_it() {
    let (mut ws, mut st) = (Workspaces::default(), state());
    st.workspace = crate::app::workspaces::fork::ID;
    let (x, y) = (NodeId::new(), NodeId::new());
    let fork = ws.get_mut::<Fork>();
    fork.columns = vec![
        branch(ForkStyle::Conservative, x),
        branch(ForkStyle::Aggressive, y),
    ];

    // The focused branch is A; the status line says so; nothing runs yet.
    let fx = mark(&mut ws, &mut st);
    assert!(effects(&fx).is_empty() && fx.is_empty(), "{fx:?}");
    assert_eq!(
        notice(&st),
        format!(
            "marked A: fork_branch {} — mark another node to diff",
            x.short()
        )
    );
    // The same branch again unmarks it.
    mark(&mut ws, &mut st);
    assert!(notice(&st).starts_with("unmarked A: fork_branch"));
    assert!(ws.get::<DiffWs>().marked.is_none());

    mark(&mut ws, &mut st);
    ws.get_mut::<Fork>().focus = 1;
    let fx = mark(&mut ws, &mut st);
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Show(ID))),
        "B opens the Diff workspace: {fx:?}"
    );
    match effects(&fx).as_slice() {
        [DiffEffect::Diff { a, b, .. }] => assert_eq!((*a, *b), (x, y)),
        other => panic!("{other:?}"),
    }
    let d = ws.get::<DiffWs>();
    assert!(d.running() && d.marked.is_none());
    assert_eq!(d.phase, JobPhase::Running);
    let (a, b) = d.pair.as_ref().unwrap();
    assert_eq!(
        (a.what.as_deref(), b.what.as_deref()),
        (Some("conservative"), Some("aggressive"))
    );
}

#[test]
fn a_pipeline_layer_and_a_think_graph_node_are_marked_too() {
    let (mut ws, mut st) = (Workspaces::default(), state());
    // Pipeline: the focused layer's node, once it has one.
    st.workspace = crate::app::workspaces::pipeline::ID;
    let layer = NodeId::new();
    let p = ws.get_mut::<Pipeline>();
    p.view.layers = vec![
        LayerPane::pending(Layer::Cortex),
        LayerPane::pending(Layer::Instant),
    ];
    p.view.layers[0].node = Some(layer);
    p.focus = Some(Unit::Layer(Layer::Instant));
    assert_eq!(
        ws.selected_node(&st),
        None,
        "a layer not started has no node"
    );
    ws.get_mut::<Pipeline>().focus = Some(Unit::Layer(Layer::Cortex));
    let got = ws.selected_node(&st).unwrap();
    assert_eq!(
        (got.node, got.kind, got.what.as_deref()),
        (layer, NodeType::PipelineLayer, Some("cortex"))
    );

    // Think and Sessions: the node selected in the graph.
    let s = Session::new("Rent or buy?", SessionSource::Glassbox);
    let q = Node::new(s.id, NodeType::Query, "Rent or buy?");
    let t = Node::new(s.id, NodeType::Thinking, "Rents rise.\n\nPrices may fall.");
    let nodes = vec![q, t.clone()];
    st.graph.load(&nodes, |_| Vec::new());
    st.loaded = LoadedSession::new(s, nodes);
    assert!(st.select_in_graph(t.id));
    for shown in [think::ID, sessions::ID] {
        st.workspace = shown;
        let got = ws.selected_node(&st).unwrap();
        assert_eq!((got.node, got.kind), (t.id, NodeType::Thinking), "{shown}");
        assert_eq!(got.what.as_deref(), Some("Rents rise."));
    }

    // Elsewhere nothing is selected to mark: the status line says where to go.
    st.workspace = research::ID;
    let fx = mark(&mut ws, &mut st);
    assert!(fx.is_empty());
    assert!(
        notice(&st).starts_with("nothing to mark here"),
        "{}",
        notice(&st)
    );
}

#[test]
fn progress_then_rows_and_n_jumps_between_differences() {
    let d = rent_or_buy();
    let (mut ws, mut st, _) = started(d.a.node, d.b.node);
    assert_eq!(ws.job().as_deref(), Some("diff: aligning…"));
    let seq = ws.seq;
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Progress {
            seq,
            done: 1,
            total: 3,
        },
    );
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Progress {
            seq: seq - 1,
            done: 2,
            total: 9,
        },
    );
    assert_eq!(ws.progress, Some((1, 3)), "an older diff's news is dropped");
    assert_eq!(ws.job().as_deref(), Some("diff: labelling 2 of 3…"));
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Diffed {
            seq,
            result: Ok(Box::new(d)),
        },
    );
    assert!(!ws.running());
    assert_eq!(ws.phase, JobPhase::Done);
    assert_eq!(
        notice(&st),
        "diff: 1 same · 1 differs · 1 contradicts · 1 only_a · 1 only_b"
    );
    let labels: Vec<Label> = ws
        .diff
        .as_ref()
        .unwrap()
        .pairs
        .iter()
        .map(|p| p.label)
        .collect();
    assert_eq!(labels[1], Label::Same);

    // Row 2 is `same`: n passes over it.
    let next = DiffAction::NextDifference.action();
    let prev = DiffAction::PrevDifference.action();
    let mut rows = Vec::new();
    for _ in 0..3 {
        act(&mut ws, &mut st, next.clone());
        rows.push(ws.row);
    }
    assert_eq!(rows, [2, 3, 4]);
    act(&mut ws, &mut st, next);
    assert_eq!(ws.row, 4);
    assert_eq!(notice(&st), "no more differences below");
    act(&mut ws, &mut st, Action::Top);
    assert_eq!(ws.row, 0);
    act(&mut ws, &mut st, prev);
    assert_eq!(notice(&st), "no more differences above");
    act(&mut ws, &mut st, Action::MoveDown);
    act(&mut ws, &mut st, Action::Bottom);
    assert_eq!(ws.row, 4);
}

#[test]
fn merge_lists_the_claims_and_tab_moves_between_rows_and_claims() {
    let (mut ws, mut st) = diffed();
    // No claims yet: tab stays on the rows.
    act(&mut ws, &mut st, Action::FocusNext);
    assert_eq!(ws.focus, Focus::Rows);
    assert!(notice(&st).starts_with("no claims yet"));

    let fx = act(&mut ws, &mut st, DiffAction::Merge.action());
    let d = ws.diff.clone().unwrap();
    match effects(&fx).as_slice() {
        [DiffEffect::Merge { a, b, .. }] => assert_eq!((*a, *b), (d.a.node, d.b.node)),
        other => panic!("{other:?}"),
    }
    assert_eq!(ws.merge, JobPhase::Running);
    assert_eq!(ws.job().as_deref(), Some("merge running…"));
    // One job at a time.
    let fx = act(&mut ws, &mut st, DiffAction::Merge.action());
    assert!(effects(&fx).is_empty());
    assert_eq!(notice(&st), "the merge is running; Esc cancels it");

    let m = merged(&d);
    let seq = ws.seq;
    let fx = msg(
        &mut ws,
        &mut st,
        DiffMsg::Merged {
            seq,
            result: Ok(Box::new(m.clone())),
        },
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::LoadSessions)));
    assert_eq!(ws.merge, JobPhase::Done);
    assert_eq!(ws.focus, Focus::Claims);
    assert!(notice(&st).contains("3 claims"), "{}", notice(&st));
    // j moves through the claims while they have the focus, the rows after tab.
    act(&mut ws, &mut st, Action::MoveDown);
    assert_eq!((ws.claim, ws.row), (1, 0));
    act(&mut ws, &mut st, Action::FocusNext);
    assert_eq!(ws.focus, Focus::Rows);
    act(&mut ws, &mut st, Action::MoveDown);
    assert_eq!((ws.claim, ws.row), (1, 1));
    // The view lights up the selected claim's steps: A3 and B3 for claim 2.
    act(&mut ws, &mut st, Action::FocusPrev);
    let (a, b) = crate::views::diff::sources(&ws.view_model());
    assert_eq!(
        (
            a.into_iter().collect::<Vec<_>>(),
            b.into_iter().collect::<Vec<_>>()
        ),
        (vec![2], vec![2])
    );
}

#[test]
fn fork_step_opens_the_fork_form_on_the_step_of_the_chosen_column() {
    let (mut ws, mut st) = diffed();
    let d = ws.diff.clone().unwrap();
    // Row 4 is only A's: with column B chosen, A's step is taken.
    ws.row = 3;
    act(&mut ws, &mut st, Action::Expand);
    assert_eq!(ws.column, Column::B);
    act(&mut ws, &mut st, DiffAction::ForkStep.action());
    let Some(Overlay::Form(form)) = &st.overlay else {
        panic!("{:?}", st.overlay);
    };
    assert_eq!(form.purpose.ws, crate::app::workspaces::fork::ID);
    assert_eq!(form.title, "Fork step A4: styles");
    assert_eq!(
        form.purpose.tag.get::<FormPurpose>(),
        Some(&FormPurpose::ForkQuestion {
            question: d.a.steps[3].text.clone(),
            session: Some(d.a.session),
        })
    );
    // Row 1 has both: B's step.
    st.overlay = None;
    ws.row = 0;
    act(&mut ws, &mut st, DiffAction::ForkStep.action());
    let Some(Overlay::Form(form)) = &st.overlay else {
        panic!();
    };
    assert_eq!(form.title, "Fork step B1: styles");
}

#[test]
fn a_failed_diff_says_why_and_esc_cancels_a_running_one() {
    let (mut ws, mut st, fx) = started(NodeId::new(), NodeId::new());
    let cancel = match effects(&fx).as_slice() {
        [DiffEffect::Diff { cancel, .. }] => cancel.clone(),
        other => panic!("{other:?}"),
    };
    act(&mut ws, &mut st, Action::CancelRun);
    assert!(cancel.is_cancelled());
    assert_eq!(notice(&st), "cancelling the diff");
    let seq = ws.seq;
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Diffed {
            seq,
            result: Err(Failure {
                error: "node 1a2b3c4d holds no text to compare".into(),
                run: None,
                cancelled: false,
            }),
        },
    );
    assert_eq!(
        ws.phase,
        JobPhase::Failed("node 1a2b3c4d holds no text to compare".into())
    );
    let (text, level) = st.notice.clone().unwrap();
    assert_eq!(level, Level::Error);
    assert!(text.contains("holds no text"), "{text}");
    // Nothing runs now: Esc is left to the rest of the TUI.
    let mut fx = Vec::new();
    assert!(!ws.on_action(&Action::CancelRun, &mut cx::<DiffWs>(&mut st, &mut fx)));
}

#[test]
fn a_new_pair_stops_the_diff_before_and_drops_its_news() {
    let (mut ws, mut st, fx) = started(NodeId::new(), NodeId::new());
    let first = ws.seq;
    let [DiffEffect::Diff { cancel, .. }] = effects(&fx).as_slice() else {
        panic!()
    };
    let cancel = cancel.clone();
    let d = rent_or_buy();
    ws.start(
        picked(d.a.node),
        picked(d.b.node),
        &mut cx::<DiffWs>(&mut st, &mut Vec::new()),
    );
    assert!(cancel.is_cancelled());
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Diffed {
            seq: first,
            result: Ok(Box::new(rent_or_buy())),
        },
    );
    assert!(ws.diff.is_none() && ws.running());
    let seq = ws.seq;
    msg(
        &mut ws,
        &mut st,
        DiffMsg::Diffed {
            seq,
            result: Ok(Box::new(d.clone())),
        },
    );
    assert_eq!(ws.diff.as_ref().map(|x| x.a.node), Some(d.a.node));
}

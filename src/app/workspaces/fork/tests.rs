use super::*;
use crate::app::action::Action;
use crate::app::update::Effect;
use crate::engines::fork::Lane;

fn state() -> State {
    State::new("test".into(), "test-model".into(), 0)
}

/// Runs `f` with a `Cx` for the Fork workspace; returns the effects it asked for.
fn with_cx(state: &mut State, f: impl FnOnce(&mut Ctx<'_>)) -> Vec<Effect> {
    let mut fx = Vec::new();
    f(&mut super::super::cx::<Fork>(state, &mut fx));
    fx
}

fn busy(kind: JobKind, id: u64) -> Option<Busy> {
    Some(Busy {
        id,
        job: Job::new(kind, "forking 2 ways"),
    })
}

fn delta(style: ForkStyle, text: &str) -> ForkEvent {
    ForkEvent::Delta {
        lane: Lane::Branch(style),
        text: text.into(),
        thinking: false,
    }
}

#[test]
fn the_actions_keep_their_keymap_names_and_fork_here_works_anywhere() {
    let names: Vec<&str> = ForkAction::SPECS.iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        [
            "fork_here",
            "checkpoint",
            "new_fork",
            "debate",
            "expand_branch",
            "toggle_mark",
            "merge_branches",
            "challenge_branch",
            "refork",
            "next_column",
            "prev_column",
        ]
    );
    let anywhere: Vec<&str> = ForkAction::SPECS
        .iter()
        .filter(|s| s.place == super::super::Place::Anywhere)
        .map(|s| s.name)
        .collect();
    assert_eq!(anywhere, ["fork_here", "checkpoint"]);
    for a in [
        ForkAction::ForkHere,
        ForkAction::Refork,
        ForkAction::PrevColumn,
    ] {
        assert_eq!(ForkAction::of(&a.action()), Some(a));
    }
    assert_eq!(ForkAction::of(&Action::MoveDown), None);
}

#[test]
fn a_steer_streams_into_its_entry_and_a_fork_into_the_columns() {
    let mut ws = Fork::default();
    ws.reset("q".into(), "fork", &[ForkStyle::Conservative]);
    ws.steers.push(SteerView {
        label: "expand conservative".into(),
        running: true,
        ..Default::default()
    });

    ws.busy = busy(JobKind::Steer, 1);
    ws.on_event(delta(ForkStyle::Conservative, "deeper"));
    assert_eq!(ws.steers[0].live, "deeper");
    assert_eq!(ws.columns[0].live, "");

    ws.busy = busy(JobKind::Fork, 2);
    ws.on_event(delta(ForkStyle::Conservative, "branch"));
    assert_eq!(ws.columns[0].live, "branch");
    assert_eq!(ws.steers[0].live, "deeper");
}

#[test]
fn only_the_running_job_is_heard_and_its_failure_marks_the_unfinished_columns() {
    let mut st = state();
    let mut ws = Fork::default();
    ws.reset(
        "q".into(),
        "fork",
        &[ForkStyle::Conservative, ForkStyle::Aggressive],
    );
    ws.busy = busy(JobKind::Fork, 7);

    with_cx(&mut st, |cx| {
        ws.apply_msg(
            ForkMsg::Event {
                job: 6,
                event: delta(ForkStyle::Conservative, "stale"),
            },
            cx,
        );
        ws.apply_msg(
            ForkMsg::Finished {
                job: 6,
                result: Err("old".into()),
            },
            cx,
        );
    });
    assert!(ws.busy.is_some());
    assert_eq!(ws.columns[0].live, "");

    let fx = with_cx(&mut st, |cx| {
        ws.apply_msg(
            ForkMsg::Finished {
                job: 7,
                result: Err("boom".into()),
            },
            cx,
        )
    });
    assert!(ws.busy.is_none());
    assert!(fx.is_empty());
    assert!(
        ws.columns
            .iter()
            .all(|c| c.status == ColStatus::Failed("boom".into()))
    );
    assert_eq!(
        st.notice,
        Some(("forking 2 ways failed: boom".into(), Level::Error))
    );
}

#[test]
fn a_second_job_is_refused_while_one_runs() {
    let mut st = state();
    let mut ws = Fork::default();
    let req = ForkRequest {
        session: None,
        query: "Which cache?".into(),
        styles: vec![ForkStyle::Conservative, ForkStyle::Balanced],
        guidance: Vec::new(),
    };
    let fx = with_cx(&mut st, |cx| ws.begin_fork(req.clone(), false, cx));
    assert_eq!(fx.len(), 1);
    assert!(matches!(&fx[0], Effect::Ws(ID, _)));
    assert_eq!(st.workspace, ID);
    assert_eq!(ws.columns.len(), 2);
    assert_eq!(ws.job().as_deref(), Some("fork running…"));

    let fx = with_cx(&mut st, |cx| ws.begin_fork(req, true, cx));
    assert!(fx.is_empty());
    assert_eq!(ws.kind, "fork");
    assert_eq!(
        st.notice,
        Some((
            "forking 2 ways is running; Esc cancels it".into(),
            Level::Warn
        ))
    );
}

#[test]
fn the_checkpoint_needs_a_branch_here_and_a_graph_node_elsewhere() {
    let mut st = state();
    let mut ws = Fork::default();
    let a = ForkAction::Checkpoint.action();

    // From Think, with nothing selected in the graph.
    assert!(with_cx(&mut st, |cx| assert!(ws.on_action(&a, cx))).is_empty());
    assert_eq!(
        st.notice.as_ref().map(|n| n.0.as_str()),
        Some("select a node in the graph first")
    );
    assert!(st.overlay.is_none());

    // Here, with no finished branch in focus.
    st.workspace = ID;
    with_cx(&mut st, |cx| assert!(ws.on_action(&a, cx)));
    assert_eq!(
        st.notice.as_ref().map(|n| n.0.as_str()),
        Some("no finished branch in focus to checkpoint")
    );

    // The workspace's own keys do nothing elsewhere.
    st.workspace = super::super::think::ID;
    let fx = with_cx(&mut st, |cx| {
        assert!(!ws.on_action(&ForkAction::NewFork.action(), cx));
        assert!(!ws.on_action(&Action::MoveDown, cx));
    });
    assert!(fx.is_empty());
    assert!(st.overlay.is_none());
}

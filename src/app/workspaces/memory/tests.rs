use crossterm::event::KeyModifiers;

use super::tasks::{load, operate};
use super::*;
use crate::app::update::Effect;
use crate::app::workspaces::cx;
use crate::engines::memory::{Memory, MemoryParams};
use crate::store::{MemoryScope, Provenance};

fn state() -> State {
    let mut s = State::new("anthropic".into(), "claude-test".into(), 0);
    s.workspace = ID;
    s
}

fn act(ws: &mut MemoryWs, state: &mut State, a: Action) -> (bool, Vec<Effect>) {
    let mut fx = Vec::new();
    let took = ws.on_action(&a, &mut cx::<MemoryWs>(state, &mut fx));
    (took, fx)
}

fn msg(ws: &mut MemoryWs, state: &mut State, m: MemoryMsg) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_msg(m, &mut cx::<MemoryWs>(state, &mut fx));
    fx
}

fn form(ws: &mut MemoryWs, state: &mut State, f: FormPurpose, a: Answer) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_form(f, a, &mut cx::<MemoryWs>(state, &mut fx));
    fx
}

fn type_key(ws: &mut MemoryWs, state: &mut State, code: KeyCode) -> Vec<Effect> {
    let mut fx = Vec::new();
    ws.on_key(
        KeyEvent::new(code, KeyModifiers::NONE),
        &mut cx::<MemoryWs>(state, &mut fx),
    );
    fx
}

/// The workspace's own effects among `fx`.
fn effects(fx: &[Effect]) -> Vec<&MemoryEffect> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Ws(ID, e) => e.downcast_ref::<MemoryEffect>(),
            _ => None,
        })
        .collect()
}

fn notice(state: &State) -> &str {
    state.notice.as_ref().map_or("", |(t, _)| t.as_str())
}

fn entry(tier: MemoryTier, text: &str) -> MemoryEntry {
    let now = chrono::Utc::now();
    MemoryEntry {
        id: MemoryId::new(),
        tier,
        scope: MemoryScope::Global,
        section: None,
        content: text.into(),
        tags: Vec::new(),
        importance: 0.5,
        created_at: now,
        updated_at: now,
        provenance: Provenance {
            origin: "tui".into(),
            ..Default::default()
        },
        meta: Default::default(),
    }
}

/// A workspace showing one working, one recall and two archival entries.
fn shown() -> (MemoryWs, State) {
    let mut ws = MemoryWs::default();
    let mut st = state();
    ws.loaded(Snapshot {
        working: vec![entry(MemoryTier::Working, "the release is on friday")],
        recall: vec![entry(MemoryTier::Recall, "asked about primes")],
        archival: vec![
            entry(MemoryTier::Archival, "91 = 7 × 13"),
            entry(MemoryTier::Archival, "staging is db2"),
        ],
        default_importance: 0.5,
        ..Default::default()
    });
    st.notice = None;
    (ws, st)
}

#[test]
fn eviction_journal_entries_make_one_notice() {
    let change = |kind| {
        (
            1,
            Change {
                kind,
                session: None,
                id: Some(uuid::Uuid::nil()),
                at: chrono::Utc::now(),
            },
        )
    };
    assert_eq!(eviction_notice(&[change(ChangeKind::MemoryPut)]), None);
    assert_eq!(
        eviction_notice(&[change(ChangeKind::MemoryEvicted)]).as_deref(),
        Some("memory: 1 entry evicted from working memory to archival")
    );
    let three = [
        change(ChangeKind::MemoryEvicted),
        change(ChangeKind::MemoryPut),
        change(ChangeKind::MemoryEvicted),
        change(ChangeKind::MemoryEvicted),
    ];
    assert_eq!(
        eviction_notice(&three).as_deref(),
        Some("memory: 3 entries evicted from working memory to archival")
    );
}

#[test]
fn tags_and_importance_choices() {
    assert_eq!(
        parse_tags(" #rust, tests  rust,,ops "),
        ["rust", "tests", "ops"]
    );
    assert!(parse_tags("  ").is_empty());
    // A level already offered is not repeated; another is kept as the first choice.
    let (labels, values, cursor) = importance_choices(Some(0.5), 0.5);
    assert_eq!(labels.len(), LEVELS.len());
    assert_eq!(values[cursor], 0.5);
    let (labels, values, cursor) = importance_choices(Some(0.62), 0.62);
    assert_eq!(labels[0], "0.62 (keep)");
    assert_eq!((values[0], cursor), (0.62, 0));
}

#[test]
fn insert_asks_for_text_then_importance_and_tags() {
    let (mut ws, mut st) = shown();
    let (took, fx) = act(&mut ws, &mut st, MemoryAction::InsertWorking.action());
    assert!(took && fx.is_empty());
    let Some(crate::app::state::Overlay::Form(f)) = &st.overlay else {
        panic!("no form");
    };
    assert_eq!(
        f.purpose.tag.get::<FormPurpose>(),
        Some(&FormPurpose::InsertText {
            tier: MemoryTier::Working
        })
    );
    let answer = |choice, text: &str| Answer {
        choice,
        checked: Vec::new(),
        text: text.into(),
    };
    form(
        &mut ws,
        &mut st,
        FormPurpose::InsertText {
            tier: MemoryTier::Working,
        },
        answer(None, "ship on friday"),
    );
    let Some(crate::app::state::Overlay::Form(f)) = &st.overlay else {
        panic!("no second form");
    };
    // The default importance (0.5) is where the cursor starts.
    assert_eq!(LEVELS[f.cursor].0, 0.5);
    let fx = form(
        &mut ws,
        &mut st,
        FormPurpose::InsertDetails {
            tier: MemoryTier::Working,
            text: "ship on friday".into(),
        },
        answer(Some(3), "release, #dates"),
    );
    match effects(&fx).as_slice() {
        [
            MemoryEffect::Insert {
                text,
                importance,
                tags,
                tier,
            },
        ] => {
            assert_eq!(text, "ship on friday");
            assert_eq!(*importance, 0.7);
            assert_eq!(tags, &["release", "dates"]);
            assert_eq!(*tier, MemoryTier::Working);
        }
        other => panic!("unexpected effects: {other:?}"),
    }
    assert_eq!(ws.job().as_deref(), Some("memory: inserting into working…"));
}

#[test]
fn evict_and_promote_check_the_tier_first() {
    let (mut ws, mut st) = shown();
    assert_eq!(ws.list, MemoryList::Archival);
    // An archival entry cannot be evicted…
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::Evict.action());
    assert!(fx.is_empty());
    assert!(
        notice(&st).contains("only working memory"),
        "{}",
        notice(&st)
    );
    // …but can be promoted.
    let id = ws.selected_entry().unwrap().id;
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::Promote.action());
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Promote(p)] if *p == id));
    // One change at a time.
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::Promote.action());
    assert!(fx.is_empty());
    assert!(notice(&st).starts_with("wait"));
    msg(
        &mut ws,
        &mut st,
        MemoryMsg::Done {
            notice: "promoted".into(),
            level: Level::Info,
            follow: Some(id),
        },
    );
    // The main context list: a working entry is evicted.
    act(&mut ws, &mut st, MemoryAction::PrevList.action());
    act(&mut ws, &mut st, MemoryAction::PrevList.action());
    assert_eq!(ws.list, MemoryList::Main);
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::Evict.action());
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Evict(_)]));
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::Promote.action());
    assert!(fx.is_empty());
}

#[test]
fn delete_asks_and_only_yes_deletes() {
    let (mut ws, mut st) = shown();
    act(&mut ws, &mut st, MemoryAction::Delete.action());
    assert!(st.overlay.is_some());
    let id = ws.selected_entry().unwrap().id;
    let no = Answer {
        choice: Some(0),
        ..Default::default()
    };
    assert!(form(&mut ws, &mut st, FormPurpose::Delete { id }, no).is_empty());
    let yes = Answer {
        choice: Some(1),
        ..Default::default()
    };
    let fx = form(&mut ws, &mut st, FormPurpose::Delete { id }, yes);
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Delete(d)] if *d == id));
}

#[test]
fn typing_searches_with_the_newest_query_winning() {
    let (mut ws, mut st) = shown();
    act(&mut ws, &mut st, MemoryAction::Search.action());
    assert!(ws.typing());
    let mut seqs = Vec::new();
    for c in "91".chars() {
        let fx = type_key(&mut ws, &mut st, KeyCode::Char(c));
        match effects(&fx).as_slice() {
            [MemoryEffect::Search { seq, query }] => seqs.push((*seq, query.clone())),
            other => panic!("unexpected effects: {other:?}"),
        }
    }
    assert_eq!(seqs[1].1, "91");
    assert!(seqs[0].0 < seqs[1].0);
    let hit = ws.snapshot.as_ref().unwrap().archival[0].clone();
    // The answer to "9" comes late: dropped.
    msg(
        &mut ws,
        &mut st,
        MemoryMsg::Found {
            seq: seqs[0].0,
            query: "9".into(),
            hits: Ok(Vec::new()),
            warnings: Vec::new(),
        },
    );
    assert!(ws.found.is_none() && ws.searching);
    msg(
        &mut ws,
        &mut st,
        MemoryMsg::Found {
            seq: seqs[1].0,
            query: "91".into(),
            hits: Ok(vec![(hit.clone(), 0.9)]),
            warnings: Vec::new(),
        },
    );
    assert!(!ws.searching);
    assert_eq!(ws.counts(), [0, 0, 1]);
    assert_eq!(ws.rows()[0].entry.id, hit.id);
    assert_eq!(ws.rows()[0].score, Some(0.9));
    // Enter leaves the line and keeps the results; Esc in the workspace clears them.
    type_key(&mut ws, &mut st, KeyCode::Enter);
    assert!(!ws.typing());
    assert_eq!(ws.rows().len(), 1);
    let (took, _) = act(&mut ws, &mut st, Action::CancelRun);
    assert!(took);
    assert!(ws.found.is_none());
    assert_eq!(ws.rows().len(), 2);
}

#[test]
fn the_source_jump_needs_a_node_and_opens_it_in_think() {
    let (mut ws, mut st) = shown();
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::OpenSource.action());
    assert!(fx.is_empty());
    assert!(notice(&st).contains("names no node"), "{}", notice(&st));
    let node = NodeId::new();
    let session = SessionId::new();
    if let Some(s) = ws.snapshot.as_mut() {
        s.archival[0].provenance.node = Some(node);
        s.archival[0].provenance.session = Some(session);
    }
    let (_, fx) = act(&mut ws, &mut st, MemoryAction::OpenSource.action());
    assert!(matches!(
        effects(&fx).as_slice(),
        [MemoryEffect::Source { session: Some(s), node: n }] if *s == session && *n == node
    ));
    let fx = msg(&mut ws, &mut st, MemoryMsg::Open { session, node });
    assert_eq!(st.workspace, crate::app::workspaces::think::ID);
    assert_eq!(st.pending_select, Some(node));
    assert!(matches!(fx.as_slice(), [Effect::LoadSession(s)] if *s == session));
}

#[test]
fn store_changes_reload_when_shown_and_later_otherwise() {
    let (mut ws, mut st) = shown();
    let mut fx = Vec::new();
    ws.on_store_change(&mut cx::<MemoryWs>(&mut st, &mut fx));
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Load]));
    // A second change while the read runs reads once more when it ends.
    let mut fx = Vec::new();
    ws.on_store_change(&mut cx::<MemoryWs>(&mut st, &mut fx));
    assert!(fx.is_empty());
    let fx = msg(
        &mut ws,
        &mut st,
        MemoryMsg::Loaded {
            result: Ok(Box::default()),
            warnings: Vec::new(),
        },
    );
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Load]));
    msg(
        &mut ws,
        &mut st,
        MemoryMsg::Loaded {
            result: Ok(Box::default()),
            warnings: vec!["no embedder".into()],
        },
    );
    assert_eq!(notice(&st), "memory: no embedder");
    // Another workspace on screen: nothing now, a read on entering.
    st.workspace = crate::app::workspaces::think::ID;
    let mut fx = Vec::new();
    ws.on_store_change(&mut cx::<MemoryWs>(&mut st, &mut fx));
    assert!(fx.is_empty());
    let mut fx = Vec::new();
    ws.on_enter(&mut cx::<MemoryWs>(&mut st, &mut fx));
    assert!(matches!(effects(&fx).as_slice(), [MemoryEffect::Load]));
}

/// The operations on a real store: insert, promote with auto-eviction (journalled as
/// evictions, which the follower turns into the notice), evict, edit, delete.
#[test]
fn operations_on_a_real_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::testing::open_at(&dir.path().join("glassbox.redb"));
    let params = MemoryParams {
        capacity_tokens: 30,
        ..Default::default()
    };
    let m = Memory::new(store.clone(), params, None, MemoryScope::Global, Vec::new());
    let start = store.last_seq().unwrap();
    let insert = |text: &str, tier| MemoryEffect::Insert {
        text: text.into(),
        importance: 0.5,
        tags: vec!["t".into()],
        tier,
    };
    let (text, a) = operate(
        &m,
        insert(
            &"a fact kept for later reading. ".repeat(3),
            MemoryTier::Archival,
        ),
    )
    .unwrap();
    assert!(
        text.starts_with("inserted memory ") && text.ends_with("into archival"),
        "{text}"
    );
    let a = a.unwrap();
    let (_, w) = operate(
        &m,
        insert(
            &"working memory holds this line. ".repeat(2),
            MemoryTier::Working,
        ),
    )
    .unwrap();
    let s = load(&m).unwrap();
    assert_eq!((s.working.len(), s.archival.len()), (1, 1));
    assert_eq!(s.scope, "global");
    // Promoting the archival entry overflows the 30-token main context: the older working
    // entry goes to archival.
    let (text, _) = operate(&m, MemoryEffect::Promote(a)).unwrap();
    assert!(text.contains("1 working entry evicted"), "{text}");
    let s = load(&m).unwrap();
    assert_eq!(s.working.iter().map(|e| e.id).collect::<Vec<_>>(), [a]);
    assert_eq!(s.archival[0].id, w.unwrap());
    let changes = store.follow(start, 1000).unwrap();
    assert_eq!(
        eviction_notice(&changes).as_deref(),
        Some("memory: 1 entry evicted from working memory to archival")
    );
    // Evicting by hand is not journalled as an auto-eviction.
    let seq = store.last_seq().unwrap();
    operate(&m, MemoryEffect::Evict(a)).unwrap();
    assert_eq!(eviction_notice(&store.follow(seq, 1000).unwrap()), None);
    assert!(operate(&m, MemoryEffect::Evict(a)).is_err());
    operate(
        &m,
        MemoryEffect::Edit {
            id: a,
            text: Some("a fact, edited".into()),
            importance: Some(0.9),
            tags: Some(vec!["x".into()]),
        },
    )
    .unwrap();
    // New text makes a new learning in its place; the old one is archived with its events.
    assert!(store.memory(a).unwrap().is_none());
    let a = store
        .all_memories()
        .unwrap()
        .into_iter()
        .find(|e| e.content == "a fact, edited")
        .unwrap()
        .id;
    let e = store.memory(a).unwrap().unwrap();
    assert_eq!((e.content.as_str(), e.importance), ("a fact, edited", 0.9));
    assert_eq!(e.tags, ["x"]);
    let hits = m
        .find(
            "edited",
            &[],
            SEARCH_LIMIT,
            crate::engines::memory::SearchMode::Hybrid,
            Default::default(),
        )
        .unwrap();
    assert_eq!(hits[0].entry.id, a);
    let (text, _) = operate(&m, MemoryEffect::Delete(a)).unwrap();
    assert!(text.ends_with("deleted"));
    assert!(store.memory(a).unwrap().is_none());
}

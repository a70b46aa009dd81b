//! The Memory workspace: the main context (a gauge of its tokens, the counts, the core facts
//! and working entries) over the recall and archival lists, with a search line that filters
//! the lists as you type and the selected entry in full.
//!
//! Keys (from `[memory]` in keymap.toml): insert into archival or working memory, edit the
//! text, importance and tags, evict a working entry to archival, promote an archival or
//! recall entry to working memory, delete (after asking), search, switch list, jump to the
//! node that produced the entry, read memory again. Every memory call blocks, so each runs
//! in a task on the blocking pool and reports back here; searches go through a latest-wins
//! queue so a burst of typing costs two searches, not one per key.

mod assoc;
mod tasks;
#[cfg(test)]
mod tests;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Cx, Spec, Workspace, WorkspaceId};
use crate::app::action::Action;
use crate::app::form::{Answer, Form};
use crate::app::input::InputBox;
use crate::app::runtime::Services;
use crate::app::state::{Level, State};
use crate::engines::memory::MemoryStats;
use crate::store::{Change, ChangeKind, MemoryEntry, MemoryId, MemoryTier, NodeId, SessionId};
use crate::views::ViewCx;
use crate::views::memory::assoc::{AssocView, Associations};
use crate::views::memory::{MemoryList, MemoryRow, MemoryView};

pub const ID: WorkspaceId = "memory";

crate::workspace_actions! { MemoryAction for ID => {
    InsertArchival => ("insert_memory", "Insert a memory into archival storage", Own),
    InsertWorking => ("insert_working", "Insert a memory into working memory", Own),
    Edit => ("edit_memory", "Edit the selected entry: text, importance, tags", Own),
    Evict => ("evict_memory", "Evict the selected working entry to archival", Own),
    Promote => ("promote_memory", "Promote the selected entry to working memory", Own),
    Delete => ("delete_memory", "Delete the selected entry (asks first)", Own),
    Search => ("search_memory", "Search memory as you type", Own),
    NextList => ("next_memory_list", "Next memory list", Own),
    PrevList => ("prev_memory_list", "Previous memory list", Own),
    OpenSource => ("open_memory_source", "Open the node that produced the entry", Own),
    Refresh => ("refresh_memory", "Read memory again", Own),
    Associations => ("memory_associations", "Show the learning's concepts, events, conflicts", Own),
} }

const SPEC: &Spec = &Spec {
    id: ID,
    title: "Memory",
    help_title: "Memory workspace",
    go: "Go to the Memory workspace",
    section: true,
    actions: MemoryAction::SPECS,
};

/// Most hits one search asks for (over every tier).
pub const SEARCH_LIMIT: usize = 200;

/// Longest text the insert and edit forms take.
const TEXT_MAX: usize = 4_000;

/// The importance levels the forms offer, with what they mean.
pub const LEVELS: [(f32, &str); 6] = [
    (0.1, "trivia, evicted first"),
    (0.3, "minor"),
    (0.5, "normal"),
    (0.7, "important"),
    (0.9, "essential"),
    (1.0, "evicted last"),
];

/// Memory as last read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub stats: MemoryStats,
    /// The scopes read, the write scope first (`project:/path + global`).
    pub scope: String,
    pub evict_to: f64,
    pub default_importance: f32,
    /// Search hits scoring below this are shown dimmed (the score a think turn's context
    /// asks of an entry).
    pub relevant: f32,
    /// Core facts, newest first.
    pub core: Vec<MemoryEntry>,
    /// Working entries, most important first.
    pub working: Vec<MemoryEntry>,
    /// Recall and archival, newest first.
    pub recall: Vec<MemoryEntry>,
    pub archival: Vec<MemoryEntry>,
}

/// The answer to the newest search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Found {
    pub query: String,
    /// Entries with their scores, best first.
    pub hits: Vec<(MemoryEntry, f32)>,
}

/// What the workspace shows and remembers.
#[derive(Debug, Default)]
pub struct MemoryWs {
    pub snapshot: Option<Snapshot>,
    pub list: MemoryList,
    /// Index into the shown list's rows.
    pub selected: usize,
    pub search: InputBox,
    /// Keys go to the search line.
    pub typing: bool,
    /// Number of the newest search sent; older answers are dropped.
    seq: u64,
    pub found: Option<Found>,
    pub searching: bool,
    pub loading: bool,
    /// The store changed while a read ran: read again when it ends.
    reload: bool,
    /// The store changed while another workspace was shown.
    stale: bool,
    /// Why memory could not be read, when it could not.
    pub error: Option<String>,
    /// The operation under way ("promoting 1a2b3c4d…").
    pub busy: Option<String>,
    /// After the next read, show and select this entry.
    follow: Option<MemoryId>,
    /// The query changed: the next answer selects its best hit.
    to_top: bool,
    /// The associative view of the selected entry.
    pub assoc: assoc::AssocPanel,
}

/// News for the workspace from its tasks.
#[derive(Debug)]
pub enum MemoryMsg {
    Loaded {
        result: Result<Box<Snapshot>, String>,
        /// Problems that did not stop the read (no embedder: keyword search only).
        warnings: Vec<String>,
    },
    Found {
        seq: u64,
        query: String,
        hits: Result<Vec<(MemoryEntry, f32)>, String>,
        warnings: Vec<String>,
    },
    /// An operation ended; memory is read again.
    Done {
        notice: String,
        level: Level,
        follow: Option<MemoryId>,
    },
    Failed(String),
    /// The producing node exists: open it.
    Open {
        session: SessionId,
        node: NodeId,
    },
    /// The associations of an entry, for the associative view.
    Assoc {
        id: MemoryId,
        query: Option<String>,
        result: Result<Box<Associations>, String>,
    },
}

/// Work for the runtime, carried out by [`Workspace::run`].
#[derive(Debug)]
pub enum MemoryEffect {
    Load,
    Search {
        seq: u64,
        query: String,
    },
    Insert {
        text: String,
        importance: f32,
        tags: Vec<String>,
        tier: MemoryTier,
    },
    Edit {
        id: MemoryId,
        text: Option<String>,
        importance: Option<f32>,
        tags: Option<Vec<String>>,
    },
    Evict(MemoryId),
    Promote(MemoryId),
    Delete(MemoryId),
    /// Find the node's session (when the entry does not name it) and check it still exists.
    Source {
        session: Option<SessionId>,
        node: NodeId,
    },
    /// Read an entry's associations, scored against the shown search's query.
    Assoc {
        id: MemoryId,
        query: Option<String>,
    },
}

/// What a form this workspace opened is for.
#[derive(Clone, Debug, PartialEq)]
pub enum FormPurpose {
    /// The text of a new entry for `tier`.
    InsertText {
        tier: MemoryTier,
    },
    /// Importance and tags of the new entry.
    InsertDetails {
        tier: MemoryTier,
        text: String,
    },
    /// The new text of an entry.
    EditText {
        id: MemoryId,
    },
    /// Importance and tags of an entry being edited; `text` is the new text, if changed.
    EditDetails {
        id: MemoryId,
        text: Option<String>,
        /// The importance each choice stands for.
        levels: Vec<f32>,
        old_importance: f32,
        old_tags: Vec<String>,
    },
    Delete {
        id: MemoryId,
    },
}

type Ctx<'a> = Cx<'a, MemoryWs>;

/// The notice for journal entries that say auto-eviction moved working entries to archival
/// (in this process or another); `None` when there are none.
pub fn eviction_notice(changes: &[(u64, Change)]) -> Option<String> {
    let n = changes
        .iter()
        .filter(|(_, c)| c.kind == ChangeKind::MemoryEvicted)
        .count();
    (n > 0).then(|| {
        format!(
            "memory: {n} {} evicted from working memory to archival",
            if n == 1 { "entry" } else { "entries" }
        )
    })
}

/// Tags typed as `a, b c` or `#a #b`: split at commas and spaces, `#` dropped, no repeats.
pub fn parse_tags(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in text.split([',', ' ']) {
        let t = t.trim().trim_start_matches('#');
        if !t.is_empty() && !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    out
}

/// The importance choices for a form: the levels, with `keep` first when it is none of them;
/// returns the labels, the value of each and the one to start on.
fn importance_choices(keep: Option<f32>, start: f32) -> (Vec<String>, Vec<f32>, usize) {
    let mut labels = Vec::new();
    let mut values = Vec::new();
    if let Some(k) = keep
        && !LEVELS.iter().any(|(v, _)| (v - k).abs() < 0.005)
    {
        labels.push(format!("{k:.2} (keep)"));
        values.push(k);
    }
    for (v, what) in LEVELS {
        labels.push(format!("{v:.1}  {what}"));
        values.push(v);
    }
    let cursor = values
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - start).abs().total_cmp(&(b.1 - start).abs()))
        .map_or(0, |(i, _)| i);
    (labels, values, cursor)
}

impl MemoryWs {
    /// The rows of the shown list: search hits while a search is shown, else the list.
    pub fn rows(&self) -> Vec<MemoryRow<'_>> {
        if let Some(found) = self.shown_search() {
            return found
                .hits
                .iter()
                .filter(|(e, _)| self.list.holds(e.tier))
                .map(|(e, s)| MemoryRow {
                    entry: e,
                    score: Some(*s),
                })
                .collect();
        }
        let Some(s) = &self.snapshot else {
            return Vec::new();
        };
        fn plain(e: &MemoryEntry) -> MemoryRow<'_> {
            MemoryRow {
                entry: e,
                score: None,
            }
        }
        match self.list {
            MemoryList::Main => s.core.iter().chain(&s.working).map(plain).collect(),
            MemoryList::Recall => s.recall.iter().map(plain).collect(),
            MemoryList::Archival => s.archival.iter().map(plain).collect(),
        }
    }

    /// The search answer the lists show: the newest one, while the line has a query.
    fn shown_search(&self) -> Option<&Found> {
        self.found
            .as_ref()
            .filter(|_| !self.search.text().trim().is_empty())
    }

    /// The selected entry.
    pub fn selected_entry(&self) -> Option<&MemoryEntry> {
        self.rows().get(self.selected).map(|r| r.entry)
    }

    fn counts(&self) -> [usize; 3] {
        let mut out = [0; 3];
        for (i, l) in MemoryList::ALL.into_iter().enumerate() {
            out[i] = match (self.shown_search(), &self.snapshot) {
                (Some(f), _) => f.hits.iter().filter(|(e, _)| l.holds(e.tier)).count(),
                (None, Some(s)) => match l {
                    MemoryList::Main => s.core.len() + s.working.len(),
                    MemoryList::Recall => s.recall.len(),
                    MemoryList::Archival => s.archival.len(),
                },
                (None, None) => 0,
            };
        }
        out
    }

    fn select(&mut self, to: usize) {
        self.selected = to.min(self.rows().len().saturating_sub(1));
    }

    /// Selects `id` when the shown rows (or another list, which is then shown) hold it.
    fn select_id(&mut self, id: MemoryId) -> bool {
        let here = self.rows().iter().position(|r| r.entry.id == id);
        if let Some(i) = here {
            self.selected = i;
            return true;
        }
        let keep = self.list;
        for l in MemoryList::ALL {
            self.list = l;
            if let Some(i) = self.rows().iter().position(|r| r.entry.id == id) {
                self.selected = i;
                return true;
            }
        }
        self.list = keep;
        false
    }

    /// Reads memory, or reads it again once the read under way ends.
    fn load(&mut self, cx: &mut Ctx<'_>) {
        if self.loading {
            self.reload = true;
        } else {
            self.loading = true;
            self.stale = false;
            cx.run(MemoryEffect::Load);
        }
    }

    /// Sends the query on the search line (the newest search wins).
    fn search_again(&mut self, cx: &mut Ctx<'_>) {
        let query = self.search.text().trim().to_string();
        self.seq += 1;
        if query.is_empty() {
            self.searching = false;
            self.found = None;
            self.select(self.selected);
            return;
        }
        self.searching = true;
        cx.run(MemoryEffect::Search {
            seq: self.seq,
            query,
        });
    }

    fn clear_search(&mut self) {
        self.search.set_text("");
        self.seq += 1;
        self.found = None;
        self.searching = false;
        self.typing = false;
        self.select(self.selected);
    }

    fn start(&mut self, what: String, effect: MemoryEffect, cx: &mut Ctx<'_>) {
        if let Some(b) = &self.busy {
            cx.notice(format!("wait: {b}"), Level::Warn);
            return;
        }
        self.busy = Some(what);
        cx.run(effect);
    }

    /// The selected entry, or a notice that there is none.
    fn target(&self, cx: &mut Ctx<'_>) -> Option<MemoryEntry> {
        let e = self.selected_entry().cloned();
        if e.is_none() {
            cx.notice("select a memory first", Level::Info);
        }
        e
    }

    fn ask_insert(&mut self, tier: MemoryTier, cx: &mut Ctx<'_>) {
        let title = match tier {
            MemoryTier::Working => "Insert into working memory",
            _ => "Insert into archival storage",
        };
        cx.open_form(
            Form::text(
                title,
                Ctx::purpose(FormPurpose::InsertText { tier }),
                "text",
            )
            .with_text("text", true, TEXT_MAX),
        );
    }

    fn ask_edit(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.target(cx) else {
            return;
        };
        let short = e.id.short();
        if e.content.contains('\n') || e.content.chars().count() > TEXT_MAX {
            // One line of form cannot hold it: importance and tags only.
            cx.notice(
                "the text has several lines or is long: only importance and tags are edited here",
                Level::Info,
            );
            self.ask_details(&e, None, cx);
            return;
        }
        cx.open_form(
            Form::text(
                format!("Edit memory {short}: text (Enter keeps it)"),
                Ctx::purpose(FormPurpose::EditText { id: e.id }),
                "text",
            )
            .with_text("text", true, TEXT_MAX)
            .with_initial_text(&e.content),
        );
    }

    fn ask_details(&mut self, e: &MemoryEntry, text: Option<String>, cx: &mut Ctx<'_>) {
        let (labels, levels, cursor) = importance_choices(Some(e.importance), e.importance);
        let mut form = Form::choose(
            format!("Edit memory {}: importance, then tags", e.id.short()),
            Ctx::purpose(FormPurpose::EditDetails {
                id: e.id,
                text,
                levels,
                old_importance: e.importance,
                old_tags: e.tags.clone(),
            }),
            labels,
        )
        .with_text("tags (comma or space separated)", false, 400)
        .with_initial_text(&e.tags.join(", "));
        form.cursor = cursor;
        cx.open_form(form);
    }

    fn ask_delete(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.target(cx) else {
            return;
        };
        let text = e.content.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut preview: String = text.chars().take(40).collect();
        if text.chars().count() > 40 {
            preview.push('…');
        }
        cx.open_form(Form::choose(
            format!("Delete memory {} ({}) for good?", e.id.short(), e.tier),
            Ctx::purpose(FormPurpose::Delete { id: e.id }),
            vec!["no, keep it".into(), format!("yes, delete “{preview}”")],
        ));
    }

    fn evict(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.target(cx) else {
            return;
        };
        if e.tier != MemoryTier::Working {
            cx.notice(
                format!(
                    "only working memory is evicted; this entry is in {}",
                    e.tier
                ),
                Level::Info,
            );
            return;
        }
        self.follow = Some(e.id);
        self.start(
            format!("evicting {}…", e.id.short()),
            MemoryEffect::Evict(e.id),
            cx,
        );
    }

    fn promote(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.target(cx) else {
            return;
        };
        if e.tier.in_main_context() {
            cx.notice(
                format!("this entry is already in the main context ({})", e.tier),
                Level::Info,
            );
            return;
        }
        self.follow = Some(e.id);
        self.start(
            format!("promoting {}…", e.id.short()),
            MemoryEffect::Promote(e.id),
            cx,
        );
    }

    fn open_source(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.target(cx) else {
            return;
        };
        let p = &e.provenance;
        match p.node {
            Some(node) => cx.run(MemoryEffect::Source {
                session: p.session,
                node,
            }),
            None => cx.notice(
                format!(
                    "memory {} names no node that produced it (origin: {})",
                    e.id.short(),
                    if p.origin.is_empty() {
                        "unknown"
                    } else {
                        &p.origin
                    }
                ),
                Level::Info,
            ),
        }
    }

    fn loaded(&mut self, snapshot: Snapshot) {
        let keep = self.follow.take().or(self.selected_entry().map(|e| e.id));
        self.snapshot = Some(snapshot);
        self.error = None;
        if !keep.is_some_and(|id| self.select_id(id)) {
            self.select(self.selected);
        }
    }

    fn key(&mut self, k: KeyEvent, cx: &mut Ctx<'_>) {
        match k.code {
            KeyCode::Esc => self.clear_search(),
            KeyCode::Enter => self.typing = false,
            KeyCode::Down => self.select(self.selected + 1),
            KeyCode::Up => self.select(self.selected.saturating_sub(1)),
            KeyCode::PageDown => self.select(self.selected + 10),
            KeyCode::PageUp => self.select(self.selected.saturating_sub(10)),
            KeyCode::Tab | KeyCode::BackTab => {
                self.list = self.list.step(k.code == KeyCode::Tab);
                self.selected = 0;
            }
            _ => {
                let before = self.search.text().to_string();
                crate::app::input::edit(&mut self.search, k);
                if self.search.text() != before {
                    self.selected = 0;
                    self.to_top = true;
                    self.search_again(cx);
                }
            }
        }
    }
}

impl Workspace for MemoryWs {
    const SPEC: &'static Spec = SPEC;
    type Msg = MemoryMsg;
    type Effect = MemoryEffect;
    type Form = FormPurpose;

    fn on_enter(&mut self, cx: &mut Ctx<'_>) {
        if self.snapshot.is_none() || self.stale {
            self.load(cx);
        }
    }

    fn on_store_change(&mut self, cx: &mut Ctx<'_>) {
        if cx.shown() {
            self.load(cx);
            if self.shown_search().is_some() {
                self.search_again(cx);
            }
        } else {
            self.stale = true;
        }
    }

    fn typing(&self) -> bool {
        self.typing
    }

    fn on_key(&mut self, k: KeyEvent, cx: &mut Ctx<'_>) {
        self.key(k, cx);
        self.sync_assoc(cx);
    }

    fn on_action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        let done = self.action(a, cx);
        if done {
            self.sync_assoc(cx);
        }
        done
    }

    fn on_msg(&mut self, m: MemoryMsg, cx: &mut Ctx<'_>) {
        self.msg(m, cx);
        self.sync_assoc(cx);
    }

    fn on_form(&mut self, form: FormPurpose, answer: Answer, cx: &mut Ctx<'_>) {
        self.form(form, answer, cx);
    }

    fn run(e: MemoryEffect, svc: &Services, out: super::Outbox<MemoryMsg>) {
        tasks::run(e, svc, out);
    }

    fn job(&self) -> Option<String> {
        self.busy.as_ref().map(|b| format!("memory: {b}"))
    }

    fn draw(&mut self, f: &mut Frame, area: Rect, _state: &mut State, v: &ViewCx<'_>) {
        self.draw_view(f, area, v);
    }
}

impl MemoryWs {
    /// Reads the associations of the selected entry when the view is on and shows another.
    fn sync_assoc(&mut self, cx: &mut Ctx<'_>) {
        let Some(id) = self.selected_entry().map(|e| e.id) else {
            return;
        };
        let query = self.shown_search().map(|f| f.query.clone());
        if !self.assoc.needs(id, query.as_deref()) {
            return;
        }
        self.assoc.wanted = Some((id, query.clone()));
        self.assoc.loading = true;
        cx.run(MemoryEffect::Assoc { id, query });
    }

    fn action(&mut self, a: &Action, cx: &mut Ctx<'_>) -> bool {
        if let Some(m) = MemoryAction::of(a) {
            if self.error.is_some() && self.snapshot.is_none() && m != MemoryAction::Refresh {
                let e = self.error.clone().unwrap_or_default();
                cx.notice(e, Level::Error);
                return true;
            }
            match m {
                MemoryAction::InsertArchival => self.ask_insert(MemoryTier::Archival, cx),
                MemoryAction::InsertWorking => self.ask_insert(MemoryTier::Working, cx),
                MemoryAction::Edit => self.ask_edit(cx),
                MemoryAction::Evict => self.evict(cx),
                MemoryAction::Promote => self.promote(cx),
                MemoryAction::Delete => self.ask_delete(cx),
                MemoryAction::Search => self.typing = true,
                MemoryAction::NextList | MemoryAction::PrevList => {
                    self.list = self.list.step(m == MemoryAction::NextList);
                    self.selected = 0;
                }
                MemoryAction::OpenSource => self.open_source(cx),
                MemoryAction::Refresh => {
                    self.load(cx);
                    if self.shown_search().is_some() {
                        self.search_again(cx);
                    }
                }
                MemoryAction::Associations => {
                    self.assoc.on = !self.assoc.on;
                    self.assoc.wanted = None;
                }
            }
            return true;
        }
        let n = self.rows().len();
        let sel = self.selected;
        match a {
            Action::MoveDown => self.select(sel + 1),
            Action::MoveUp => self.select(sel.saturating_sub(1)),
            Action::PageDown => self.select(sel + 10),
            Action::PageUp => self.select(sel.saturating_sub(10)),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = n.saturating_sub(1),
            Action::Select => self.open_source(cx),
            // Esc clears a search first; with none it does what it does elsewhere.
            Action::CancelRun if cx.state.overlay.is_none() && !self.search.text().is_empty() => {
                self.clear_search()
            }
            _ => return false,
        }
        true
    }

    fn msg(&mut self, m: MemoryMsg, cx: &mut Ctx<'_>) {
        match m {
            MemoryMsg::Assoc { id, query, result } => {
                if self.assoc.wanted != Some((id, query)) {
                    return;
                }
                self.assoc.loading = false;
                match result {
                    Ok(a) => self.assoc.data = Some(*a),
                    Err(e) => cx.notice(format!("memory associations: {e}"), Level::Error),
                }
            }
            MemoryMsg::Loaded { result, warnings } => {
                self.loading = false;
                if !warnings.is_empty() {
                    cx.notice(format!("memory: {}", warnings.join("; ")), Level::Warn);
                }
                match result {
                    Ok(s) => self.loaded(*s),
                    Err(e) => {
                        cx.notice(format!("memory: {e}"), Level::Error);
                        self.error = Some(e);
                    }
                }
                if std::mem::take(&mut self.reload) {
                    self.load(cx);
                }
            }
            MemoryMsg::Found {
                seq,
                query,
                hits,
                warnings,
            } => {
                if seq != self.seq {
                    return;
                }
                self.searching = false;
                if !warnings.is_empty() {
                    cx.notice(format!("memory: {}", warnings.join("; ")), Level::Warn);
                }
                let keep = if std::mem::take(&mut self.to_top) {
                    None
                } else {
                    self.selected_entry().map(|e| e.id)
                };
                match hits {
                    Ok(hits) => self.found = Some(Found { query, hits }),
                    Err(e) => {
                        self.found = None;
                        cx.notice(format!("memory search failed: {e}"), Level::Error);
                    }
                }
                let at = keep.and_then(|id| self.rows().iter().position(|r| r.entry.id == id));
                match at {
                    Some(i) => self.selected = i,
                    None => self.select(self.selected),
                }
            }
            MemoryMsg::Done {
                notice,
                level,
                follow,
            } => {
                self.busy = None;
                // What changed may be the shown learning: read its associations again.
                self.assoc.wanted = None;
                if follow.is_some() {
                    self.follow = follow;
                }
                cx.notice(notice, level);
                self.load(cx);
                if self.shown_search().is_some() {
                    self.search_again(cx);
                }
            }
            MemoryMsg::Failed(e) => {
                self.busy = None;
                self.follow = None;
                cx.notice(format!("memory: {e}"), Level::Error);
            }
            MemoryMsg::Open { session, node } => {
                let mut fx = Vec::new();
                crate::app::search_ui::jump_to(cx.state, session, node, &mut fx);
                for e in fx {
                    cx.effect(e);
                }
            }
        }
    }

    fn form(&mut self, form: FormPurpose, answer: Answer, cx: &mut Ctx<'_>) {
        match form {
            FormPurpose::InsertText { tier } => {
                let start = self.snapshot.as_ref().map_or(0.5, |s| s.default_importance);
                let (labels, _, cursor) = importance_choices(None, start);
                let where_to = if tier == MemoryTier::Working {
                    "working memory"
                } else {
                    "archival"
                };
                let mut f = Form::choose(
                    format!("Insert into {where_to}: importance, then tags"),
                    Ctx::purpose(FormPurpose::InsertDetails {
                        tier,
                        text: answer.text,
                    }),
                    labels,
                )
                .with_text("tags (comma or space separated)", false, 400);
                f.cursor = cursor;
                cx.open_form(f);
            }
            FormPurpose::InsertDetails { tier, text } => {
                let importance = answer
                    .choice
                    .and_then(|i| LEVELS.get(i))
                    .map_or(0.5, |(v, _)| *v);
                self.start(
                    format!("inserting into {tier}…"),
                    MemoryEffect::Insert {
                        text,
                        importance,
                        tags: parse_tags(&answer.text),
                        tier,
                    },
                    cx,
                );
            }
            FormPurpose::EditText { id } => {
                let Some(e) = self
                    .rows()
                    .iter()
                    .map(|r| r.entry)
                    .find(|e| e.id == id)
                    .cloned()
                else {
                    cx.notice("that memory is no longer listed", Level::Warn);
                    return;
                };
                let text = (answer.text != e.content.trim()).then_some(answer.text);
                self.ask_details(&e, text, cx);
            }
            FormPurpose::EditDetails {
                id,
                text,
                levels,
                old_importance,
                old_tags,
            } => {
                let importance = answer
                    .choice
                    .and_then(|i| levels.get(i).copied())
                    .filter(|v| (v - old_importance).abs() >= 0.005);
                let tags = Some(parse_tags(&answer.text)).filter(|t| *t != old_tags);
                if text.is_none() && importance.is_none() && tags.is_none() {
                    cx.notice("nothing changed", Level::Info);
                    return;
                }
                self.follow = Some(id);
                self.start(
                    format!("saving {}…", id.short()),
                    MemoryEffect::Edit {
                        id,
                        text,
                        importance,
                        tags,
                    },
                    cx,
                );
            }
            FormPurpose::Delete { id } => {
                if answer.choice == Some(1) {
                    self.start(
                        format!("deleting {}…", id.short()),
                        MemoryEffect::Delete(id),
                        cx,
                    );
                } else {
                    cx.notice("kept", Level::Info);
                }
            }
        }
    }

    fn draw_view(&mut self, f: &mut Frame, area: Rect, v: &ViewCx<'_>) {
        let Some(s) = &self.snapshot else {
            let status = match (&self.error, self.loading) {
                (Some(e), _) => format!("memory is not available: {e}"),
                (None, true) => "⟳ reading memory…".to_string(),
                (None, false) => String::new(),
            };
            crate::views::think::empty_workspace(
                f,
                area,
                "Memory",
                status,
                &[
                    "Memory keeps facts across sessions: core facts and working memory make up the main context every think turn sees; recall keeps recent turns; archival keeps the rest.",
                ],
                v.theme,
            );
            return;
        };
        let search_status = self.shown_search().map(|found| {
            if self.searching {
                "searching…".to_string()
            } else {
                let n = found.hits.len();
                let strong = found.hits.iter().filter(|(_, x)| *x >= s.relevant).count();
                format!(
                    "{n} {} for '{}', {strong} scoring {:.2}+ (the rest dimmed)",
                    if n == 1 { "hit" } else { "hits" },
                    found.query,
                    s.relevant
                )
            }
        });
        let search_status = search_status.or_else(|| {
            (self.searching && !self.search.text().trim().is_empty())
                .then(|| "searching…".to_string())
        });
        let rows = self.rows();
        let view = MemoryView {
            stats: &s.stats,
            scope: &s.scope,
            core: &s.core,
            working: &s.working,
            evict_to: s.evict_to,
            relevant: s.relevant,
            list: self.list,
            counts: self.counts(),
            rows,
            selected: self.selected,
            search: &self.search,
            typing: self.typing,
            search_status,
            status: self
                .busy
                .clone()
                .or_else(|| self.error.as_ref().map(|e| format!("memory: {e}"))),
            assoc: self.assoc.on.then_some(AssocView {
                data: self.assoc.data.as_ref(),
                loading: self.assoc.loading,
            }),
        };
        crate::views::memory::render(f, area, &view, v);
    }
}

//! The Memory workspace: the main context on top (a gauge of its tokens against the
//! capacity, the tier counts and totals, the core facts and the working entries), then the
//! lists (main context, recall, archival) as tabs, the search line that filters them, and
//! the selected entry in full with where it came from.

pub mod assoc;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};

use super::input::InputBox;
use super::theme::Role;
use super::think::pane;
use super::verify::wrap;
use super::{ViewCx, hints};
use crate::engines::memory::MemoryStats;
use crate::store::{MemoryEntry, MemoryTier};

/// The lists below the main context, in tab order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryList {
    /// Core facts and working memory.
    Main,
    Recall,
    #[default]
    Archival,
}

impl MemoryList {
    pub const ALL: [MemoryList; 3] = [MemoryList::Main, MemoryList::Recall, MemoryList::Archival];

    pub fn title(self) -> &'static str {
        match self {
            MemoryList::Main => "Main context",
            MemoryList::Recall => "Recall",
            MemoryList::Archival => "Archival",
        }
    }

    /// Whether entries of `tier` belong in this list.
    pub fn holds(self, tier: MemoryTier) -> bool {
        match self {
            MemoryList::Main => tier.in_main_context(),
            MemoryList::Recall => tier == MemoryTier::Recall,
            MemoryList::Archival => tier == MemoryTier::Archival,
        }
    }

    /// The list an entry of `tier` is in.
    pub fn of(tier: MemoryTier) -> Self {
        match tier {
            MemoryTier::Core | MemoryTier::Working => MemoryList::Main,
            MemoryTier::Recall => MemoryList::Recall,
            MemoryTier::Archival => MemoryList::Archival,
        }
    }

    fn index(self) -> usize {
        match self {
            MemoryList::Main => 0,
            MemoryList::Recall => 1,
            MemoryList::Archival => 2,
        }
    }

    /// The next tab (wrapping), or the previous one.
    pub fn step(self, forward: bool) -> Self {
        let n = Self::ALL.len();
        let i = self.index();
        Self::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// One row of a list: the entry and, in search results, its score.
#[derive(Clone, Copy, Debug)]
pub struct MemoryRow<'a> {
    pub entry: &'a MemoryEntry,
    pub score: Option<f32>,
}

/// What the workspace draws.
pub struct MemoryView<'a> {
    pub stats: &'a MemoryStats,
    /// Where new entries go (`project:/path`); reads also see global.
    pub scope: &'a str,
    /// Core facts, newest first.
    pub core: &'a [MemoryEntry],
    /// Working entries, most important first.
    pub working: &'a [MemoryEntry],
    /// Auto-eviction empties working memory down to this share of the capacity.
    pub evict_to: f64,
    /// Search hits scoring below this are dimmed.
    pub relevant: f32,
    pub list: MemoryList,
    /// The rows of each list (search hits while a search is shown), in tab order.
    pub counts: [usize; 3],
    /// The rows of the shown list.
    pub rows: Vec<MemoryRow<'a>>,
    pub selected: usize,
    pub search: &'a InputBox,
    /// Whether keys go to the search line.
    pub typing: bool,
    /// What the search line says after the query ("searching…", "4 hits").
    pub search_status: Option<String>,
    /// What is under way or went wrong, shown on the gauge's line.
    pub status: Option<String>,
    /// The associative view of the selected entry, in place of its details, when shown.
    pub assoc: Option<assoc::AssocView<'a>>,
}

/// Draws the workspace into `area`.
pub fn render(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let hint_rows = if area.width < 120 { 2 } else { 1 };
    let main_lines = 2 + m.core.len().max(1) + m.working.len() + hint_rows;
    let top_max = (area.height * 2 / 5).max(7);
    let top_height = (main_lines as u16 + 2).min(top_max);
    let [top, tabs, search, body] = Layout::vertical([
        Constraint::Length(top_height),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(3),
    ])
    .areas(area);
    main_context(f, top, m, v);
    tab_line(f, tabs, m, v);
    search_line(f, search, m, v);
    let [list_area, detail_area] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(body);
    list(f, list_area, m, v);
    match &m.assoc {
        Some(a) => assoc::render(f, detail_area, a, v),
        None => detail(f, detail_area, m, v),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The first line of `text`, cut to `width` characters with an ellipsis.
fn first_line(text: &str, width: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim();
    let more = text.trim().lines().count() > 1;
    clip(line, width, more)
}

fn clip(text: &str, width: usize, more: bool) -> String {
    let n = text.chars().count();
    if n <= width && !more {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let keep = if n < width { n } else { width - 1 };
    let mut out: String = text.chars().take(keep).collect();
    out.push('…');
    out
}

fn tier_label(e: &MemoryEntry) -> String {
    match (e.tier, e.section) {
        (MemoryTier::Core, Some(s)) => format!("core:{s}"),
        (t, _) => t.as_str().to_string(),
    }
}

fn tags(e: &MemoryEntry) -> String {
    e.tags
        .iter()
        .map(|t| format!("#{t}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main_context(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let block = pane(" Main context ", false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let s = m.stats;
    let ratio = s.main_context_utilization.clamp(0.0, 1.0);
    let role = if s.main_context_utilization > 1.0 {
        Role::Error
    } else if s.main_context_utilization >= m.evict_to {
        Role::Warning
    } else {
        Role::Success
    };
    let percent = s.main_context_utilization * 100.0;
    let label = format!(
        "{} / {} tokens · {}",
        thousands(s.main_context_tokens),
        thousands(s.main_context_capacity),
        if percent > 0.0 && percent < 0.1 {
            "<0.1%".to_string()
        } else {
            format!("{percent:.1}%")
        }
    );
    let [gauge_area, _, counts_area] = Layout::horizontal([
        Constraint::Percentage(60),
        Constraint::Length(1),
        Constraint::Min(1),
    ])
    .areas(Rect { height: 1, ..inner });
    f.render_widget(
        Gauge::default()
            .ratio(ratio)
            .label(Span::styled(label, theme.style(Role::Fg)))
            .use_unicode(true)
            .gauge_style(theme.style(role).patch(theme.style(Role::Bg))),
        gauge_area,
    );
    let counts = format!(
        "{} main · {} recall · {} archival",
        s.main_context_entries, s.recall_storage_entries, s.archival_storage_entries
    );
    f.render_widget(
        Paragraph::new(Line::styled(
            clip(&counts, counts_area.width as usize, false),
            theme.style(Role::Title),
        )),
        counts_area,
    );
    let width = inner.width as usize;
    let mut second = Vec::new();
    if let Some(status) = &m.status {
        second.push(Span::styled(
            format!("{status}  "),
            theme.style(Role::Accent),
        ));
    }
    second.push(Span::styled(
        format!(
            "inserts {} · searches {} · evictions {} · promotions {} · {}",
            s.total_inserts, s.total_searches, s.total_evictions, s.total_promotions, m.scope
        ),
        dim,
    ));
    let used: usize = second.iter().map(|s| s.content.chars().count()).sum();
    if used > width
        && let Some(last) = second.last_mut()
    {
        let room = width.saturating_sub(used - last.content.chars().count());
        *last = Span::styled(clip(&last.content, room, false), last.style);
    }
    let mut lines = vec![Line::from(second)];
    let hint_rows: Vec<String> = {
        let text = hints::line(
            v.keys,
            &[
                (&["insert_memory"], "insert"),
                (&["insert_working"], "into working"),
                (&["edit_memory"], "edit"),
                (&["evict_memory"], "evict"),
                (&["promote_memory"], "promote"),
                (&["delete_memory"], "delete"),
                (&["search_memory"], "search"),
                (&["open_memory_source"], "source node"),
                (&["refresh_memory"], "refresh"),
                (&["memory_associations"], "associations"),
            ],
        );
        if text.is_empty() {
            Vec::new()
        } else {
            wrap(&text, width).into_iter().take(2).collect()
        }
    };
    let rows = (inner.height as usize)
        .saturating_sub(2)
        .saturating_sub(hint_rows.len());
    let mut facts: Vec<Line> = Vec::new();
    for e in m.core {
        let head = format!("{:<10} ", tier_label(e));
        facts.push(Line::from(vec![
            Span::styled(head.clone(), theme.style(Role::Decision)),
            Span::styled(
                first_line(&e.content, width.saturating_sub(head.chars().count())),
                theme.style(Role::Fg),
            ),
        ]));
    }
    if m.core.is_empty() {
        facts.push(Line::styled(
            "no core facts about the person or the assistant yet",
            dim,
        ));
    }
    for e in m.working {
        let head = format!("{:<10} ", "working");
        let imp = format!("{:.2} ", e.importance);
        facts.push(Line::from(vec![
            Span::styled(head.clone(), theme.style(Role::Accent)),
            Span::styled(imp.clone(), theme.confidence_style(f64::from(e.importance))),
            Span::styled(
                first_line(
                    &e.content,
                    width.saturating_sub(head.chars().count() + imp.chars().count()),
                ),
                theme.style(Role::Fg),
            ),
        ]));
    }
    if facts.len() > rows {
        let keep = rows.saturating_sub(1);
        let hidden = facts.len() - keep;
        facts.truncate(keep);
        if rows > 0 {
            facts.push(Line::styled(
                format!("… {hidden} more in the Main context list"),
                dim,
            ));
        }
    }
    lines.extend(facts);
    // The key hints sit on the pane's last rows.
    let room = (inner.height as usize).saturating_sub(1);
    while lines.len() + hint_rows.len() < room {
        lines.push(Line::raw(""));
    }
    lines.extend(hint_rows.into_iter().map(|h| Line::styled(h, dim)));
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            y: inner.y + 1,
            height: inner.height.saturating_sub(1),
            ..inner
        },
    );
}

fn tab_line(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let mut spans = vec![Span::raw(" ")];
    for (i, l) in MemoryList::ALL.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", dim));
        }
        let style = if l == m.list {
            theme.style(Role::Selection)
        } else {
            theme.style(Role::Fg)
        };
        spans.push(Span::styled(
            format!(" {} {} ", l.title(), m.counts[l.index()]),
            style,
        ));
    }
    let keys = hints::line(
        v.keys,
        &[(&["next_memory_list", "prev_memory_list"], "switch list")],
    );
    if !keys.is_empty() {
        spans.push(Span::styled(format!("   {keys}"), dim));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn search_line(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let query = m.search.text();
    let idle = query.is_empty() && !m.typing;
    let mut spans = vec![Span::styled(
        if idle { "   " } else { " / " },
        theme.style(Role::Accent),
    )];
    if idle {
        let keys = hints::keys(v.keys, &["search_memory"]).unwrap_or_default();
        spans.push(Span::styled(
            format!("{keys} searches every list as you type (keywords and meaning)"),
            dim,
        ));
    } else {
        spans.push(Span::styled(query.to_string(), theme.style(Role::Query)));
    }
    let status = match (&m.search_status, m.typing) {
        (Some(s), true) => format!("   {s} · enter keeps · esc clears"),
        (Some(s), false) => format!("   {s}"),
        (None, true) => "   type to search · enter keeps · esc clears".to_string(),
        (None, false) => String::new(),
    };
    spans.push(Span::styled(status, dim));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
    if m.typing {
        let (_, col) = m.search.cursor_position();
        let x = area.x + 3 + (col as u16).min(area.width.saturating_sub(4));
        f.set_cursor_position((x, area.y));
    }
}

fn list(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let order = if m.search_status.is_some() {
        "best first"
    } else if m.list == MemoryList::Main {
        "core, then working by importance"
    } else {
        "newest first"
    };
    let block = pane(format!(" {} · {order} ", m.list.title()), !m.typing, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let height = inner.height as usize;
    if m.rows.is_empty() {
        let text = if m.search_status.is_some() {
            format!("no {} entry matches", m.list.title().to_lowercase())
        } else {
            let how = match m.list {
                MemoryList::Main => hints::line(
                    v.keys,
                    &[(&["insert_working"], "inserts into working memory")],
                ),
                MemoryList::Recall => "think turns leave their question and answer here".into(),
                MemoryList::Archival => hints::line(
                    v.keys,
                    &[(&["insert_memory"], "inserts into archival storage")],
                ),
            };
            format!("nothing here yet; {how}")
        };
        f.render_widget(
            Paragraph::new(
                wrap(&text, width)
                    .into_iter()
                    .map(Line::raw)
                    .collect::<Vec<_>>(),
            )
            .style(dim),
            inner,
        );
        return;
    }
    let offset = (m.selected + 1).saturating_sub(height);
    let sel_style = theme.style(Role::Selection);
    let lines: Vec<Line> = m
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, r)| {
            let is_sel = i == m.selected;
            let weak = r.score.is_some_and(|s| s < m.relevant);
            let patch = |s: Style| {
                let s = if weak { s.patch(dim) } else { s };
                if is_sel { s.patch(sel_style) } else { s }
            };
            let e = r.entry;
            let mut spans = vec![
                Span::styled(
                    if is_sel { "▶ " } else { "  " },
                    patch(theme.style(Role::Accent)),
                ),
                Span::styled(format!("{} ", e.id.short()), patch(dim)),
                Span::styled(format!("{} ", e.created_at.format("%Y-%m-%d")), patch(dim)),
            ];
            if m.list == MemoryList::Main {
                spans.push(Span::styled(
                    format!("{:<10} ", tier_label(e)),
                    patch(theme.style(if e.tier == MemoryTier::Core {
                        Role::Decision
                    } else {
                        Role::Accent
                    })),
                ));
            }
            spans.push(Span::styled(
                format!("{:.2} ", e.importance),
                patch(theme.confidence_style(f64::from(e.importance))),
            ));
            if let Some(score) = r.score {
                spans.push(Span::styled(
                    format!("~{score:.2} "),
                    patch(theme.style(Role::Matched)),
                ));
            }
            let t = tags(e);
            if !t.is_empty() {
                spans.push(Span::styled(
                    format!("{t} "),
                    patch(theme.style(Role::Link)),
                ));
            }
            let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
            spans.push(Span::styled(
                first_line(&e.content, width.saturating_sub(used)),
                patch(theme.style(Role::Fg)),
            ));
            Line::from(spans)
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn detail(f: &mut Frame, area: Rect, m: &MemoryView<'_>, v: &ViewCx<'_>) {
    let theme = v.theme;
    let dim = theme.style(Role::Dim);
    let Some(r) = m.rows.get(m.selected) else {
        let block = pane(" Entry ", false, theme);
        f.render_widget(block, area);
        return;
    };
    let e = r.entry;
    let block = pane(format!(" Memory {} ", e.id.short()), false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let field = |name: &str, value: String, style: Style| {
        Line::from(vec![
            Span::styled(format!("{name:<11}"), dim),
            Span::styled(value, style),
        ])
    };
    let fg = theme.style(Role::Fg);
    let evicted = e
        .meta
        .get("evicted_at")
        .filter(|_| e.tier == MemoryTier::Archival)
        .and_then(|v| v.as_str())
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| format!(" (evicted {})", t.format("%Y-%m-%d %H:%M")))
        .unwrap_or_default();
    let p = &e.provenance;
    let mut from = vec![if p.origin.is_empty() {
        "unknown".to_string()
    } else {
        p.origin.clone()
    }];
    if let Some(s) = p.session {
        from.push(format!("session {}", s.short()));
    }
    if let Some(n) = p.node {
        from.push(format!("node {}", n.short()));
    }
    if let Some(step) = p.step {
        from.push(format!("step {step}"));
    }
    if let Some((i, n)) = p.chunk {
        from.push(format!("chunk {}/{n}", i + 1));
    }
    let mut lines = vec![
        field("tier", format!("{}{evicted}", tier_label(e)), fg),
        field(
            "scope",
            clip(&e.scope.to_string(), width.saturating_sub(11), false),
            fg,
        ),
        field(
            "importance",
            format!("{:.2}", e.importance),
            theme.confidence_style(f64::from(e.importance)),
        ),
        field(
            "tags",
            if e.tags.is_empty() {
                "none".into()
            } else {
                e.tags.join(", ")
            },
            if e.tags.is_empty() {
                dim
            } else {
                theme.style(Role::Link)
            },
        ),
        field(
            "created",
            format!(
                "{} · updated {}",
                e.created_at.format("%Y-%m-%d %H:%M"),
                e.updated_at.format("%Y-%m-%d %H:%M")
            ),
            fg,
        ),
        field("from", from.join(" · "), fg),
    ];
    if let Some(score) = r.score {
        lines.push(field(
            "score",
            format!("{score:.3}"),
            theme.style(Role::Matched),
        ));
    }
    let jump = if p.node.is_some() {
        hints::line(
            v.keys,
            &[(&["open_memory_source"], "opens the node in Think")],
        )
    } else {
        String::new()
    };
    if !jump.is_empty() {
        lines.push(Line::styled(jump, dim));
    }
    lines.push(Line::raw(""));
    let room = (inner.height as usize).saturating_sub(lines.len());
    let text = wrap(&e.content, width);
    let cut = text.len() > room;
    for (i, l) in text.into_iter().take(room).enumerate() {
        if cut && i + 1 == room {
            lines.push(Line::styled(clip(&l, width, true), fg));
        } else {
            lines.push(Line::styled(l, fg));
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use chrono::TimeZone;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::store::{CoreSection, MemoryId, MemoryScope, NodeId, Provenance, SessionId};
    use crate::views::Keys;
    use crate::views::markdown::{HighlightCache, MarkdownCache};
    use crate::views::theme::{ColorDepth, Theme};

    /// The keys of the built-in `[memory]` section, as the keymap would answer.
    struct MemoryKeys;

    impl Keys for MemoryKeys {
        fn keys(&self, action: &str) -> Vec<String> {
            let k: &[&str] = match action {
                "insert_memory" => &["a"],
                "insert_working" => &["A"],
                "edit_memory" => &["e"],
                "evict_memory" => &["x"],
                "promote_memory" => &["p"],
                "delete_memory" => &["d d"],
                "search_memory" => &["/"],
                "next_memory_list" => &["tab"],
                "prev_memory_list" => &["backtab"],
                "open_memory_source" => &["enter"],
                "refresh_memory" => &["r"],
                _ => &[],
            };
            k.iter().map(|s| s.to_string()).collect()
        }
    }

    fn id(n: u128) -> uuid::Uuid {
        uuid::Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + n)
    }

    fn entry(n: u128, tier: MemoryTier, text: &str, importance: f32, tags: &[&str]) -> MemoryEntry {
        let at = chrono::Utc
            .with_ymd_and_hms(2026, 1, 2, 10, n as u32 % 60, 0)
            .unwrap();
        MemoryEntry {
            id: MemoryId(id(n)),
            tier,
            scope: MemoryScope::Project("/work/demo".into()),
            section: None,
            content: text.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            importance,
            created_at: at,
            updated_at: at,
            provenance: Provenance {
                origin: "tui".into(),
                ..Default::default()
            },
            meta: Default::default(),
        }
    }

    fn screen(w: u16, h: u16, searching: bool) -> String {
        screen_with(w, h, searching, None)
    }

    fn associations() -> assoc::Associations {
        use assoc::{Contradiction, EventRow, Neighbour};
        assoc::Associations {
            id: Some(MemoryId(id(4))),
            text: "91 is not prime: 91 = 7 × 13.".into(),
            status: "active".into(),
            score: 0.42,
            reinforcement: 0.45,
            recurrence: 2,
            useful: 1,
            wrong: 0,
            validity: "2026-01-02 → open (high confidence)".into(),
            dims: Some(crate::engines::memory::Dims {
                text: 0.8,
                concept: 0.5,
                vector: 0.7,
                graph: 0.25,
                reinforcement: 0.45,
                temporal: 0.8,
                recency: 0.9,
                total: 0.6,
            }),
            query: Some("prime".into()),
            concepts: vec![
                (
                    "math".into(),
                    vec![Neighbour {
                        id: MemoryId(id(7)),
                        text: "Use exact integers for money.".into(),
                    }],
                ),
                ("primes".into(), vec![]),
            ],
            events: vec![
                EventRow {
                    id: 9,
                    at: "01-04 10:00".into(),
                    kind: "Reinforced".into(),
                    detail: "+0.10 useful".into(),
                },
                EventRow {
                    id: 3,
                    at: "01-02 09:00".into(),
                    kind: "Extracted".into(),
                    detail: "by manual (user_review)".into(),
                },
            ],
            contradictions: vec![Contradiction {
                other: MemoryId(id(8)),
                other_text: "91 is prime.".into(),
                verdict: "contradiction 0.92 (m)".into(),
            }],
            note: None,
        }
    }

    fn screen_with(w: u16, h: u16, searching: bool, a: Option<&assoc::Associations>) -> String {
        let mut human = entry(
            1,
            MemoryTier::Core,
            "Prefers answers in Rust with tests.",
            1.0,
            &[],
        );
        human.section = Some(CoreSection::Human);
        let mut agent = entry(2, MemoryTier::Core, "Explains before it edits.", 1.0, &[]);
        agent.section = Some(CoreSection::Agent);
        let core = vec![human, agent];
        let working = vec![entry(
            3,
            MemoryTier::Working,
            "The release is on Friday; freeze the API on Wednesday.",
            0.8,
            &["release"],
        )];
        let mut from_think = entry(
            4,
            MemoryTier::Archival,
            "91 is not prime: 91 = 7 × 13.\nChecked by trial division up to 9.",
            0.6,
            &["math", "primes"],
        );
        from_think.provenance = Provenance {
            origin: "think".into(),
            session: Some(SessionId(id(40))),
            node: Some(NodeId(id(41))),
            step: Some(2),
            chunk: None,
        };
        from_think.meta.insert(
            "evicted_at".into(),
            serde_json::json!("2026-01-03T09:30:00+00:00"),
        );
        let archival = [
            from_think,
            entry(
                5,
                MemoryTier::Archival,
                "The staging database lives on db2.",
                0.5,
                &[],
            ),
            entry(
                6,
                MemoryTier::Archival,
                "Use UTC in every log line.",
                0.3,
                &["ops"],
            ),
        ];
        let stats = MemoryStats {
            main_context_entries: 3,
            recall_storage_entries: 0,
            archival_storage_entries: 3,
            main_context_tokens: 71_250,
            main_context_capacity: 100_000,
            main_context_utilization: 0.7125,
            total_inserts: 9,
            total_searches: 4,
            total_evictions: 2,
            total_promotions: 1,
        };
        let mut search = InputBox::default();
        let rows: Vec<MemoryRow> = if searching {
            search.set_text("prime");
            vec![MemoryRow {
                entry: &archival[0],
                score: Some(0.83),
            }]
        } else {
            archival
                .iter()
                .map(|e| MemoryRow {
                    entry: e,
                    score: None,
                })
                .collect()
        };
        let view = MemoryView {
            stats: &stats,
            scope: "project:/work/demo + global",
            core: &core,
            working: &working,
            evict_to: 0.8,
            relevant: 0.3,
            list: MemoryList::Archival,
            counts: if searching { [0, 0, 1] } else { [3, 0, 3] },
            rows,
            selected: 0,
            search: &search,
            typing: searching,
            search_status: searching.then(|| "1 hit".to_string()),
            status: None,
            assoc: a.map(|a| assoc::AssocView {
                data: Some(a),
                loading: false,
            }),
        };
        let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
        let highlights = HighlightCache::new(4);
        let markdown = MarkdownCache::default();
        let cx = ViewCx {
            theme: &theme,
            keys: &MemoryKeys,
            highlights: &highlights,
            markdown: &markdown,
        };
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        term.draw(|f| render(f, f.area(), &view, &cx)).unwrap();
        term.backend().to_string()
    }

    #[test]
    fn memory_view_80x24() {
        insta::assert_snapshot!("memory_view_80x24", screen(80, 24, false));
    }

    #[test]
    fn memory_view_160x45() {
        let text = screen(160, 45, false);
        assert!(text.contains("71,250 / 100,000 tokens"), "{text}");
        assert!(text.contains("core:human"), "{text}");
        insta::assert_snapshot!("memory_view_160x45", text);
    }

    #[test]
    fn memory_view_searching_160x45() {
        let text = screen(160, 45, true);
        assert!(text.contains("~0.83"), "{text}");
        assert!(text.contains("session "), "{text}");
        insta::assert_snapshot!("memory_view_searching_160x45", text);
    }

    #[test]
    fn memory_associations_80x24() {
        insta::assert_snapshot!(
            "memory_associations_80x24",
            screen_with(80, 24, true, Some(&associations()))
        );
    }

    #[test]
    fn memory_associations_160x45() {
        let text = screen_with(160, 45, true, Some(&associations()));
        for want in [
            "Associations",
            "└─ primes",
            "Reinforced",
            "91 is prime.",
            "contradiction 0.92",
            "= 0.600",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        insta::assert_snapshot!("memory_associations_160x45", text);
    }

    #[test]
    fn thousands_and_clip() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(clip("abcdef", 4, false), "abc…");
        assert_eq!(clip("abc", 4, true), "abc…");
        assert_eq!(first_line("\n one \n two", 20), "one…");
    }
}

//! Renders a model's markdown answer into ratatui lines: pure, tolerant of half-streamed text.
//! Code blocks use styled lines from a [`HighlightCache`] when cached; syntect is never called here.

use std::borrow::Cow;
use std::hash::Hash;
use std::ops::Range;

use pulldown_cmark::{Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

pub use super::highlight_cache::{DEFAULT_CACHE_CAPACITY, HighlightCache};
pub use cache::MarkdownCache;

mod cache;

/// Spaces borrowed for indentation and table padding, so most padding allocates nothing.
const SPACES: &str = "                                                                ";
/// A horizontal rule; the Paragraph widget wraps it if the pane is narrower.
const RULE: &str = "────────────────────────────────";
/// Heading markers by level, kept so levels stay distinguishable without colour.
const HASHES: [&str; 6] = ["# ", "## ", "### ", "#### ", "##### ", "###### "];
/// Unordered list bullets by nesting depth (cycled); all are two columns wide.
const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];
/// Column separator in tables.
const TABLE_SEPARATOR: &str = " │ ";
/// Tabs in code are expanded to this many spaces (terminals render raw tabs unpredictably).
const TAB: &str = "    ";

/// Styles for each markdown construct; the theme builds one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MarkdownStyles {
    /// Plain paragraph text; every other style is patched on top of it.
    pub text: Style,
    /// Headings of every level, including their `#` markers.
    pub heading: Style,
    /// `*emphasis*`.
    pub emphasis: Style,
    /// `**strong**`.
    pub strong: Style,
    /// `` `inline code` ``.
    pub code_inline: Style,
    /// Code block lines with no cached highlighting; patched under highlighted spans.
    pub code_block: Style,
    /// Link text (the url after it is dimmed).
    pub link: Style,
    /// The `│ ` bar of block quotes and the quoted text.
    pub quote: Style,
    /// List bullets, numbers and task checkboxes.
    pub list_marker: Style,
    /// Horizontal rules and table borders.
    pub rule: Style,
}

impl Default for MarkdownStyles {
    fn default() -> Self {
        Self {
            text: Style::new(),
            heading: Style::new().add_modifier(Modifier::BOLD),
            emphasis: Style::new().add_modifier(Modifier::ITALIC),
            strong: Style::new().add_modifier(Modifier::BOLD),
            code_inline: Style::new().fg(Color::Yellow),
            code_block: Style::new().fg(Color::Gray),
            link: Style::new()
                .fg(Color::Blue)
                .add_modifier(Modifier::UNDERLINED),
            quote: Style::new().add_modifier(Modifier::ITALIC),
            list_marker: Style::new().fg(Color::Cyan),
            rule: Style::new().fg(Color::DarkGray),
        }
    }
}

/// A rendered answer: display lines plus the code blocks found, for the highlighter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// One entry per display line (not wrapped; the Paragraph widget wraps).
    pub lines: Vec<Line<'static>>,
    /// Every code block in document order.
    pub code_blocks: Vec<CodeBlock>,
}

/// A code block of the answer, as the highlighter needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBlock {
    /// The fence's language token (`rust`, `py`, …); empty for indented or bare blocks.
    pub lang: String,
    /// The code, without fences.
    pub code: String,
    /// Stable hash of `lang` and `code` (see [`CodeBlock::key_for`]); the highlight cache key.
    pub key: u64,
    /// False while the block may still grow (an open fence at the end of streaming text).
    /// Highlight only complete blocks.
    pub complete: bool,
}

impl CodeBlock {
    /// A complete code block with its key computed.
    pub fn new(lang: impl Into<String>, code: impl Into<String>) -> Self {
        let lang = lang.into();
        let code = code.into();
        let key = Self::key_for(&lang, &code);
        Self {
            lang,
            code,
            key,
            complete: true,
        }
    }

    /// The stable cache key of a block: FNV-1a over the language, a separator and the code,
    /// the same on every run and every build.
    pub fn key_for(lang: &str, code: &str) -> u64 {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut hash = OFFSET;
        // 0xff never occurs in UTF-8, so ("ab", "c") and ("a", "bc") hash apart.
        for byte in lang.bytes().chain([0xff]).chain(code.bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
        hash
    }
}

/// Renders markdown `text` into lines. Never panics on incomplete or malformed input; an
/// unterminated code fence renders as a code block holding what has arrived so far.
pub fn render(text: &str, styles: &MarkdownStyles, highlights: &HighlightCache) -> Rendered {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::new(styles, highlights, text.len());
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        renderer.event(event, text, range);
    }
    renderer.finish()
}

/// A block that prefixes each of its lines.
enum Container {
    /// A block quote: `│ ` on every line.
    Quote,
    /// A list item: the marker on its first line, spaces as wide as the marker after.
    Item {
        marker: Cow<'static, str>,
        width: usize,
        marker_shown: bool,
    },
}

/// A code block being collected.
struct OpenCode {
    lang: String,
    code: String,
    complete: bool,
}

/// A table being collected; rendered once its widths are known.
struct OpenTable {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    header_rows: usize,
}

/// Walks pulldown-cmark events and builds lines.
struct Renderer<'a> {
    styles: &'a MarkdownStyles,
    highlights: &'a HighlightCache,
    lines: Vec<Line<'static>>,
    code_blocks: Vec<CodeBlock>,
    /// Spans of the line (or table cell) being built, without the container prefix.
    spans: Vec<Span<'static>>,
    /// Inline style stack; the bottom is `styles.text`.
    inline: Vec<Style>,
    containers: Vec<Container>,
    /// Open lists: the next number for ordered ones, `None` for bullets.
    lists: Vec<Option<u64>>,
    /// Urls of open links, shown after the link text (`None` for autolinks).
    links: Vec<Option<String>>,
    code: Option<OpenCode>,
    table: Option<OpenTable>,
    /// A blank line goes before the next block.
    pending_blank: bool,
}

impl<'a> Renderer<'a> {
    fn new(styles: &'a MarkdownStyles, highlights: &'a HighlightCache, text_len: usize) -> Self {
        Self {
            styles,
            highlights,
            lines: Vec::with_capacity(text_len / 48 + 1),
            code_blocks: Vec::new(),
            spans: Vec::new(),
            inline: vec![styles.text],
            containers: Vec::new(),
            lists: Vec::new(),
            links: Vec::new(),
            code: None,
            table: None,
            pending_blank: false,
        }
    }

    fn event(&mut self, event: Event<'_>, source: &str, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, source, range),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.code.push_str(&text),
                None => self.push_multiline(&text, self.style()),
            },
            Event::Code(code) => {
                let style = self.style().patch(self.styles.code_inline);
                self.push_text(&code, style);
            }
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                let style = self.style().patch(self.styles.code_inline);
                self.push_text(&math, style);
            }
            Event::Html(html) | Event::InlineHtml(html) => self.push_multiline(&html, self.style()),
            Event::FootnoteReference(label) => {
                let style = self.style().patch(self.styles.link);
                self.spans.push(Span::styled(format!("[^{label}]"), style));
            }
            Event::SoftBreak => self.push_text(" ", self.style()),
            Event::HardBreak => {
                if self.table.is_some() {
                    self.push_text(" ", self.style());
                } else {
                    self.flush_line();
                }
            }
            Event::Rule => {
                self.begin_block();
                self.spans.push(Span::styled(RULE, self.styles.rule));
                self.flush_line();
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.spans.push(Span::styled(mark, self.styles.list_marker));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>, source: &str, range: Range<usize>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) | Tag::DefinitionList => {
                self.begin_block();
            }
            Tag::DefinitionListTitle | Tag::DefinitionListDefinition => self.flush_line(),
            Tag::Heading { level, .. } => {
                self.begin_block();
                let style = self.style().patch(self.styles.heading);
                self.inline.push(style);
                let hashes = HASHES
                    .get((level as usize).saturating_sub(1))
                    .copied()
                    .unwrap_or("# ");
                self.spans.push(Span::styled(hashes, style));
            }
            Tag::BlockQuote(_) => {
                self.begin_block();
                self.containers.push(Container::Quote);
                self.push_style(self.styles.quote);
            }
            Tag::CodeBlock(kind) => {
                self.begin_block();
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => fence_language(info).to_owned(),
                    CodeBlockKind::Indented => String::new(),
                };
                let complete = code_block_complete(&kind, source, range);
                self.code = Some(OpenCode {
                    lang,
                    code: String::new(),
                    complete,
                });
            }
            Tag::List(first) => {
                self.flush_line();
                // A list directly under an item continues the item; elsewhere it is a new block.
                if !self.in_item() {
                    self.gap();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush_line();
                self.gap();
                let (marker, width) = self.next_marker();
                self.containers.push(Container::Item {
                    marker,
                    width,
                    marker_shown: false,
                });
            }
            Tag::FootnoteDefinition(label) => {
                self.begin_block();
                let style = self.style().patch(self.styles.link);
                self.spans
                    .push(Span::styled(format!("[^{label}]: "), style));
            }
            Tag::Table(alignments) => {
                self.begin_block();
                self.table = Some(OpenTable {
                    alignments,
                    rows: Vec::new(),
                    row: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.row.clear();
                }
            }
            Tag::TableCell => self.spans.clear(),
            Tag::Emphasis => self.push_style(self.styles.emphasis),
            Tag::Strong => self.push_style(self.styles.strong),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.push_style(Style::new()),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                self.push_style(self.styles.link);
                let url = match link_type {
                    LinkType::Autolink | LinkType::Email => None,
                    _ => Some(dest_url.into_string()),
                };
                self.links.push(url);
            }
            Tag::Image { dest_url, .. } => {
                self.push_style(self.styles.link);
                self.push_text("[image: ", self.style());
                self.links.push(Some(dest_url.into_string()));
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::FootnoteDefinition => self.end_block(),
            TagEnd::DefinitionListTitle | TagEnd::DefinitionListDefinition => self.flush_line(),
            TagEnd::Heading(_) => {
                self.pop_style();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush_line();
                self.pop_style();
                self.pop_container(|c| matches!(c, Container::Quote));
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                self.finish_code();
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.flush_line();
                self.lists.pop();
                if !self.in_item() {
                    self.pending_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush_line();
                // An empty item still shows its marker.
                if let Some(Container::Item {
                    marker_shown: false,
                    ..
                }) = self.containers.last()
                {
                    self.push_line(Vec::new());
                }
                self.pop_container(|c| matches!(c, Container::Item { .. }));
            }
            TagEnd::Table => self.finish_table(),
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                    if tag == TagEnd::TableHead {
                        table.header_rows = table.rows.len();
                    }
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.spans);
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => self.pop_style(),
            TagEnd::Link | TagEnd::Image => {
                if tag == TagEnd::Image {
                    self.push_text("]", self.style());
                }
                self.pop_style();
                if let Some(Some(url)) = self.links.pop()
                    && !url.is_empty()
                {
                    let style = self.style().add_modifier(Modifier::DIM);
                    self.spans.push(Span::styled(format!(" ({url})"), style));
                }
            }
        }
    }

    fn finish(mut self) -> Rendered {
        // pulldown-cmark closes every open tag itself; this only guards against surprises.
        if self.code.is_some() {
            self.finish_code();
        }
        if self.table.is_some() {
            self.finish_table();
        }
        self.flush_line();
        Rendered {
            lines: self.lines,
            code_blocks: self.code_blocks,
        }
    }

    fn style(&self) -> Style {
        self.inline.last().copied().unwrap_or(self.styles.text)
    }

    fn push_style(&mut self, patch: Style) {
        let style = self.style().patch(patch);
        self.inline.push(style);
    }

    fn pop_style(&mut self) {
        if self.inline.len() > 1 {
            self.inline.pop();
        }
    }

    fn pop_container(&mut self, is_kind: impl Fn(&Container) -> bool) {
        if self.containers.last().is_some_and(is_kind) {
            self.containers.pop();
        }
    }

    fn in_item(&self) -> bool {
        self.containers
            .iter()
            .any(|c| matches!(c, Container::Item { .. }))
    }

    /// The marker and its width for a new item of the innermost list.
    fn next_marker(&mut self) -> (Cow<'static, str>, usize) {
        let depth = self.lists.len().saturating_sub(1);
        match self.lists.last_mut() {
            Some(Some(number)) => {
                let marker = format!("{number}. ");
                *number = number.saturating_add(1);
                let width = marker.len();
                (Cow::Owned(marker), width)
            }
            _ => (Cow::Borrowed(BULLETS[depth % BULLETS.len()]), 2),
        }
    }

    /// Starts a block: ends the line in progress and separates it from the previous block.
    fn begin_block(&mut self) {
        self.flush_line();
        self.gap();
    }

    fn end_block(&mut self) {
        self.flush_line();
        self.pending_blank = true;
    }

    /// Emits the blank line owed between blocks, if any (never at the top of the document).
    fn gap(&mut self) {
        if !std::mem::take(&mut self.pending_blank) || self.lines.is_empty() {
            return;
        }
        if self
            .containers
            .iter()
            .any(|c| matches!(c, Container::Quote))
        {
            let mut prefix = Vec::with_capacity(self.containers.len());
            push_prefix(&mut self.containers, self.styles, &mut prefix, false);
            self.lines.push(Line::from(prefix));
        } else {
            self.lines.push(Line::default());
        }
    }

    /// Appends text to the line in progress, merging with the last span when the style matches.
    fn push_text(&mut self, text: &str, style: Style) {
        if let Some(last) = self.spans.last_mut()
            && last.style == style
            && let Cow::Owned(content) = &mut last.content
        {
            content.push_str(text);
            return;
        }
        self.spans.push(Span::styled(text.to_owned(), style));
    }

    /// Appends text that may contain newlines (raw HTML), breaking lines at each one.
    fn push_multiline(&mut self, text: &str, style: Style) {
        let mut pieces = text.split('\n');
        if let Some(first) = pieces.next()
            && !first.is_empty()
        {
            self.push_text(first.trim_end_matches('\r'), style);
        }
        for piece in pieces {
            self.flush_line();
            let piece = piece.trim_end_matches('\r');
            if !piece.is_empty() {
                self.push_text(piece, style);
            }
        }
    }

    /// Ends the line in progress (if it has content), prefixed by its containers.
    fn flush_line(&mut self) {
        if self.spans.is_empty() || self.table.is_some() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        self.push_line(spans);
    }

    /// Pushes a finished line behind the container prefix.
    fn push_line(&mut self, content: Vec<Span<'static>>) {
        if self.containers.is_empty() {
            self.lines.push(Line::from(content));
            return;
        }
        let mut spans = Vec::with_capacity(self.containers.len() + content.len());
        push_prefix(&mut self.containers, self.styles, &mut spans, true);
        spans.extend(content);
        self.lines.push(Line::from(spans));
    }

    fn finish_code(&mut self) {
        let Some(OpenCode {
            lang,
            code,
            complete,
        }) = self.code.take()
        else {
            return;
        };
        let key = CodeBlock::key_for(&lang, &code);
        match self.highlights.get(key) {
            Some(cached) => {
                for line in cached {
                    let content = line
                        .spans
                        .iter()
                        .map(|span| {
                            Span::styled(
                                span.content.clone(),
                                self.styles.code_block.patch(span.style),
                            )
                        })
                        .collect();
                    self.push_line(content);
                }
            }
            None => {
                for line in code.lines() {
                    let content = vec![Span::styled(expand_tabs(line), self.styles.code_block)];
                    self.push_line(content);
                }
            }
        }
        self.code_blocks.push(CodeBlock {
            lang,
            code,
            key,
            complete,
        });
    }

    fn finish_table(&mut self) {
        let Some(mut table) = self.table.take() else {
            return;
        };
        if !table.row.is_empty() {
            table.rows.push(std::mem::take(&mut table.row));
        }
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell_width(cell));
            }
        }
        let header_style = self.styles.strong;
        for (index, row) in table.rows.into_iter().enumerate() {
            let header = index < table.header_rows;
            let mut cells = row.into_iter();
            let mut content = Vec::with_capacity(columns * 3);
            for (column, &width) in widths.iter().enumerate() {
                if column > 0 {
                    content.push(Span::styled(TABLE_SEPARATOR, self.styles.rule));
                }
                let cell = cells.next().unwrap_or_default();
                let room = width.saturating_sub(cell_width(&cell));
                let (left, right) = match table.alignments.get(column) {
                    Some(Alignment::Right) => (room, 0),
                    Some(Alignment::Center) => (room / 2, room - room / 2),
                    _ => (0, room),
                };
                if left > 0 {
                    content.push(spaces(left));
                }
                content.extend(cell.into_iter().map(|span| {
                    if header {
                        span.patch_style(header_style)
                    } else {
                        span
                    }
                }));
                if right > 0 {
                    content.push(spaces(right));
                }
            }
            self.push_line(content);
            if header && index + 1 == table.header_rows {
                let border = widths
                    .iter()
                    .map(|&width| "─".repeat(width))
                    .collect::<Vec<_>>()
                    .join("─┼─");
                self.push_line(vec![Span::styled(border, self.styles.rule)]);
            }
        }
        self.pending_blank = true;
    }
}

/// Pushes the prefix of the current containers; `first_line` consumes pending list markers.
fn push_prefix(
    containers: &mut [Container],
    styles: &MarkdownStyles,
    out: &mut Vec<Span<'static>>,
    first_line: bool,
) {
    for container in containers {
        match container {
            Container::Quote => out.push(Span::styled("│ ", styles.quote)),
            Container::Item {
                marker,
                width,
                marker_shown,
            } => {
                if first_line && !*marker_shown {
                    *marker_shown = true;
                    out.push(Span::styled(std::mem::take(marker), styles.list_marker));
                } else {
                    out.push(spaces(*width));
                }
            }
        }
    }
}

/// A span of `count` spaces, borrowed when short enough.
fn spaces(count: usize) -> Span<'static> {
    match SPACES.get(..count) {
        Some(borrowed) => Span::raw(borrowed),
        None => Span::raw(" ".repeat(count)),
    }
}

fn cell_width(cell: &[Span<'_>]) -> usize {
    cell.iter().map(Span::width).sum()
}

fn expand_tabs(line: &str) -> String {
    if line.contains('\t') {
        line.replace('\t', TAB)
    } else {
        line.to_owned()
    }
}

/// The language token of a fence's info string: ```` ```rust,ignore ```` → `rust`.
fn fence_language(info: &str) -> &str {
    info.split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
        .find(|token| !token.is_empty())
        .unwrap_or("")
}

/// Whether a code block can no longer grow. A block that ends before the end of the text is
/// finished; one that runs to the end is finished only if its closing fence has arrived.
fn code_block_complete(kind: &CodeBlockKind<'_>, source: &str, range: Range<usize>) -> bool {
    if range.end < source.len() {
        return true;
    }
    if matches!(kind, CodeBlockKind::Indented) {
        return false;
    }
    let Some(block) = source.get(range) else {
        return false;
    };
    let block = block.trim_end_matches(['\n', '\r']);
    let Some((head, rest)) = block.split_once('\n') else {
        return false;
    };
    let Some(open_at) = head.find(['`', '~']) else {
        return false;
    };
    let opening = &head[open_at..];
    let Some(fence) = opening.chars().next() else {
        return false;
    };
    let fence_len = opening.chars().take_while(|&c| c == fence).count();
    let last = rest.rsplit('\n').next().unwrap_or(rest);
    let last = last.trim_start_matches(|c: char| c == '>' || c.is_whitespace());
    let closing_len = last.chars().take_while(|&c| c == fence).count();
    closing_len >= fence_len && last[closing_len..].trim().is_empty()
}

#[cfg(test)]
mod tests;

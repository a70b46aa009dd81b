//! Syntax highlighting of answer code blocks with syntect, off the render path (as gitui does):
//! a background thread highlights requested blocks and the main loop caches the styled lines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, mpsc};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::views::markdown::CodeBlock;

/// Blocks larger than this are left plain: the regex engine is too slow on them to be worth it.
const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;
/// A dark theme that ships with syntect; its background is ignored so the app theme shows.
const THEME_NAME: &str = "base16-ocean.dark";
/// Tabs become this many spaces, as in the markdown renderer.
const TAB: &str = "    ";

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEME: LazyLock<Theme> = LazyLock::new(|| {
    let mut themes = ThemeSet::load_defaults();
    themes.themes.remove(THEME_NAME).unwrap_or_default()
});

/// Styled lines for one code block, sent back by the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Highlighted {
    /// The [`CodeBlock::key`] these lines belong to.
    pub key: u64,
    /// One line per code line, foreground colours only.
    pub lines: Vec<Line<'static>>,
}

/// Highlights `block` synchronously. Unknown languages and oversized blocks come back as
/// unstyled lines. One line per code line, tabs expanded, no trailing newlines.
pub fn highlight_now(block: &CodeBlock) -> Vec<Line<'static>> {
    match syntax_for(&block.lang) {
        Some(syntax) if block.code.len() <= MAX_HIGHLIGHT_BYTES => {
            highlight_with(syntax, &block.code)
        }
        _ => block.code.lines().map(plain_line).collect(),
    }
}

/// The syntax for a fence language token (`rust`, `rs`, `py`, `ts`, `sh`, …), `None` for
/// unknown tokens and plain text.
fn syntax_for(lang: &str) -> Option<&'static SyntaxReference> {
    let token = lang.trim().trim_start_matches('.').to_ascii_lowercase();
    // syntect's default set has no TypeScript or TOML: JavaScript's grammar and Java
    // properties (`key = value`, `#` comments) are close enough.
    let token = match token.as_str() {
        "" | "text" | "txt" | "plain" | "plaintext" => return None,
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "shell" | "zsh" | "console" | "shell-session" | "sh-session" => "bash",
        "py3" | "python3" => "py",
        "c++" | "cxx" | "hpp" | "hxx" => "cpp",
        "golang" => "go",
        "yml" => "yaml",
        "jsonc" | "json5" => "json",
        "toml" | "ini" | "cfg" | "conf" => "properties",
        other => other,
    };
    SYNTAXES
        .find_syntax_by_token(token)
        .filter(|syntax| syntax.name != "Plain Text")
}

fn highlight_with(syntax: &SyntaxReference, code: &str) -> Vec<Line<'static>> {
    let mut highlighter = HighlightLines::new(syntax, &THEME);
    let mut lines = Vec::with_capacity(code.len() / 32 + 1);
    let mut failed = false;
    for line in LinesWithEndings::from(code) {
        // After a parse error the parser state is unreliable: the rest stays plain.
        let ranges = if failed {
            None
        } else {
            highlighter.highlight_line(line, &SYNTAXES).ok()
        };
        match ranges {
            Some(ranges) => lines.push(styled_line(&ranges)),
            None => {
                failed = true;
                lines.push(plain_line(line));
            }
        }
    }
    lines
}

fn styled_line(ranges: &[(syntect::highlighting::Style, &str)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::with_capacity(ranges.len());
    for (syntect_style, piece) in ranges {
        let piece = piece.trim_end_matches(['\n', '\r']);
        if piece.is_empty() {
            continue;
        }
        let style = to_ratatui(*syntect_style);
        match spans.last_mut() {
            Some(last) if last.style == style => {
                last.content.to_mut().push_str(&expand_tabs(piece))
            }
            _ => spans.push(Span::styled(expand_tabs(piece), style)),
        }
    }
    Line::from(spans)
}

fn plain_line(line: &str) -> Line<'static> {
    Line::from(expand_tabs(line.trim_end_matches(['\n', '\r'])))
}

fn expand_tabs(text: &str) -> String {
    if text.contains('\t') {
        text.replace('\t', TAB)
    } else {
        text.to_owned()
    }
}

/// Foreground colour and font style only; the syntect background is dropped.
fn to_ratatui(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new();
    if fg.a > 0 {
        out = out.fg(Color::Rgb(fg.r, fg.g, fg.b));
    }
    for (font, modifier) in [
        (FontStyle::BOLD, Modifier::BOLD),
        (FontStyle::ITALIC, Modifier::ITALIC),
        (FontStyle::UNDERLINE, Modifier::UNDERLINED),
    ] {
        if style.font_style.contains(font) {
            out = out.add_modifier(modifier);
        }
    }
    out
}

/// Where a requested key stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// Sent to the worker and not finished; the newest generation that asked for it.
    Queued { generation: u64 },
    /// Highlighted and sent back.
    Done,
}

/// Request bookkeeping shared by [`Highlighter`] and its worker, under one lock so a request
/// and the worker's decision about the same key never interleave.
#[derive(Debug, Default)]
struct Pending {
    entries: HashMap<u64, Entry>,
}

impl Pending {
    /// Records a request; true when a new job must be sent to the worker.
    fn request(&mut self, key: u64, generation: u64) -> bool {
        match self.entries.get_mut(&key) {
            Some(Entry::Done) => false,
            Some(Entry::Queued { generation: queued }) => {
                *queued = (*queued).max(generation);
                false
            }
            None => {
                self.entries.insert(key, Entry::Queued { generation });
                true
            }
        }
    }

    /// The worker asks before working on `key`: false for duplicates and for stale requests,
    /// which are forgotten so a later request queues them again.
    fn start(&mut self, key: u64, current_generation: u64) -> bool {
        match self.entries.get(&key) {
            Some(Entry::Queued { generation }) if *generation >= current_generation => true,
            Some(Entry::Queued { .. }) => {
                self.entries.remove(&key);
                false
            }
            Some(Entry::Done) | None => false,
        }
    }

    fn finish(&mut self, key: u64) {
        self.entries.insert(key, Entry::Done);
    }

    fn forget(&mut self, key: u64) {
        self.entries.remove(&key);
    }
}

#[derive(Debug, Default)]
struct Shared {
    generation: AtomicU64,
    pending: Mutex<Pending>,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        // The bookkeeping stays consistent even if a holder panicked: every update is one step.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Handle to the background highlighting thread. Dropping it stops the thread.
///
/// Each request is tagged with the current generation. "Latest wins": the worker takes the
/// newest queued request first, and skips requests whose generation is older than the one
/// set by [`Highlighter::set_generation`] when it reaches them (bump it when the visible
/// answer changes, then request the blocks that matter now).
#[derive(Debug)]
pub struct Highlighter {
    jobs: mpsc::Sender<CodeBlock>,
    shared: Arc<Shared>,
}

impl Highlighter {
    /// Starts the worker thread; finished blocks arrive on the returned receiver.
    /// If the thread cannot be started, requests are silently dropped and blocks stay plain.
    pub fn spawn() -> (Highlighter, UnboundedReceiver<Highlighted>) {
        let (jobs, job_rx) = mpsc::channel();
        let (results, result_rx) = unbounded_channel();
        let shared = Arc::new(Shared::default());
        let worker_shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("glassbox-highlight".into())
            .spawn(move || run_worker(&job_rx, &worker_shared, &results));
        if let Err(error) = spawned {
            tracing::warn!(%error, "could not start the highlighting thread; code stays plain");
        }
        (Highlighter { jobs, shared }, result_rx)
    }

    /// Asks for `block` to be highlighted. Ignored if the block is still streaming
    /// (`!block.complete`), or if its key is already queued, being worked on or done
    /// (until [`Highlighter::forget`]); a queued key is re-tagged with the current generation.
    pub fn request(&self, block: &CodeBlock) {
        if !block.complete {
            return;
        }
        let generation = self.shared.generation.load(Ordering::Acquire);
        let mut pending = self.shared.pending();
        if pending.request(block.key, generation) && self.jobs.send(block.clone()).is_err() {
            pending.forget(block.key);
        }
    }

    /// Starts generation `generation`: requests tagged with an older one that the worker has
    /// not started are dropped (and may be requested again).
    pub fn set_generation(&self, generation: u64) {
        self.shared.generation.store(generation, Ordering::Release);
    }

    /// Forgets `key` so a later request highlights it again (after the cache evicted it).
    pub fn forget(&self, key: u64) {
        self.shared.pending().forget(key);
    }
}

/// The worker: drains the job channel, newest job first, until the [`Highlighter`] is dropped.
fn run_worker(
    jobs: &mpsc::Receiver<CodeBlock>,
    shared: &Shared,
    results: &UnboundedSender<Highlighted>,
) {
    // Load the syntaxes and theme now rather than on the first request.
    LazyLock::force(&SYNTAXES);
    LazyLock::force(&THEME);
    let mut queue: Vec<CodeBlock> = Vec::new();
    loop {
        if queue.is_empty() {
            match jobs.recv() {
                Ok(block) => queue.push(block),
                Err(mpsc::RecvError) => return,
            }
        }
        loop {
            match jobs.try_recv() {
                Ok(block) => queue.push(block),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        }
        let Some(block) = queue.pop() else {
            continue;
        };
        let generation = shared.generation.load(Ordering::Acquire);
        if !shared.pending().start(block.key, generation) {
            continue;
        }
        let lines = highlight_now(&block);
        shared.pending().finish(block.key);
        if results
            .send(Highlighted {
                key: block.key,
                lines,
            })
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::markdown::HighlightCache;
    use std::collections::HashSet;
    use std::time::Duration;

    const RUST: &str = "use std::fmt;\n\n/// Doc.\npub fn main() -> Result<(), String> {\n\tlet x: u32 = 42;\n    println!(\"{x}\");\n    Ok(())\n}\n";

    async fn next(rx: &mut UnboundedReceiver<Highlighted>) -> Highlighted {
        tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("highlighter answered")
            .expect("highlighter alive")
    }

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn rust_code_gets_several_colours_and_keeps_its_text() {
        let lines = highlight_now(&CodeBlock::new("rust", RUST));
        let expected: Vec<String> = RUST.lines().map(|l| l.replace('\t', "    ")).collect();
        assert_eq!(lines.iter().map(text).collect::<Vec<_>>(), expected);
        let colours: HashSet<Color> = lines
            .iter()
            .flat_map(|l| &l.spans)
            .filter_map(|s| s.style.fg)
            .collect();
        assert!(colours.len() >= 4, "{colours:?}");
        assert!(
            lines
                .iter()
                .flat_map(|l| &l.spans)
                .all(|s| s.style.bg.is_none() && !s.content.contains('\n'))
        );
    }

    #[test]
    fn unknown_language_is_plain() {
        let code = "just\n\twords\n";
        for lang in ["", "klingon", "text"] {
            let lines = highlight_now(&CodeBlock::new(lang, code));
            assert_eq!(
                lines.iter().map(text).collect::<Vec<_>>(),
                ["just", "    words"]
            );
            assert!(
                lines
                    .iter()
                    .flat_map(|l| &l.spans)
                    .all(|s| s.style == Style::new())
            );
        }
    }

    #[test]
    fn common_language_tokens_resolve() {
        for lang in [
            "rust",
            "rs",
            "py",
            "python",
            "js",
            "javascript",
            "ts",
            "typescript",
            "sh",
            "bash",
            "shell",
            "json",
            "yaml",
            "yml",
            "c",
            "cpp",
            "c++",
            "go",
            "java",
            "html",
            "css",
            "sql",
            "toml",
            "diff",
            "Rust",
            " rust ",
        ] {
            assert!(syntax_for(lang).is_some(), "{lang}");
        }
        assert!(syntax_for("nonsense-lang").is_none());
    }

    #[test]
    fn cache_evicts_oldest_and_reports_it() {
        let mut cache = HighlightCache::new(2);
        assert!(cache.is_empty());
        assert_eq!(cache.insert(1, vec![Line::from("one")]), None);
        assert_eq!(cache.insert(2, vec![Line::from("two")]), None);
        assert_eq!(cache.insert(2, vec![Line::from("two again")]), None);
        assert_eq!(cache.insert(3, vec![Line::from("three")]), Some(1));
        assert_eq!(cache.len(), 2);
        assert!(cache.get(1).is_none() && !cache.contains(1));
        assert_eq!(cache.get(2).map(|l| text(&l[0])), Some("two again".into()));
        assert_eq!(cache.insert(4, Vec::new()), Some(2));
        assert!(cache.contains(3) && cache.contains(4));
    }

    #[test]
    fn pending_dedupes_and_drops_stale_requests() {
        let mut pending = Pending::default();
        assert!(pending.request(7, 0));
        assert!(!pending.request(7, 0), "queued key is not sent twice");
        // A newer request for a queued key keeps it alive across a generation bump.
        assert!(!pending.request(7, 1));
        assert!(pending.start(7, 1));
        pending.finish(7);
        assert!(!pending.request(7, 1), "done key is not sent again");
        assert!(!pending.start(7, 1), "a duplicate job is skipped");

        assert!(pending.request(8, 0));
        assert!(!pending.start(8, 1), "stale job is dropped");
        assert!(
            pending.request(8, 1),
            "a dropped key can be requested again"
        );

        pending.forget(7);
        assert!(
            pending.request(7, 1),
            "a forgotten key can be requested again"
        );
    }

    #[tokio::test]
    async fn worker_returns_highlighted_lines() {
        let (highlighter, mut rx) = Highlighter::spawn();
        let block = CodeBlock::new("py", "def f(x):\n    return x + 1\n");
        highlighter.request(&block);
        let done = next(&mut rx).await;
        assert_eq!(done.key, block.key);
        assert_eq!(done.lines.len(), 2);
        assert_eq!(done.lines, highlight_now(&block));
    }

    #[tokio::test]
    async fn same_block_twice_gives_one_result() {
        let (highlighter, mut rx) = Highlighter::spawn();
        let block = CodeBlock::new("rust", RUST);
        highlighter.request(&block);
        highlighter.request(&block);
        assert_eq!(next(&mut rx).await.key, block.key);
        highlighter.request(&block);
        let other = CodeBlock::new("rust", "fn other() {}\n");
        highlighter.request(&other);
        assert_eq!(
            next(&mut rx).await.key,
            other.key,
            "no second result for the first block"
        );

        highlighter.forget(block.key);
        highlighter.request(&block);
        assert_eq!(next(&mut rx).await.key, block.key);
    }

    #[tokio::test]
    async fn streaming_blocks_are_not_highlighted() {
        let (highlighter, mut rx) = Highlighter::spawn();
        let mut partial = CodeBlock::new("rust", "fn half(");
        partial.complete = false;
        highlighter.request(&partial);
        assert!(
            !highlighter
                .shared
                .pending()
                .entries
                .contains_key(&partial.key)
        );
        let done = CodeBlock::new("rust", "fn half() {}\n");
        highlighter.request(&done);
        assert_eq!(next(&mut rx).await.key, done.key);
    }

    #[tokio::test]
    async fn requests_survive_a_generation_bump() {
        let (highlighter, mut rx) = Highlighter::spawn();
        let block = CodeBlock::new("json", "{\"a\": [1, 2]}\n");
        highlighter.request(&block);
        highlighter.set_generation(1);
        highlighter.request(&block);
        assert_eq!(next(&mut rx).await.key, block.key);
    }
}

//! The cache of rendered answers between frames.

use std::cell::RefCell;
use std::collections::VecDeque;

use std::hash::{Hash, Hasher};

use super::{HighlightCache, MarkdownStyles, Rendered, render};

/// Answers rendered in earlier frames, so that a long answer is parsed once per revision
/// rather than once per frame: keyed by the text, the styles and the highlight cache's
/// generation (a newly highlighted block renders again), with each line's wrapped height at
/// the last width, so a frame wraps and draws only the rows on screen.
#[derive(Debug, Default)]
pub struct MarkdownCache {
    entries: RefCell<VecDeque<CachedAnswer>>,
}

#[derive(Debug)]
struct CachedAnswer {
    key: u64,
    rendered: Rendered,
    /// The width `heights` are for.
    width: u16,
    /// Rows each line takes when wrapped at `width`.
    heights: Vec<usize>,
}

/// How many answers the cache keeps (the Think and Replay answers, a few back).
const CACHED_ANSWERS: usize = 4;

impl MarkdownCache {
    /// Draws markdown `text` into `area`, wrapped, scrolled so the last row sits `up` rows
    /// below the bottom edge (0 follows the end, as a stream does; clamped at the top).
    /// Draws exactly what a whole-text `Paragraph` scrolled the same way would.
    pub fn draw(
        &self,
        f: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        text: &str,
        styles: &MarkdownStyles,
        highlights: &HighlightCache,
        up: u16,
    ) {
        use ratatui::widgets::{Paragraph, Wrap};
        let key = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            styles.hash(&mut h);
            highlights.generation().hash(&mut h);
            h.finish()
        };
        let mut entries = self.entries.borrow_mut();
        let at = match entries.iter().position(|e| e.key == key) {
            Some(at) => at,
            None => {
                if entries.len() >= CACHED_ANSWERS {
                    entries.pop_front();
                }
                entries.push_back(CachedAnswer {
                    key,
                    rendered: render(text, styles, highlights),
                    width: 0,
                    heights: Vec::new(),
                });
                entries.len() - 1
            }
        };
        let Some(entry) = entries.get_mut(at) else {
            return;
        };
        let wrap = Wrap { trim: false };
        if entry.width != area.width || entry.heights.len() != entry.rendered.lines.len() {
            entry.width = area.width;
            entry.heights = entry
                .rendered
                .lines
                .iter()
                .map(|l| Paragraph::new(l.clone()).wrap(wrap).line_count(area.width))
                .collect();
        }
        let total: usize = entry.heights.iter().sum();
        let height = usize::from(area.height);
        let up = usize::from(up).min(total.saturating_sub(height));
        let top = total.saturating_sub(height).saturating_sub(up);
        // The first line with a row on screen, and how many of its rows are above.
        let mut before = 0;
        let mut first = entry.heights.len();
        for (i, h) in entry.heights.iter().enumerate() {
            if before + h > top {
                first = i;
                break;
            }
            before += h;
        }
        let skip = top - before;
        let mut rows = 0;
        let mut lines = Vec::new();
        for (line, h) in entry.rendered.lines[first..]
            .iter()
            .zip(&entry.heights[first..])
        {
            if rows >= skip + height {
                break;
            }
            lines.push(line.clone());
            rows += h;
        }
        let skip = u16::try_from(skip).unwrap_or(u16::MAX);
        f.render_widget(Paragraph::new(lines).wrap(wrap).scroll((skip, 0)), area);
    }
}

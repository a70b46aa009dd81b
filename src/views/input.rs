//! The multi-line question box: a text buffer with a cursor, and a history of sent questions.

/// Editable text with a cursor (a byte offset on a char boundary).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputBox {
    text: String,
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh entry.
    history_pos: Option<usize>,
    /// The fresh entry kept aside while browsing history.
    draft: String,
}

impl InputBox {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    pub fn set_text(&mut self, text: impl Into<String>) {
        self.text = text.into();
        self.cursor = self.text.len();
    }

    pub fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn insert_str(&mut self, s: &str) {
        // Normalise pasted line endings.
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    pub fn newline(&mut self) {
        self.insert_char('\n');
    }

    fn prev_boundary(&self) -> Option<usize> {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
    }

    fn next_boundary(&self) -> Option<usize> {
        self.text[self.cursor..]
            .chars()
            .next()
            .map(|c| self.cursor + c.len_utf8())
    }

    pub fn backspace(&mut self) {
        if let Some(p) = self.prev_boundary() {
            self.text.replace_range(p..self.cursor, "");
            self.cursor = p;
        }
    }

    pub fn delete(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.text.replace_range(self.cursor..n, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(p) = self.prev_boundary() {
            self.cursor = p;
        }
    }

    pub fn right(&mut self) {
        if let Some(n) = self.next_boundary() {
            self.cursor = n;
        }
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map(|i| self.cursor + i)
            .unwrap_or(self.text.len())
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Deletes from the cursor back to the start of the line (Ctrl-U).
    pub fn kill_to_line_start(&mut self) {
        let start = self.line_start();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes the word before the cursor (Ctrl-W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(|c: char| c.is_whitespace());
        let start = trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(0);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves to the same column on the previous line; false when already on the first line.
    pub fn up(&mut self) -> bool {
        let start = self.line_start();
        if start == 0 {
            return false;
        }
        let col = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        self.cursor = advance(&self.text, prev_start, col, start - 1);
        true
    }

    /// Moves to the same column on the next line; false when already on the last line.
    pub fn down(&mut self) -> bool {
        let end = self.line_end();
        if end == self.text.len() {
            return false;
        }
        let col = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map(|i| next_start + i)
            .unwrap_or(self.text.len());
        self.cursor = advance(&self.text, next_start, col, next_end);
        true
    }

    /// Takes the text for sending, records it in the history and clears the box.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.history_pos = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Shows the previous history entry (the current draft is kept aside).
    pub fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let pos = match self.history_pos {
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(p) => p - 1,
        };
        self.history_pos = Some(pos);
        self.set_text(self.history[pos].clone());
    }

    /// Shows the next history entry, or the draft after the newest.
    pub fn history_next(&mut self) {
        match self.history_pos {
            None => {}
            Some(p) if p + 1 < self.history.len() => {
                self.history_pos = Some(p + 1);
                self.set_text(self.history[p + 1].clone());
            }
            Some(_) => {
                self.history_pos = None;
                let draft = std::mem::take(&mut self.draft);
                self.set_text(draft);
            }
        }
    }

    /// (line, column in chars) of the cursor, for placing the terminal cursor.
    pub fn cursor_position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let col = before
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0);
        (line, col)
    }
}

/// The byte offset `cols` characters after `start`, but not past `limit`.
fn advance(text: &str, start: usize, cols: usize, limit: usize) -> usize {
    text[start..limit]
        .char_indices()
        .nth(cols)
        .map(|(i, _)| start + i)
        .unwrap_or(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_multiline_text_with_unicode() {
        let mut b = InputBox::default();
        for c in "héllo".chars() {
            b.insert_char(c);
        }
        b.newline();
        b.insert_str("wörld");
        assert_eq!(b.text(), "héllo\nwörld");
        assert_eq!(b.cursor_position(), (1, 5));
        assert!(b.up());
        assert_eq!(b.cursor_position(), (0, 5));
        b.backspace();
        assert_eq!(b.text(), "héll\nwörld");
        b.home();
        b.right();
        b.delete();
        assert_eq!(b.text(), "hll\nwörld");
        assert!(b.down());
        assert!(!b.down());
        b.end();
        b.delete_word();
        assert_eq!(b.text(), "hll\n");
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut b = InputBox::default();
        b.set_text("one");
        assert_eq!(b.take(), "one");
        b.set_text("two");
        b.take();
        b.set_text("draft");
        b.history_prev();
        assert_eq!(b.text(), "two");
        b.history_prev();
        assert_eq!(b.text(), "one");
        b.history_prev();
        assert_eq!(b.text(), "one");
        b.history_next();
        b.history_next();
        assert_eq!(b.text(), "draft");
        assert_eq!(b.history(), ["one", "two"]);
    }

    #[test]
    fn paste_normalises_line_endings() {
        let mut b = InputBox::default();
        b.insert_str("a\r\nb\rc");
        assert_eq!(b.text(), "a\nb\nc");
    }
}

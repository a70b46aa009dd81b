//! The buffer behind every text field: the Think question box (several lines, with a history
//! of sent questions), the forms' text field, the rename popup, the session filter and the
//! search popup's query.
//!
//! A `ratatui_textarea::TextArea` does the editing: inserting, deleting, cursor moves, word
//! and line deletion, undo and redo all run on it. Its widget is not used for drawing: the
//! views draw the text themselves from [`InputBox::text`] (or [`InputBox::lines`]) and put
//! the terminal cursor at [`InputBox::cursor_position`], as they did before the text area
//! came in. The widget keeps its scroll offset from one frame to the next, scrolls sideways
//! to follow the cursor, paints the cursor as a reversed cell and draws its own placeholder,
//! so the boxes would not look as they do (and as the snapshots record) if it drew them.
//!
//! Which key does what is decided in `app::input`; this type offers the edits by name, plus
//! [`InputBox::input`] for the text area's own bindings.

use std::fmt;

use ratatui_textarea::{CursorMove, Input, Key, TextArea};

/// Editable text with a cursor, and the history of texts taken out of it.
#[derive(Clone, Default)]
pub struct InputBox {
    area: TextArea<'static>,
    /// `area`'s lines joined with '\n', refreshed after every edit so `text` can lend it.
    text: String,
    history: Vec<String>,
    /// Position while browsing history; `None` when editing a fresh entry.
    history_pos: Option<usize>,
    /// The fresh entry kept aside while browsing history.
    draft: String,
}

impl PartialEq for InputBox {
    /// Equal when the text, the cursor and the history agree (the undo stack is not
    /// compared).
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
            && self.area.cursor() == other.area.cursor()
            && self.history == other.history
            && self.history_pos == other.history_pos
            && self.draft == other.draft
    }
}

impl Eq for InputBox {}

impl fmt::Debug for InputBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputBox")
            .field("text", &self.text)
            .field("cursor", &self.cursor_position())
            .field("history", &self.history)
            .field("history_pos", &self.history_pos)
            .field("draft", &self.draft)
            .finish()
    }
}

impl InputBox {
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text's lines (an empty text has one empty line).
    pub fn lines(&self) -> &[String] {
        self.area.lines()
    }

    /// The cursor as a byte offset into [`text`](Self::text).
    pub fn cursor(&self) -> usize {
        let (row, col) = self.cursor_position();
        let lines = self.area.lines();
        let above: usize = lines[..row].iter().map(|l| l.len() + 1).sum();
        above + byte_of_col(&lines[row], col)
    }

    /// Whether there is nothing but whitespace.
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Replaces the text (the undo stack starts afresh) and puts the cursor at its end.
    pub fn set_text(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.area = TextArea::new(text.split('\n').map(str::to_string).collect());
        self.area.move_cursor(CursorMove::Bottom);
        self.area.move_cursor(CursorMove::End);
        self.text = text;
    }

    pub fn insert_char(&mut self, c: char) {
        self.area.insert_char(c);
        self.sync();
    }

    /// Inserts pasted text at the cursor, its line endings made '\n'.
    pub fn insert_str(&mut self, s: &str) {
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.area.insert_str(s);
        self.sync();
    }

    pub fn newline(&mut self) {
        self.area.insert_newline();
        self.sync();
    }

    /// Deletes the character before the cursor (joining the line to the one above at its
    /// start).
    pub fn backspace(&mut self) {
        self.area.delete_char();
        self.sync();
    }

    /// Deletes the character under the cursor (joining the next line at a line's end).
    pub fn delete(&mut self) {
        self.area.delete_next_char();
        self.sync();
    }

    pub fn left(&mut self) {
        self.area.move_cursor(CursorMove::Back);
    }

    pub fn right(&mut self) {
        self.area.move_cursor(CursorMove::Forward);
    }

    pub fn home(&mut self) {
        self.area.move_cursor(CursorMove::Head);
    }

    pub fn end(&mut self) {
        self.area.move_cursor(CursorMove::End);
    }

    /// Deletes from the cursor back to the start of the line (Ctrl-U); nothing at the start.
    pub fn kill_to_line_start(&mut self) {
        if self.area.cursor().1 > 0 {
            self.area.delete_line_by_head();
            self.sync();
        }
    }

    /// Deletes the word before the cursor (Ctrl-W): any whitespace (line breaks too) right
    /// before it, then back to the previous whitespace.
    pub fn delete_word(&mut self) {
        let end = self.cursor();
        let before = &self.text[..end];
        let start = before
            .trim_end_matches(char::is_whitespace)
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let count = self.text[start..end].chars().count();
        if count == 0 {
            return;
        }
        let (row, col) = position_of(&self.text, start);
        if self.jump(row, col) {
            // One edit, so one undo brings the word back.
            self.area.delete_str(count);
        } else {
            for _ in 0..count {
                self.area.delete_char();
            }
        }
        self.sync();
    }

    /// Moves to the same column (in characters) on the previous line, or to its end when it
    /// is shorter; false when already on the first line.
    pub fn up(&mut self) -> bool {
        let (row, col) = self.cursor_position();
        if row == 0 {
            return false;
        }
        if !self.jump(row - 1, col) {
            self.area.move_cursor(CursorMove::Up);
        }
        true
    }

    /// Moves to the same column on the next line, or to its end; false when already on the
    /// last line.
    pub fn down(&mut self) -> bool {
        let (row, col) = self.cursor_position();
        if row + 1 >= self.area.lines().len() {
            return false;
        }
        if !self.jump(row + 1, col) {
            self.area.move_cursor(CursorMove::Down);
        }
        true
    }

    /// Undoes the last edit; false when there is none.
    pub fn undo(&mut self) -> bool {
        let changed = self.area.undo();
        self.sync();
        changed
    }

    /// Redoes the last undone edit; false when there is none.
    pub fn redo(&mut self) -> bool {
        let changed = self.area.redo();
        self.sync();
        changed
    }

    /// Applies a key through the text area's own bindings (Ctrl-K deletes to the line's end,
    /// Ctrl-D the next character, Ctrl-Y puts back the last deletion, Ctrl-R redoes, …). Shift
    /// is dropped, since a selection would not be drawn; keys that would type a line break or
    /// a tab, and the keys that scroll the text area's own viewport (which is never drawn, so
    /// the cursor would jump), do nothing. Returns whether the text changed.
    pub fn input(&mut self, input: Input) -> bool {
        let typed_break = match input.key {
            Key::Enter | Key::Tab | Key::Char('\n' | '\r') => true,
            Key::Char('m') => input.ctrl,
            _ => false,
        };
        let scrolls = match input.key {
            Key::PageUp | Key::PageDown | Key::MouseScrollUp | Key::MouseScrollDown => true,
            Key::Char('v') => input.ctrl || input.alt,
            _ => false,
        };
        if typed_break || scrolls {
            return false;
        }
        let changed = self.area.input(Input {
            shift: false,
            ..input
        });
        self.sync();
        changed
    }

    /// Takes the text for sending, records it in the history and clears the box.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.area = TextArea::default();
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
        let c = self.area.cursor();
        (c.0, c.1)
    }

    /// Puts the cursor at (`row`, `col`), the column clamped to the line's end; false (and
    /// no move) when the position is past what the text area's jump can name.
    fn jump(&mut self, row: usize, col: usize) -> bool {
        let col = col.min(self.area.lines().get(row).map_or(0, |l| l.chars().count()));
        match (u16::try_from(row), u16::try_from(col)) {
            (Ok(r), Ok(c)) => {
                self.area.move_cursor(CursorMove::Jump(r, c));
                true
            }
            _ => false,
        }
    }

    fn sync(&mut self) {
        self.text.clear();
        for (i, line) in self.area.lines().iter().enumerate() {
            if i > 0 {
                self.text.push('\n');
            }
            self.text.push_str(line);
        }
    }
}

/// The byte offset of character `col` in `line` (its length past the end).
fn byte_of_col(line: &str, col: usize) -> usize {
    line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
}

/// (line, column in chars) of byte offset `at` in `text`.
fn position_of(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let row = before.matches('\n').count();
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (row, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(key: Key, ctrl: bool) -> Input {
        Input {
            key,
            ctrl,
            alt: false,
            shift: false,
        }
    }

    #[test]
    fn edits_multiline_text_with_unicode() {
        let mut b = InputBox::default();
        for c in "héllo".chars() {
            b.insert_char(c);
        }
        b.newline();
        b.insert_str("wörld");
        assert_eq!(b.text(), "héllo\nwörld");
        assert_eq!(b.lines(), ["héllo", "wörld"]);
        assert_eq!(b.cursor_position(), (1, 5));
        assert_eq!(b.cursor(), b.text().len());
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
    fn arrows_cross_line_ends_and_keep_the_column_in_characters() {
        let mut b = InputBox::default();
        b.set_text("abcdef\nxy\nébcdefg");
        // Up from column 7 stops at the end of the short line; up again keeps that column.
        assert!(b.up());
        assert_eq!(b.cursor_position(), (1, 2));
        assert!(b.up());
        assert_eq!(b.cursor_position(), (0, 2));
        assert!(!b.up());
        b.end();
        b.right();
        assert_eq!(b.cursor_position(), (1, 0));
        b.left();
        assert_eq!(b.cursor_position(), (0, 6));
        b.delete();
        assert_eq!(b.text(), "abcdefxy\nébcdefg");
        b.down();
        assert_eq!(b.cursor_position(), (1, 6));
        assert_eq!(b.cursor(), "abcdefxy\nébcdef".len());
    }

    #[test]
    fn ctrl_u_kills_to_the_line_start_but_not_across_lines() {
        let mut b = InputBox::default();
        b.set_text("first\nsecond line");
        b.left();
        b.left();
        b.kill_to_line_start();
        assert_eq!(b.text(), "first\nne");
        assert_eq!(b.cursor_position(), (1, 0));
        b.kill_to_line_start();
        assert_eq!(b.text(), "first\nne");
    }

    #[test]
    fn ctrl_w_deletes_back_to_whitespace_across_line_breaks_and_undoes_in_one_step() {
        let mut b = InputBox::default();
        b.set_text("see foo.bar-baz  ");
        b.delete_word();
        assert_eq!(b.text(), "see ");
        b.set_text("one two\n\n");
        b.delete_word();
        assert_eq!(b.text(), "one ");
        assert!(b.undo());
        assert_eq!(b.text(), "one two\n\n");
        assert!(b.redo());
        assert_eq!(b.text(), "one ");
        b.home();
        b.delete_word();
        assert_eq!(b.text(), "one ");
    }

    #[test]
    fn text_area_bindings_edit_but_never_break_lines_select_or_scroll() {
        let mut b = InputBox::default();
        b.set_text("hello world");
        b.home();
        assert!(b.input(key(Key::Char('k'), true)));
        assert_eq!(b.text(), "");
        assert!(b.input(key(Key::Char('y'), true)));
        assert_eq!(b.text(), "hello world");
        for k in [
            key(Key::Enter, false),
            key(Key::Tab, false),
            key(Key::Char('m'), true),
            key(Key::PageUp, false),
            key(Key::Char('v'), true),
        ] {
            assert!(!b.input(k));
        }
        assert_eq!(b.text(), "hello world");
        assert_eq!(b.cursor_position(), (0, 11));
        // Shift-Home moves without selecting, so the next key types instead of replacing.
        b.input(Input {
            shift: true,
            ..key(Key::Home, false)
        });
        b.insert_char('>');
        assert_eq!(b.text(), ">hello world");
    }

    #[test]
    fn set_text_keeps_every_byte_and_puts_the_cursor_at_the_end() {
        let mut b = InputBox::default();
        b.set_text("a\r\nb\n");
        assert_eq!(b.text(), "a\r\nb\n");
        assert_eq!(b.cursor_position(), (2, 0));
        assert_eq!(b.cursor(), b.text().len());
        b.insert_char('c');
        assert_eq!(b.text(), "a\r\nb\nc");
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut b = InputBox::default();
        b.set_text("one");
        assert_eq!(b.take(), "one");
        assert_eq!(b.text(), "");
        assert_eq!(b.cursor_position(), (0, 0));
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
        assert_eq!(b.cursor_position(), (2, 1));
    }

    #[test]
    fn equality_is_text_cursor_and_history() {
        let mut a = InputBox::default();
        let mut b = InputBox::default();
        a.set_text("same");
        for c in "same".chars() {
            b.insert_char(c);
        }
        assert_eq!(a, b);
        b.left();
        assert_ne!(a, b);
    }
}

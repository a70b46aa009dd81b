//! Keys for the text fields. The buffer itself is a view model (`views::input::InputBox`, a
//! `ratatui_textarea::TextArea` inside); app code reaches it here as before, and [`edit`]
//! decides what a typed key does to it (`update::edit` routes every text field's keys here).
//!
//! The keys the fields always had keep their meaning: printable characters (with Alt too) are
//! typed, Ctrl-U deletes back to the line's start, Ctrl-W the word before the cursor, Ctrl-A /
//! Home and Ctrl-E / End go to the line's start and end, Backspace, Delete and the arrows act
//! on one character whatever the modifiers. Ctrl-Z undoes, and every other key gets the text
//! area's own binding: Ctrl-K deletes to the line's end, Ctrl-D the next character, Ctrl-Y
//! puts back the last deletion, Ctrl-R redoes, Ctrl-F / Ctrl-B move by a character.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::Input;

pub use crate::views::input::InputBox;

/// Applies one typed key to `input`.
pub fn edit(input: &mut InputBox, k: KeyEvent) {
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    match k.code {
        KeyCode::Char('u') if ctrl => input.kill_to_line_start(),
        KeyCode::Char('w') if ctrl => input.delete_word(),
        KeyCode::Char('a') if ctrl => input.home(),
        KeyCode::Char('e') if ctrl => input.end(),
        KeyCode::Char('z') if ctrl => {
            input.undo();
        }
        KeyCode::Char(c) if !ctrl => input.insert_char(c),
        KeyCode::Backspace => input.backspace(),
        KeyCode::Delete => input.delete(),
        KeyCode::Left => input.left(),
        KeyCode::Right => input.right(),
        KeyCode::Home => input.home(),
        KeyCode::End => input.end(),
        _ => {
            input.input(Input::from(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(input: &mut InputBox, code: KeyCode, modifiers: KeyModifiers) {
        edit(input, KeyEvent::new(code, modifiers));
    }

    fn ctrl(input: &mut InputBox, c: char) {
        press(input, KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    fn typed(text: &str) -> InputBox {
        let mut input = InputBox::default();
        for c in text.chars() {
            press(&mut input, KeyCode::Char(c), KeyModifiers::NONE);
        }
        input
    }

    #[test]
    fn readline_keys_keep_their_meaning() {
        let mut b = typed("alpha beta");
        ctrl(&mut b, 'a');
        assert_eq!(b.cursor_position(), (0, 0));
        ctrl(&mut b, 'e');
        ctrl(&mut b, 'w');
        assert_eq!(b.text(), "alpha ");
        press(&mut b, KeyCode::Left, KeyModifiers::NONE);
        ctrl(&mut b, 'u');
        assert_eq!(b.text(), " ");
        // Alt-typed characters are typed, and modified arrows move one character.
        press(&mut b, KeyCode::Char('x'), KeyModifiers::ALT);
        press(&mut b, KeyCode::Right, KeyModifiers::CONTROL);
        press(&mut b, KeyCode::Char('Y'), KeyModifiers::SHIFT);
        assert_eq!(b.text(), "x Y");
        press(&mut b, KeyCode::Home, KeyModifiers::SHIFT);
        press(&mut b, KeyCode::Delete, KeyModifiers::ALT);
        press(&mut b, KeyCode::End, KeyModifiers::NONE);
        press(&mut b, KeyCode::Backspace, KeyModifiers::ALT);
        assert_eq!(b.text(), " ");
    }

    #[test]
    fn undo_redo_and_the_text_area_bindings() {
        let mut b = typed("one two");
        ctrl(&mut b, 'w');
        assert_eq!(b.text(), "one ");
        ctrl(&mut b, 'z');
        assert_eq!(b.text(), "one two");
        ctrl(&mut b, 'r');
        assert_eq!(b.text(), "one ");
        ctrl(&mut b, 'b');
        ctrl(&mut b, 'b');
        ctrl(&mut b, 'k');
        assert_eq!(b.text(), "on");
        ctrl(&mut b, 'a');
        ctrl(&mut b, 'd');
        assert_eq!(b.text(), "n");
    }

    #[test]
    fn keys_that_typed_nothing_still_leave_a_field_on_one_line() {
        let mut b = typed("query");
        for (code, modifiers) in [
            (KeyCode::Enter, KeyModifiers::NONE),
            (KeyCode::Tab, KeyModifiers::NONE),
            (KeyCode::BackTab, KeyModifiers::SHIFT),
            (KeyCode::Char('m'), KeyModifiers::CONTROL),
            (KeyCode::PageDown, KeyModifiers::NONE),
            (KeyCode::Up, KeyModifiers::NONE),
            (KeyCode::Esc, KeyModifiers::NONE),
        ] {
            press(&mut b, code, modifiers);
        }
        assert_eq!(b.text(), "query");
        assert_eq!(b.cursor_position(), (0, 5));
    }
}

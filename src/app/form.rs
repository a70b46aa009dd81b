//! A small modal form the workspaces share: a list of choices (pick one, or mark several)
//! and/or one line of free text. The workspace that opens a form names what it is for in a
//! [`Purpose`]; when the form is submitted `update` hands the answer back to that workspace.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::input::InputBox;

/// What a form is for, and so which workspace gets the answer (made by
/// [`Cx::purpose`](super::workspaces::Cx::purpose)).
#[derive(Clone, Debug, PartialEq)]
pub struct Purpose {
    pub ws: super::workspaces::WorkspaceId,
    pub tag: super::workspaces::FormTag,
}

/// The open form.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    pub title: String,
    pub purpose: Purpose,
    pub choices: Vec<String>,
    /// Marks, for a form where several choices can be taken.
    pub checked: Vec<bool>,
    pub multi: bool,
    /// Fewest marks a multi-choice form accepts.
    pub min_checked: usize,
    pub cursor: usize,
    /// The text field's label; none for a form without text.
    pub text_label: Option<String>,
    pub text_required: bool,
    /// Most characters the text may have.
    pub text_max: usize,
    pub input: InputBox,
    /// Whether keys go to the text field (else to the choices).
    pub on_text: bool,
    /// Why the last submit was refused.
    pub error: Option<String>,
}

/// What the user submitted.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// The choice taken (single-choice forms).
    pub choice: Option<usize>,
    /// The choices marked (multi-choice forms), in list order.
    pub checked: Vec<usize>,
    /// The text, trimmed.
    pub text: String,
}

/// The result of one key.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Open,
    Cancelled,
    Submitted(Purpose, Answer),
}

impl Form {
    fn base(title: impl Into<String>, purpose: Purpose) -> Self {
        Self {
            title: title.into(),
            purpose,
            choices: Vec::new(),
            checked: Vec::new(),
            multi: false,
            min_checked: 0,
            cursor: 0,
            text_label: None,
            text_required: false,
            text_max: 2_000,
            input: InputBox::default(),
            on_text: false,
            error: None,
        }
    }

    /// Pick one of `choices`.
    pub fn choose(title: impl Into<String>, purpose: Purpose, choices: Vec<String>) -> Self {
        Self {
            choices,
            ..Self::base(title, purpose)
        }
    }

    /// Mark at least `min` of `choices`; `checked` gives the initial marks.
    pub fn pick_many(
        title: impl Into<String>,
        purpose: Purpose,
        choices: Vec<String>,
        checked: Vec<bool>,
        min: usize,
    ) -> Self {
        let mut checked = checked;
        checked.resize(choices.len(), false);
        Self {
            choices,
            checked,
            multi: true,
            min_checked: min,
            ..Self::base(title, purpose)
        }
    }

    /// Only a line of text.
    pub fn text(title: impl Into<String>, purpose: Purpose, label: impl Into<String>) -> Self {
        Self {
            on_text: true,
            ..Self::base(title, purpose).with_text(label, true, 2_000)
        }
    }

    /// Adds a text field below the choices.
    pub fn with_text(mut self, label: impl Into<String>, required: bool, max: usize) -> Self {
        self.text_label = Some(label.into());
        self.text_required = required;
        self.text_max = max;
        if self.choices.is_empty() {
            self.on_text = true;
        }
        self
    }

    /// Starts the text field with `text`.
    pub fn with_initial_text(mut self, text: &str) -> Self {
        self.input.set_text(text);
        self
    }

    fn has_text(&self) -> bool {
        self.text_label.is_some()
    }

    /// Applies one key.
    pub fn key(&mut self, k: KeyEvent) -> Outcome {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => return Outcome::Cancelled,
            KeyCode::Tab | KeyCode::BackTab => {
                if self.has_text() && !self.choices.is_empty() {
                    self.on_text = !self.on_text;
                }
                return Outcome::Open;
            }
            _ => {}
        }
        if self.on_text {
            if k.code == KeyCode::Enter {
                return self.submit();
            }
            if let KeyCode::Char(_) = k.code
                && !ctrl
                && self.input.text().chars().count() >= self.text_max
            {
                self.error = Some(format!("at most {} characters", self.text_max));
                return Outcome::Open;
            }
            super::update::edit(&mut self.input, k, ctrl);
            // A key other than a character can still lengthen the text (Ctrl-Y puts back
            // what was deleted): past the limit, that edit is undone.
            if self.input.text().chars().count() > self.text_max {
                self.input.undo();
                self.error = Some(format!("at most {} characters", self.text_max));
                return Outcome::Open;
            }
            self.error = None;
            return Outcome::Open;
        }
        let n = self.choices.len();
        match k.code {
            KeyCode::Down | KeyCode::Char('j') if n > 0 => self.cursor = (self.cursor + 1) % n,
            KeyCode::Up | KeyCode::Char('k') if n > 0 => self.cursor = (self.cursor + n - 1) % n,
            KeyCode::Char(' ') if self.multi => self.toggle(self.cursor),
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i < n {
                    self.cursor = i;
                    if self.multi {
                        self.toggle(i);
                    } else if self.has_text() {
                        self.on_text = true;
                    } else {
                        return self.submit();
                    }
                }
            }
            KeyCode::Enter => {
                if self.has_text() && !self.multi {
                    self.on_text = true;
                } else {
                    return self.submit();
                }
            }
            _ => {}
        }
        Outcome::Open
    }

    fn toggle(&mut self, i: usize) {
        if let Some(c) = self.checked.get_mut(i) {
            *c = !*c;
        }
        self.error = None;
    }

    /// Checks the answer; refuses (with a reason shown in the form) when incomplete.
    fn submit(&mut self) -> Outcome {
        let text = self.input.text().trim().to_string();
        let checked: Vec<usize> = (0..self.checked.len())
            .filter(|i| self.checked[*i])
            .collect();
        if self.multi && checked.len() < self.min_checked {
            self.error = Some(format!(
                "mark at least {} (space or a number)",
                self.min_checked
            ));
            self.on_text = false;
            return Outcome::Open;
        }
        if self.has_text() && self.text_required && text.is_empty() {
            self.error = Some("the text is required".into());
            self.on_text = true;
            return Outcome::Open;
        }
        let choice = (!self.multi && !self.choices.is_empty()).then_some(self.cursor);
        Outcome::Submitted(
            self.purpose.clone(),
            Answer {
                choice,
                checked,
                text,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn purpose() -> Purpose {
        super::super::workspaces::Cx::<super::super::workspaces::got::Got>::purpose(
            super::super::workspaces::got::FormPurpose::Budget,
        )
    }

    fn press(form: &mut Form, code: KeyCode) -> Outcome {
        form.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn type_in(form: &mut Form, text: &str) {
        for c in text.chars() {
            assert_eq!(press(form, KeyCode::Char(c)), Outcome::Open);
        }
    }

    #[test]
    fn a_digit_picks_then_enter_sends_the_optional_text() {
        let choices = ["verified", "questionable", "disagree"]
            .map(String::from)
            .to_vec();
        let mut form = Form::choose("Checkpoint", purpose(), choices).with_text("why", false, 10);
        // 3 picks "disagree" and moves to the text.
        assert_eq!(press(&mut form, KeyCode::Char('3')), Outcome::Open);
        assert!(form.on_text);
        type_in(&mut form, "too fast");
        let Outcome::Submitted(_, answer) = press(&mut form, KeyCode::Enter) else {
            panic!("not submitted");
        };
        assert_eq!(answer.choice, Some(2));
        assert_eq!(answer.text, "too fast");
    }

    #[test]
    fn required_text_and_too_few_marks_are_refused_with_a_reason() {
        let mut form = Form::text("Challenge", purpose(), "counter-argument");
        assert_eq!(press(&mut form, KeyCode::Enter), Outcome::Open);
        assert_eq!(form.error.as_deref(), Some("the text is required"));

        let styles = ["a", "b", "c"].map(String::from).to_vec();
        let mut form = Form::pick_many("Styles", purpose(), styles, vec![true], 2);
        assert_eq!(press(&mut form, KeyCode::Enter), Outcome::Open);
        assert!(form.error.is_some());
        press(&mut form, KeyCode::Char('3'));
        let Outcome::Submitted(_, answer) = press(&mut form, KeyCode::Enter) else {
            panic!("not submitted");
        };
        assert_eq!(answer.checked, vec![0, 2]);
        assert_eq!(answer.choice, None);
    }

    #[test]
    fn text_stops_at_its_limit_and_esc_cancels() {
        let mut form = Form::text("Budget", purpose(), "tokens").with_text("tokens", true, 3);
        type_in(&mut form, "123");
        assert_eq!(press(&mut form, KeyCode::Char('4')), Outcome::Open);
        assert_eq!(form.input.text(), "123");
        assert!(form.error.is_some());
        assert_eq!(press(&mut form, KeyCode::Esc), Outcome::Cancelled);
    }

    #[test]
    fn putting_back_a_deletion_cannot_pass_the_limit() {
        let ctrl = |form: &mut Form, c: char| {
            form.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
        };
        let mut form = Form::text("Budget", purpose(), "tokens").with_text("tokens", true, 4);
        type_in(&mut form, "12 34");
        assert_eq!(form.input.text(), "12 3");
        ctrl(&mut form, 'w');
        assert_eq!(form.input.text(), "12 ");
        type_in(&mut form, "5");
        // Ctrl-Y would make "12 53": refused, the text as it was.
        assert_eq!(ctrl(&mut form, 'y'), Outcome::Open);
        assert_eq!(form.input.text(), "12 5");
        assert_eq!(form.error.as_deref(), Some("at most 4 characters"));
        // Ctrl-Z undoes the typing; then the deletion fits back in.
        ctrl(&mut form, 'z');
        ctrl(&mut form, 'y');
        assert_eq!(form.input.text(), "12 3");
        assert_eq!(form.error, None);
    }
}

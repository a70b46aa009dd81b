//! What the replayed events add up to: the current turn's question, thinking and answer, and
//! the event list's rows.

use super::{ReplayEvent, ReplayPart};
use crate::store::NodeType;
use crate::views::replay::EventRow;

/// Lines of a tool call or other whole node kept in the answer pane.
const QUOTE_LINES: usize = 12;

/// The text the events so far add up to, for the current turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayShown {
    pub question: String,
    pub thinking: String,
    pub answer: String,
    /// Questions seen so far.
    pub turn: usize,
    /// Inside a recorded stream: 0 nothing yet, 1 thinking, 2 answer.
    section: u8,
}

impl ReplayShown {
    /// Adds one event: a question starts a new turn, stream deltas join the paragraph they
    /// continue, whole nodes and tool calls become paragraphs of their own.
    pub(super) fn apply(&mut self, ev: &ReplayEvent) {
        match &ev.part {
            ReplayPart::Node {
                label,
                text,
                result,
            } => match ev.kind {
                NodeType::Query => {
                    *self = ReplayShown {
                        question: text.clone(),
                        turn: self.turn + 1,
                        ..Default::default()
                    };
                }
                NodeType::Thinking => paragraph(&mut self.thinking, text),
                NodeType::Response => paragraph(&mut self.answer, text),
                _ => {
                    let mut q = format!("**{label}**");
                    if !text.is_empty() {
                        q.push('\n');
                        q.push_str(text);
                    }
                    if let Some(r) = result {
                        q.push_str("\n→ ");
                        q.push_str(r);
                    }
                    paragraph(&mut self.answer, &quote(&q));
                }
            },
            ReplayPart::StreamStart { .. } => self.section = 0,
            ReplayPart::Thinking(t) => {
                if self.section != 1 && !self.thinking.is_empty() {
                    self.thinking.push_str("\n\n");
                }
                self.section = 1;
                self.thinking.push_str(t);
            }
            ReplayPart::Text(t) => {
                if self.section != 2 && !self.answer.is_empty() {
                    self.answer.push_str("\n\n");
                }
                self.section = 2;
                self.answer.push_str(t);
            }
            ReplayPart::ToolUse { name, input } => {
                self.section = 0;
                paragraph(
                    &mut self.answer,
                    &quote(&format!("**tool call: {name}**\n{input}")),
                );
            }
            ReplayPart::Error(e) => {
                self.section = 0;
                paragraph(&mut self.answer, &quote(&format!("**error** {e}")));
            }
            ReplayPart::StreamEnd => self.section = 0,
        }
    }
}

/// Appends `text` to `into` as a paragraph of its own.
fn paragraph(into: &mut String, text: &str) {
    if !into.is_empty() {
        into.push_str("\n\n");
    }
    into.push_str(text);
}

/// `text` as a markdown quote, cut to [`QUOTE_LINES`] lines.
fn quote(text: &str) -> String {
    let mut out = String::new();
    let total = text.lines().count();
    for (i, line) in text.lines().take(QUOTE_LINES).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("> ");
        out.push_str(line);
    }
    if total > QUOTE_LINES {
        out.push_str(&format!("\n> … {} more lines", total - QUOTE_LINES));
    }
    out
}

/// A short name for what an event shows.
pub fn event_label(ev: &ReplayEvent) -> String {
    match &ev.part {
        ReplayPart::Node { label, .. } => label.clone(),
        ReplayPart::StreamStart { provider } => format!("{provider} stream"),
        ReplayPart::Thinking(_) => "thinking".into(),
        ReplayPart::Text(_) => "answer".into(),
        ReplayPart::ToolUse { name, .. } => format!("tool call: {name}"),
        ReplayPart::Error(_) => "error".into(),
        ReplayPart::StreamEnd => "end of stream".into(),
    }
}

/// The text an event adds, if any.
pub fn event_text(ev: &ReplayEvent) -> &str {
    match &ev.part {
        ReplayPart::Node { text, .. }
        | ReplayPart::Thinking(text)
        | ReplayPart::Text(text)
        | ReplayPart::Error(text) => text,
        ReplayPart::ToolUse { input, .. } => input,
        ReplayPart::StreamStart { .. } | ReplayPart::StreamEnd => "",
    }
}

/// The event list's line for `ev`.
pub(super) fn row(ev: &ReplayEvent) -> EventRow {
    EventRow {
        label: event_label(ev),
        excerpt: event_text(ev)
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string(),
        kind: ev.kind,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn event(kind: NodeType, part: ReplayPart) -> ReplayEvent {
        ReplayEvent {
            gap: Duration::ZERO,
            node: None,
            kind,
            at: chrono::Utc::now(),
            part,
        }
    }

    fn node(kind: NodeType, label: &str, text: &str) -> ReplayEvent {
        event(
            kind,
            ReplayPart::Node {
                label: label.into(),
                text: text.into(),
                result: None,
            },
        )
    }

    #[test]
    fn stream_deltas_join_and_a_question_starts_a_turn() {
        let mut s = ReplayShown::default();
        let events = [
            node(NodeType::Query, "user", "Why?"),
            event(
                NodeType::Thinking,
                ReplayPart::StreamStart {
                    provider: "anthropic".into(),
                },
            ),
            event(NodeType::Thinking, ReplayPart::Thinking("one ".into())),
            event(NodeType::Thinking, ReplayPart::Thinking("two".into())),
            event(NodeType::Response, ReplayPart::Text("Because".into())),
            event(NodeType::Response, ReplayPart::Text(".".into())),
            event(
                NodeType::Response,
                ReplayPart::ToolUse {
                    name: "Read".into(),
                    input: "{}".into(),
                },
            ),
            event(NodeType::Response, ReplayPart::Text("Done".into())),
            event(NodeType::Response, ReplayPart::StreamEnd),
        ];
        for e in &events {
            s.apply(e);
        }
        assert_eq!(s.turn, 1);
        assert_eq!(s.question, "Why?");
        assert_eq!(s.thinking, "one two");
        assert_eq!(s.answer, "Because.\n\n> **tool call: Read**\n> {}\n\nDone");
        s.apply(&node(NodeType::Query, "user", "And then?"));
        assert_eq!(s.turn, 2);
        assert_eq!(s.question, "And then?");
        assert!(s.thinking.is_empty() && s.answer.is_empty());
    }

    #[test]
    fn long_tool_output_is_quoted_and_cut() {
        let text: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        let mut s = ReplayShown::default();
        s.apply(&node(
            NodeType::ToolCall,
            "tool call: Bash",
            &text.join("\n"),
        ));
        let lines: Vec<&str> = s.answer.lines().collect();
        assert_eq!(lines.len(), QUOTE_LINES + 1);
        assert_eq!(lines[0], "> **tool call: Bash**");
        assert_eq!(lines[QUOTE_LINES - 1], "> line 11");
        assert_eq!(lines[QUOTE_LINES], "> … 9 more lines");
    }

    #[test]
    fn rows_name_the_event_and_its_first_line() {
        let r = row(&node(
            NodeType::Thinking,
            "thinking",
            "\n  \nFirst idea\nmore",
        ));
        assert_eq!(r.label, "thinking");
        assert_eq!(r.excerpt, "First idea");
        assert_eq!(r.kind, NodeType::Thinking);
        let end = row(&event(NodeType::Response, ReplayPart::StreamEnd));
        assert_eq!(
            (end.label.as_str(), end.excerpt.as_str()),
            ("end of stream", "")
        );
    }
}

//! Incremental splitter for inline `<think>…</think>` reasoning inside answer text, for
//! servers without a reasoning parser. Works on decoded strings; tags may be split anywhere.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of content after splitting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Text inside `<think>…</think>`.
    Thinking(String),
    /// Text outside the tags.
    Answer(String),
}

/// Splits streamed content into thinking and answer text.
///
/// Starts in answer mode unless `assume_open` is set (for chat templates that already emitted
/// the opening `<think>`). A `</think>` without an opening tag in answer mode is dropped and
/// counted in [`ThinkSplitter::stray_closes`]; the text before it has already been streamed as
/// answer, which is why `assume_open` exists. Leading whitespace of each segment is trimmed.
/// Only a possible partial tag (at most 8 bytes) is ever held back.
#[derive(Clone, Debug)]
pub struct ThinkSplitter {
    in_think: bool,
    pending: String,
    strip_ws: bool,
    think_has_text: bool,
    stray_closes: u32,
    opened: u32,
}

impl ThinkSplitter {
    /// A splitter at the start of a message; `assume_open` starts inside thinking.
    pub fn new(assume_open: bool) -> Self {
        Self {
            in_think: assume_open,
            pending: String::new(),
            strip_ws: true,
            think_has_text: false,
            stray_closes: 0,
            opened: 0,
        }
    }

    /// True while the text being received is thinking.
    pub fn in_thinking(&self) -> bool {
        self.in_think
    }

    /// How many `</think>` tags arrived with no thinking open (hint that `assume_open` was needed).
    pub fn stray_closes(&self) -> u32 {
        self.stray_closes
    }

    /// How many `<think>` tags opened a thinking section.
    pub fn opened(&self) -> u32 {
        self.opened
    }

    /// Feeds the next decoded piece of content; returns what can be classified already.
    pub fn push(&mut self, text: &str) -> Vec<Segment> {
        let mut out = Vec::new();
        let mut buf = std::mem::take(&mut self.pending);
        buf.push_str(text);
        let mut rest: &str = &buf;
        loop {
            let open = rest.find(OPEN);
            let close = rest.find(CLOSE);
            let (pos, is_open) = match (open, close) {
                (Some(o), Some(c)) if o < c => (o, true),
                (_, Some(c)) => (c, false),
                (Some(o), None) => (o, true),
                (None, None) => break,
            };
            let before = &rest[..pos];
            if is_open {
                if self.in_think {
                    self.emit(before, &mut out);
                    if self.think_has_text {
                        // A literal `<think>` in the middle of thinking stays text.
                        self.emit(OPEN, &mut out);
                    }
                } else {
                    self.emit(before, &mut out);
                    self.in_think = true;
                    self.think_has_text = false;
                    self.strip_ws = true;
                    self.opened += 1;
                }
                rest = &rest[pos + OPEN.len()..];
            } else {
                self.emit(before, &mut out);
                if self.in_think {
                    self.in_think = false;
                } else {
                    self.stray_closes += 1;
                }
                self.strip_ws = true;
                rest = &rest[pos + CLOSE.len()..];
            }
        }
        let keep = partial_tag_suffix(rest);
        let (now, later) = rest.split_at(rest.len() - keep);
        self.emit(now, &mut out);
        self.pending = later.to_string();
        out
    }

    /// Ends the content: a held-back partial tag is released as plain text.
    pub fn finish(&mut self) -> Vec<Segment> {
        let mut out = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        self.emit(&pending, &mut out);
        out
    }

    fn emit(&mut self, text: &str, out: &mut Vec<Segment>) {
        let text = if self.strip_ws {
            text.trim_start()
        } else {
            text
        };
        if text.is_empty() {
            return;
        }
        self.strip_ws = false;
        if self.in_think {
            self.think_has_text = true;
            match out.last_mut() {
                Some(Segment::Thinking(s)) => s.push_str(text),
                _ => out.push(Segment::Thinking(text.to_string())),
            }
        } else {
            match out.last_mut() {
                Some(Segment::Answer(s)) => s.push_str(text),
                _ => out.push(Segment::Answer(text.to_string())),
            }
        }
    }
}

/// Length of the longest suffix of `s` that is a proper prefix of `<think>` or `</think>`.
fn partial_tag_suffix(s: &str) -> usize {
    let start = s.len().saturating_sub(CLOSE.len() - 1);
    let tail = &s.as_bytes()[start..];
    for (i, &b) in tail.iter().enumerate() {
        if b == b'<' {
            let cand = &tail[i..];
            if OPEN.as_bytes().starts_with(cand) || CLOSE.as_bytes().starts_with(cand) {
                return cand.len();
            }
        }
    }
    0
}

/// Appends `seg` to `acc`, merging with the previous segment of the same kind.
pub fn merge_into(acc: &mut Vec<Segment>, seg: Segment) {
    match (acc.last_mut(), seg) {
        (Some(Segment::Thinking(a)), Segment::Thinking(b)) => a.push_str(&b),
        (Some(Segment::Answer(a)), Segment::Answer(b)) => a.push_str(&b),
        (_, seg) => acc.push(seg),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn run(assume_open: bool, pieces: &[&str]) -> Vec<Segment> {
        let mut s = ThinkSplitter::new(assume_open);
        let mut acc = Vec::new();
        for p in pieces {
            for seg in s.push(p) {
                merge_into(&mut acc, seg);
            }
        }
        for seg in s.finish() {
            merge_into(&mut acc, seg);
        }
        acc
    }

    fn t(s: &str) -> Segment {
        Segment::Thinking(s.to_string())
    }
    fn a(s: &str) -> Segment {
        Segment::Answer(s.to_string())
    }

    #[test]
    fn whole_tags() {
        assert_eq!(
            run(false, &["<think>hmm, 2+2</think>\n\n4"]),
            vec![t("hmm, 2+2"), a("4")]
        );
    }

    #[test]
    fn tags_split_across_chunks() {
        assert_eq!(
            run(
                false,
                &[
                    "<th",
                    "ink>\nstep one",
                    " and two</th",
                    "ink",
                    ">The ans",
                    "wer"
                ]
            ),
            vec![t("step one and two"), a("The answer")]
        );
    }

    #[test]
    fn partial_tag_is_held_only_while_ambiguous() {
        let mut s = ThinkSplitter::new(false);
        assert_eq!(s.push("x <thi"), vec![a("x ")]);
        assert_eq!(s.push("s is not a tag"), vec![a("<this is not a tag")]);
        assert_eq!(s.push("a<"), vec![a("a")]);
        assert_eq!(s.finish(), vec![a("<")]);
    }

    #[test]
    fn missing_opening_tag_with_assume_open() {
        assert_eq!(
            run(true, &["Let me think", ".</think>", "Yes."]),
            vec![t("Let me think."), a("Yes.")]
        );
    }

    #[test]
    fn missing_opening_tag_without_assume_open_is_answer_and_counted() {
        let mut s = ThinkSplitter::new(false);
        let mut acc = Vec::new();
        for seg in s
            .push("Let me think.</think>Yes.")
            .into_iter()
            .chain(s.finish())
        {
            merge_into(&mut acc, seg);
        }
        assert_eq!(acc, vec![a("Let me think.Yes.")]);
        assert_eq!(s.stray_closes(), 1);
    }

    #[test]
    fn assume_open_consumes_an_explicit_opening_tag() {
        assert_eq!(
            run(true, &["\n<think>\nfoo</think>bar"]),
            vec![t("foo"), a("bar")]
        );
        assert_eq!(
            run(true, &["foo <think> bar</think>baz"]),
            vec![t("foo <think> bar"), a("baz")]
        );
    }

    #[test]
    fn no_tags_is_all_answer() {
        assert_eq!(
            run(false, &["plain ", "text < 3 > 2"]),
            vec![a("plain text < 3 > 2")]
        );
    }

    #[test]
    fn unclosed_thinking_stays_thinking() {
        assert_eq!(
            run(false, &["<think>never closes"]),
            vec![t("never closes")]
        );
    }

    fn content_strategy() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                Just("<think>".to_string()),
                Just("</think>".to_string()),
                Just("<".to_string()),
                Just("</".to_string()),
                Just("<thin".to_string()),
                Just("\n".to_string()),
                "[a-z é漢<>/]{0,8}",
            ],
            0..20,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn chunking_does_not_change_segments(
            content in content_strategy(),
            assume_open in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let whole = run(assume_open, &[content.as_str()]);
            let mut points: Vec<usize> = cuts
                .into_iter()
                .map(|c| c % (content.len() + 1))
                .filter(|&p| content.is_char_boundary(p))
                .collect();
            points.sort_unstable();
            let mut pieces = Vec::new();
            let mut prev = 0;
            for p in points {
                pieces.push(&content[prev..p]);
                prev = p;
            }
            pieces.push(&content[prev..]);
            prop_assert_eq!(run(assume_open, &pieces), whole);
        }
    }
}

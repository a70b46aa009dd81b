//! Cutting thinking text: char-boundary helpers, sentences, steps of a paragraph, blank
//! lines between paragraphs, and the running hash of the text. All slicing is on char
//! boundaries.

/// Paragraphs longer than this (bytes) are split into sentence groups of at most this size
/// (glassbox's own bound; seed 000 ThinkGraph splits on paragraphs only).
pub(super) const MAX_STEP_BYTES: usize = 600;

/// The largest char boundary `<= i`.
pub(super) fn floor_boundary(text: &str, i: usize) -> usize {
    let mut i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// At most `max` chars of `s`.
pub(super) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s.get(..i).unwrap_or(s).to_string(),
        None => s.to_string(),
    }
}

/// The span `a..b` of `text` without surrounding whitespace, or None if blank.
pub(super) fn trimmed_span(text: &str, a: usize, b: usize) -> Option<(usize, usize)> {
    let s = text.get(a..b)?;
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    (!t.is_empty()).then_some((a + lead, a + lead + t.len()))
}

/// Sentence spans of `text`: split after runs of `.`, `!`, `?` followed by whitespace, and
/// at line breaks. Spans are trimmed and non-empty.
pub(super) fn sentence_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut spans = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < len {
        match bytes[i] {
            b'\n' => {
                spans.extend(trimmed_span(text, start, i));
                start = i + 1;
                i += 1;
            }
            b'.' | b'!' | b'?' => {
                let mut j = i + 1;
                while j < len && matches!(bytes[j], b'.' | b'!' | b'?') {
                    j += 1;
                }
                if j == len || bytes[j].is_ascii_whitespace() {
                    spans.extend(trimmed_span(text, start, j));
                    start = j;
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    spans.extend(trimmed_span(text, start, len));
    spans
}

/// Splits one over-long sentence `a..b` into pieces of at most `MAX_STEP_BYTES`,
/// preferring to cut at whitespace.
pub(super) fn hard_split(text: &str, a: usize, b: usize, out: &mut Vec<(usize, usize)>) {
    let mut pos = a;
    while b - pos > MAX_STEP_BYTES {
        let limit = floor_boundary(text, pos + MAX_STEP_BYTES);
        let window = text.get(pos..limit).unwrap_or("");
        let cut = match window.rfind(char::is_whitespace) {
            Some(ws) if ws >= MAX_STEP_BYTES / 2 => pos + ws,
            _ => limit,
        };
        // A char is at most 4 bytes, so `limit > pos`; guard anyway.
        let cut = if cut <= pos { b } else { cut };
        out.extend(trimmed_span(text, pos, cut));
        pos = cut;
    }
    out.extend(trimmed_span(text, pos, b));
}

/// Step spans of a trimmed paragraph: the paragraph itself, or greedy sentence groups of at
/// most `MAX_STEP_BYTES` when it is longer.
pub(super) fn step_spans(para: &str) -> Vec<(usize, usize)> {
    if para.len() <= MAX_STEP_BYTES {
        return trimmed_span(para, 0, para.len()).into_iter().collect();
    }
    let mut spans = Vec::new();
    let mut group: Option<(usize, usize)> = None;
    for (s, e) in sentence_spans(para) {
        if e - s > MAX_STEP_BYTES {
            spans.extend(group.take());
            hard_split(para, s, e, &mut spans);
            continue;
        }
        group = match group {
            Some((gs, _)) if e - gs <= MAX_STEP_BYTES => Some((gs, e)),
            Some(g) => {
                spans.push(g);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    spans.extend(group);
    spans
}

/// The steps at the start of an unfinished long paragraph that no text after `text` can
/// change, and where the rest of it starts. `text` is the paragraph so far; it is known to
/// go on past its end. A step is settled once the sentence after it is complete and does
/// not fit it (or is cut by [`hard_split`]); a sentence is complete once the character
/// after its end has arrived. The steps are those [`step_spans`] cuts from the whole
/// paragraph, and the rest, cut by it alone, gives the paragraph's remaining steps: nothing
/// is settled unless the paragraph is longer than `MAX_STEP_BYTES`.
pub(super) fn settled_steps(text: &str) -> (Vec<(usize, usize)>, usize) {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < len {
        match bytes[i] {
            b'\n' => {
                sentences.extend(trimmed_span(text, start, i));
                start = i + 1;
                i += 1;
            }
            b'.' | b'!' | b'?' => {
                let mut j = i + 1;
                while j < len && matches!(bytes[j], b'.' | b'!' | b'?') {
                    j += 1;
                }
                if j == len {
                    // More punctuation, or a letter, may follow.
                    break;
                }
                if bytes[j].is_ascii_whitespace() {
                    sentences.extend(trimmed_span(text, start, j));
                    start = j;
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    let mut spans = Vec::new();
    let mut group: Option<(usize, usize)> = None;
    for (s, e) in sentences {
        if e - s > MAX_STEP_BYTES {
            spans.extend(group.take());
            hard_split(text, s, e, &mut spans);
            continue;
        }
        group = match group {
            Some((gs, _)) if e - gs <= MAX_STEP_BYTES => Some((gs, e)),
            Some(g) => {
                spans.push(g);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    // The open group may still grow: the rest starts with it.
    let rest = group.map_or(start, |(gs, _)| gs);
    (spans, rest)
}

/// 64-bit FNV-1a, continued from `hash`.
pub(super) fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

pub(super) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Result of looking for a blank line.
pub(super) enum BlankLine {
    /// The paragraph ends at `para_end`; the next one starts at `next`.
    Found { para_end: usize, next: usize },
    /// A line break at this offset may start a blank line; more text is needed.
    Undecided(usize),
    /// No blank line after the scan start.
    Absent,
}

/// Finds the first blank line (a line of only spaces, tabs or `\r`) at or after `from`.
pub(super) fn find_blank_line(buf: &str, from: usize) -> BlankLine {
    let bytes = buf.as_bytes();
    let mut i = from;
    while let Some(off) = bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
    {
        let nl = i + off;
        let mut j = nl + 1;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        match bytes.get(j) {
            None => return BlankLine::Undecided(nl),
            Some(b'\n') => {
                return BlankLine::Found {
                    para_end: nl,
                    next: j + 1,
                };
            }
            Some(_) => i = j,
        }
    }
    BlankLine::Absent
}

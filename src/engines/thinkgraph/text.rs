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
    let mut i = next_break(bytes, 0);
    while i < len {
        if bytes[i] == b'\n' {
            spans.extend(trimmed_span(text, start, i));
            start = i + 1;
            i += 1;
        } else {
            let j = punctuation_end(bytes, i);
            if j == len || bytes[j].is_ascii_whitespace() {
                spans.extend(trimmed_span(text, start, j));
                start = j;
            }
            i = j;
        }
        i = next_break(bytes, i);
    }
    spans.extend(trimmed_span(text, start, len));
    spans
}

/// The end of the run of `.`, `!` and `?` that starts at `i`.
fn punctuation_end(bytes: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < bytes.len() && matches!(bytes[j], b'.' | b'!' | b'?') {
        j += 1;
    }
    j
}

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// Whether one of the 8 bytes of `word` is `byte` (the classic zero-byte test of
/// `word ^ byte…`: no byte sets a high bit before the first zero one).
fn holds(word: u64, byte: u8) -> bool {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS != 0
}

/// The first position at or after `from` where `bytes` holds a byte `is` accepts, looking at
/// eight bytes at a time and skipping those of which `any` (told the eight as one word) says
/// none is such a byte; `bytes.len()` if there is none.
fn find_byte(
    bytes: &[u8],
    from: usize,
    any: impl Fn(u64) -> bool,
    is: impl Fn(u8) -> bool,
) -> usize {
    let Some(rest) = bytes.get(from..) else {
        return bytes.len();
    };
    let mut at = from;
    let mut chunks = rest.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if any(u64::from_ne_bytes(word)) {
            break;
        }
        at += 8;
    }
    bytes
        .get(at..)
        .and_then(|tail| tail.iter().position(|&b| is(b)))
        .map_or(bytes.len(), |p| at + p)
}

/// The first line break or sentence punctuation (`\n`, `.`, `!`, `?`) at or after `from`, or
/// `bytes.len()`.
fn next_break(bytes: &[u8], from: usize) -> usize {
    find_byte(
        bytes,
        from,
        |w| holds(w, b'\n') || holds(w, b'.') || holds(w, b'!') || holds(w, b'?'),
        |b| matches!(b, b'\n' | b'.' | b'!' | b'?'),
    )
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

/// The cutting of an unfinished long paragraph into the steps at its start that no text
/// after it can change, read on as the paragraph grows, so each byte is read once.
///
/// A step is settled once the sentence after it is complete and does not fit it (or is cut
/// by [`hard_split`]); a sentence is complete once the character after its end has arrived.
/// The steps are those [`step_spans`] cuts from the whole paragraph, and the rest, cut by it
/// alone, gives the paragraph's remaining steps: nothing is settled unless the paragraph is
/// longer than `MAX_STEP_BYTES`.
#[derive(Clone, Debug, Default)]
pub(super) struct SettleScan {
    /// Where the reading goes on.
    at: usize,
    /// Where the sentence being read starts (untrimmed).
    start: usize,
    /// The open group of sentences: the step that may still grow.
    group: Option<(usize, usize)>,
}

impl SettleScan {
    /// Reads `text`, the paragraph so far (the text of the last call and more; it is known to
    /// go on past its end), from where the last call stopped; adds the steps it settles to
    /// `spans` and returns where the rest of the paragraph starts.
    pub(super) fn advance(&mut self, text: &str, spans: &mut Vec<(usize, usize)>) -> usize {
        let bytes = text.as_bytes();
        let len = bytes.len();
        let mut i = next_break(bytes, self.at);
        while i < len {
            if bytes[i] == b'\n' {
                self.sentence(text, i, spans);
                self.start = i + 1;
                i += 1;
            } else {
                let j = punctuation_end(bytes, i);
                if j == len {
                    // More punctuation, or a letter, may follow.
                    break;
                }
                if bytes[j].is_ascii_whitespace() {
                    self.sentence(text, j, spans);
                    self.start = j;
                }
                i = j;
            }
            i = next_break(bytes, i);
        }
        self.at = i;
        // The open group may still grow: the rest starts with it.
        self.group.map_or(self.start, |(gs, _)| gs)
    }

    /// Takes the complete sentence from `self.start` to `end` into the steps.
    fn sentence(&mut self, text: &str, end: usize, spans: &mut Vec<(usize, usize)>) {
        let Some((s, e)) = trimmed_span(text, self.start, end) else {
            return;
        };
        if e - s > MAX_STEP_BYTES {
            spans.extend(self.group.take());
            hard_split(text, s, e, spans);
            return;
        }
        self.group = match self.group {
            Some((gs, _)) if e - gs <= MAX_STEP_BYTES => Some((gs, e)),
            Some(g) => {
                spans.push(g);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }

    /// The text lost its first `by` bytes (at most what [`SettleScan::advance`] returned).
    pub(super) fn shift(&mut self, by: usize) {
        self.at -= by;
        self.start -= by;
        if let Some((s, e)) = &mut self.group {
            *s -= by;
            *e -= by;
        }
    }
}

/// The hash of a text read in pieces and how many chars it holds, the same however it is
/// cut: the seed's "text hash" behind a node's jitter (a CRC-32, which reads many bytes a
/// step; a text of megabytes streams through it in well under a millisecond).
#[derive(Clone, Debug, Default)]
pub(super) struct TextHash {
    crc: crc32fast::Hasher,
    chars: usize,
}

impl TextHash {
    /// Reads on with `text`.
    pub(super) fn push(&mut self, text: &str) {
        self.crc.update(text.as_bytes());
        self.chars += text.chars().count();
    }

    /// The hash of the text read so far.
    pub(super) fn hash(&self) -> u64 {
        u64::from(self.crc.clone().finalize())
    }

    /// Chars read so far.
    pub(super) fn chars(&self) -> usize {
        self.chars
    }
}

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
    loop {
        let nl = find_byte(bytes, i, |w| holds(w, b'\n'), |b| b == b'\n');
        if nl >= bytes.len() {
            return BlankLine::Absent;
        }
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
}

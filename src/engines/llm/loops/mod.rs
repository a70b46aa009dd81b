//! Loop detection on a model's stream: spots text that has started repeating itself (the
//! same block of lines, or the same run of words, again and again) while the deltas arrive.
//!
//! A [`LoopDetector`] reads one stream (the thinking or the answer) a character at a time
//! (runs of ASCII in one go) and keeps only a window of hashes: O(1) work per character
//! plus at most O(max period) per finished line or word, and bounded memory however long
//! the stream runs. Lines are
//! compared after normalising them (list numbering and bullets stripped, whitespace
//! collapsed, lower case) and lines with too few letters or digits (braces, `end`, blank
//! lines, table rules) are skipped, so lists, tables and code do not look like loops: only
//! their content repeating does.

mod cycles;
#[cfg(test)]
mod tests;

use std::fmt;

use serde::{Deserialize, Serialize};

use super::StopReason;
use cycles::Cycles;

/// What `StopReason::Other` holds when a turn was stopped because the model was looping.
pub const LOOP_STOP_REASON: &str = "loop";

/// The stop reason of a turn stopped because the model was looping.
pub fn loop_stop() -> StopReason {
    StopReason::Other(LOOP_STOP_REASON.into())
}

/// Whether a turn ended because the model was looping.
pub fn is_loop_stop(stop: &StopReason) -> bool {
    matches!(stop, StopReason::Other(s) if s == LOOP_STOP_REASON)
}

/// What to do when a model loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopAction {
    /// Do not look for loops.
    Off,
    /// Report the loop and let the model go on.
    Warn,
    /// Report the loop and stop the model call, keeping what arrived.
    Stop,
}

impl LoopAction {
    /// The name used in the config and in JSON events.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopAction::Off => "off",
            LoopAction::Warn => "warn",
            LoopAction::Stop => "stop",
        }
    }
}

/// `[loop]`: when a stream counts as looping and what to do then (glassbox's own: no seed
/// describes loop detection; the numbers were chosen against the embedded SmolLM2's loops
/// and ordinary lists, tables and code).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopParams {
    /// Action with the embedded model, which loops often and then runs to the token cap.
    pub action_local: LoopAction,
    /// Action with the remote providers (Anthropic, OpenAI-compatible, Ollama).
    pub action_remote: LoopAction,
    /// Times a unit must occur in a row to count as a loop.
    pub min_repeats: u32,
    /// Longest cycle looked for, in lines.
    pub max_period_lines: u32,
    /// Longest cycle looked for, in words.
    pub max_period_words: u32,
    /// A repeated unit (one cycle) must hold at least this many characters, so short
    /// refrains, `None, None, None` and laughter do not count.
    pub min_unit_chars: u32,
    /// Lines with fewer letters and digits than this (braces, `end`, blank lines) are
    /// skipped.
    pub min_line_chars: u32,
}

impl Default for LoopParams {
    fn default() -> Self {
        Self {
            action_local: LoopAction::Stop,
            action_remote: LoopAction::Warn,
            min_repeats: 4,
            max_period_lines: 12,
            max_period_words: 120,
            min_unit_chars: 16,
            min_line_chars: 4,
        }
    }
}

impl LoopParams {
    /// The action for the embedded model (`local`) or a remote one.
    pub fn action(&self, local: bool) -> LoopAction {
        if local {
            self.action_local
        } else {
            self.action_remote
        }
    }
}

/// What a loop's cycle is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopUnit {
    Lines,
    Words,
}

impl LoopUnit {
    /// The name used in JSON events and node meta.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopUnit::Lines => "lines",
            LoopUnit::Words => "words",
        }
    }
}

/// A loop found in a stream: a cycle of `period` lines or words, seen `repeats` times in a
/// row at the end of the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopReport {
    pub unit: LoopUnit,
    pub period: usize,
    pub repeats: usize,
}

impl fmt::Display for LoopReport {
    /// `3-line cycle ×5`, `4-word cycle ×7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            LoopUnit::Lines => "line",
            LoopUnit::Words => "word",
        };
        write!(f, "{}-{unit} cycle ×{}", self.period, self.repeats)
    }
}

/// Finds a loop in one stream, fed delta by delta. Reports it once; after that it keeps
/// counting the repeats of that cycle (see [`LoopDetector::found`]).
#[derive(Clone, Debug)]
pub struct LoopDetector {
    min_repeats: usize,
    min_unit_chars: u64,
    min_line_chars: usize,
    lines: Cycles,
    words: Cycles,
    line: LineState,
    word: WordState,
    found: Option<LoopReport>,
}

impl LoopDetector {
    pub fn new(params: &LoopParams) -> Self {
        Self {
            min_repeats: (params.min_repeats as usize).max(2),
            min_unit_chars: u64::from(params.min_unit_chars),
            min_line_chars: params.min_line_chars as usize,
            lines: Cycles::new(params.max_period_lines as usize),
            words: Cycles::new(params.max_period_words as usize),
            line: LineState::default(),
            word: WordState::default(),
            found: None,
        }
    }

    /// Reads one delta. Returns the loop the first time one is found, and `None` ever after.
    ///
    /// The delta is read as bytes: a run of ASCII characters that are not whitespace (most
    /// of any text) cannot end a line or a word, so it is read in one go
    /// (`LoopDetector::push_ascii`); whitespace and non-ASCII characters go one at a time
    /// through `LoopDetector::push_char`.
    pub fn push(&mut self, delta: &str) -> Option<LoopReport> {
        let already = self.found.is_some();
        let bytes = delta.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if is_ascii_word_byte(b) {
                i += self.push_ascii(&bytes[i..]);
            } else if b.is_ascii() {
                self.push_char(char::from(b));
                i += 1;
            } else if let Some(c) = delta.get(i..).and_then(|rest| rest.chars().next()) {
                self.push_char(c);
                i += c.len_utf8();
            } else {
                // Not reached: `i` always lies on a char boundary.
                break;
            }
        }
        if already { None } else { self.found }
    }

    /// The loop found so far, its repeats counted up to the text read so far.
    pub fn found(&self) -> Option<LoopReport> {
        self.found
    }

    /// Reads the run of ASCII characters other than whitespace that `bytes` starts with and
    /// returns its length: what `push_char` would do with each of them, since none ends a
    /// line or a word. Past the line's lead, each byte goes to the line's and the word's
    /// hash in one loop, so that their multiplications overlap.
    fn push_ascii(&mut self, bytes: &[u8]) -> usize {
        let is_next = |i: usize| bytes.get(i).is_some_and(|&b| is_ascii_word_byte(b));
        let mut i = 0;
        while !self.line.content && is_next(i) {
            let c = char::from(bytes[i]);
            self.line.push(c);
            self.word.push(c);
            i += 1;
        }
        if !is_next(i) {
            return i;
        }
        let (line, word) = (&mut self.line, &mut self.word);
        if line.space {
            line.space = false;
            line.feed(' ');
        }
        let start = i;
        let (mut line_hash, mut line_alnum) = (line.hash, 0);
        let (mut hash, mut chars) = (word.hash, word.chars);
        let (mut trimmed, mut trimmed_chars) = (word.trimmed, word.trimmed_chars);
        while let Some(&b) = bytes.get(i)
            && is_ascii_word_byte(b)
        {
            let l = b.to_ascii_lowercase();
            let alnum = l.is_ascii_alphanumeric();
            line_hash.write_byte(l);
            line_alnum += usize::from(alnum);
            // As `WordState::take`: the word starts at its first letter or digit.
            if chars > 0 || alnum {
                hash.write_byte(l);
                chars += 1;
                if alnum {
                    trimmed = hash;
                    trimmed_chars = chars;
                }
            }
            i += 1;
        }
        line.hash = line_hash;
        line.chars += (i - start) as u64;
        line.alnum += line_alnum;
        word.raw.push_bytes(&bytes[start..i]);
        word.hash = hash;
        word.chars = chars;
        word.trimmed = trimmed;
        word.trimmed_chars = trimmed_chars;
        i
    }

    fn push_char(&mut self, c: char) {
        let (mut line, mut word) = (None, None);
        if c == '\n' {
            // The word ends with the line it is on (a table row's words are left out).
            word = self.word.end(self.line.table);
            line = self.line.end();
        } else {
            self.line.push(c);
            if c.is_whitespace() {
                word = self.word.end(self.line.table);
            } else {
                self.word.push(c);
            }
        }
        // A line is an item when it has enough letters and digits; ties go to lines.
        if let Some((hash, chars, alnum)) = line
            && alnum >= self.min_line_chars
        {
            let hit = self
                .lines
                .push(hash, chars, self.min_repeats, self.min_unit_chars);
            self.note(LoopUnit::Lines, hit);
        }
        if let Some((hash, chars)) = word {
            let hit = self
                .words
                .push(hash, chars, self.min_repeats, self.min_unit_chars);
            self.note(LoopUnit::Words, hit);
        }
    }

    fn note(&mut self, unit: LoopUnit, hit: Option<(usize, usize)>) {
        match &mut self.found {
            None => {
                if let Some((period, repeats)) = hit {
                    self.found = Some(LoopReport {
                        unit,
                        period,
                        repeats,
                    });
                }
            }
            Some(f) if f.unit == unit => {
                let cycles = match unit {
                    LoopUnit::Lines => &self.lines,
                    LoopUnit::Words => &self.words,
                };
                f.repeats = f.repeats.max(cycles.repeats(f.period));
            }
            Some(_) => {}
        }
    }
}

/// A byte that is a whole ASCII character and not whitespace (`char::is_whitespace` holds
/// for tab, line feed, vertical tab, form feed, carriage return and space in ASCII).
fn is_ascii_word_byte(b: u8) -> bool {
    b.is_ascii() && !matches!(b, b'\t'..=b'\r' | b' ')
}

/// An FNV-1a style hash fed one character (a whole code point per step): cheap and stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, c: char) {
        self.write_u32(u32::from(c));
    }

    /// The same as `write` for an ASCII character.
    fn write_byte(&mut self, b: u8) {
        self.write_u32(u32::from(b));
    }

    fn write_u32(&mut self, c: u32) {
        self.0 ^= u64::from(c);
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// A token this long or longer is never a list marker.
const MARKER_MAX: usize = 8;

/// The longest list marker in bytes (`(1234)`, `######`): a longer token is never one.
const MARKER_BYTES: usize = 6;

/// Whether a whitespace-separated token is list or heading markup rather than content:
/// `-`, `*`, `+`, `•`, `>`, `#`…, `1.`, `12)`, `3:`, `(4)`, `a)`.
fn is_marker(token: &str) -> bool {
    if matches!(
        token,
        "-" | "*" | "+" | "•" | "·" | "‣" | "–" | "—" | ">" | "→"
    ) {
        return true;
    }
    if !token.is_empty() && token.len() <= 6 && token.chars().all(|c| c == '#') {
        return true;
    }
    let inner = token
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(token);
    let body = inner
        .strip_suffix(['.', ')', ':'])
        .filter(|_| inner.len() == token.len())
        .unwrap_or(inner);
    let numbered = !body.is_empty() && body.len() <= 4 && body.chars().all(|c| c.is_ascii_digit());
    let lettered =
        token.len() == 2 && token.ends_with(')') && body.chars().all(|c| c.is_ascii_lowercase());
    (numbered || lettered) && body.len() < token.len()
}

/// The start of a token as written: its first [`MARKER_BYTES`] bytes (little-endian in a
/// `u64`) and its length in bytes, enough to tell whether it is a marker.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    bytes: u64,
    total: usize,
}

impl Head {
    fn push(&mut self, c: char) {
        self.push_bytes(c.encode_utf8(&mut [0; 4]).as_bytes());
    }

    /// Adds whole characters. Those past [`MARKER_BYTES`] are only counted (and a
    /// character across the end is cut, but a token that long is never looked at).
    fn push_bytes(&mut self, s: &[u8]) {
        let room = MARKER_BYTES.saturating_sub(self.total);
        for (i, &b) in s.iter().take(room).enumerate() {
            self.bytes |= u64::from(b) << (8 * (self.total + i));
        }
        self.total += s.len();
    }

    /// Bytes held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.total.min(MARKER_BYTES)
    }

    fn is_marker(&self) -> bool {
        if self.total > MARKER_BYTES {
            return false;
        }
        let bytes = self.bytes.to_le_bytes();
        let token = &bytes[..self.total];
        // A marker ends in one of these or in a non-ASCII character, which tells most words
        // apart before anything else is looked at.
        matches!(
            token.last(),
            Some(b'-' | b'*' | b'+' | b'>' | b'#' | b'.' | b')' | b':' | 0x80..)
        ) && std::str::from_utf8(token).is_ok_and(is_marker)
    }
}

/// The line being read: its leading markup is dropped, the rest normalised into a hash.
#[derive(Clone, Debug, Default)]
struct LineState {
    /// Past the leading markers: the content has started.
    content: bool,
    /// The token at the start of the line while it may still be a marker, and its length in
    /// characters.
    lead: Head,
    lead_chars: usize,
    /// The line's first non-blank character is `|`: a table row.
    table: bool,
    started: bool,
    /// Whitespace seen since the last content character.
    space: bool,
    /// The normalised content so far. While the lead is read it is hashed as content would
    /// be, and all of this is dropped again if it turns out to be a marker.
    hash: Fnv,
    chars: u64,
    alnum: usize,
}

impl LineState {
    fn push(&mut self, c: char) {
        if !self.content {
            if c.is_whitespace() {
                if self.lead_chars == 0 {
                    return;
                }
                if self.lead.is_marker() {
                    // Nothing of the line's content has been read yet.
                    *self = Self {
                        table: self.table,
                        started: true,
                        ..Self::default()
                    };
                    return;
                }
                self.content = true;
                self.space = true;
                return;
            }
            if !self.started {
                self.started = true;
                self.table = c == '|';
            }
            self.lead.push(c);
            self.lead_chars += 1;
            self.feed(c);
            if self.lead_chars > MARKER_MAX {
                self.content = true;
            }
            return;
        }
        if c.is_whitespace() {
            self.space = true;
            return;
        }
        if self.space {
            self.space = false;
            self.feed(' ');
        }
        self.feed(c);
    }

    fn feed(&mut self, c: char) {
        if c.is_ascii() {
            let l = c.to_ascii_lowercase();
            self.hash.write(l);
            self.chars += 1;
            self.alnum += usize::from(l.is_ascii_alphanumeric());
            return;
        }
        for l in c.to_lowercase() {
            self.hash.write(l);
            self.chars += 1;
            if l.is_alphanumeric() {
                self.alnum += 1;
            }
        }
    }

    /// Ends the line: (hash, characters, letters and digits) of its normalised content.
    fn end(&mut self) -> Option<(u64, u64, usize)> {
        // A lead that is not a marker is content.
        let content = self.content || (self.lead_chars > 0 && !self.lead.is_marker());
        let done = std::mem::take(self);
        (content && done.chars > 0).then_some((done.hash.0, done.chars, done.alnum))
    }
}

/// The word being read, lower-cased with its leading and trailing punctuation trimmed.
#[derive(Clone, Debug, Default)]
struct WordState {
    /// The token as written, as far as a marker could go.
    raw: Head,
    /// Hash of the token from its first letter or digit on, and the same up to the last
    /// letter or digit (the trailing punctuation trimmed).
    hash: Fnv,
    trimmed: Fnv,
    chars: u64,
    trimmed_chars: u64,
}

impl WordState {
    fn push(&mut self, c: char) {
        self.raw.push(c);
        if c.is_ascii() {
            self.take(c.to_ascii_lowercase());
        } else {
            for l in c.to_lowercase() {
                self.take(l);
            }
        }
    }

    fn take(&mut self, l: char) {
        let alnum = l.is_alphanumeric();
        if self.chars == 0 && !alnum {
            return;
        }
        self.hash.write(l);
        self.chars += 1;
        if alnum {
            self.trimmed = self.hash;
            self.trimmed_chars = self.chars;
        }
    }

    /// Ends the word: (hash, characters with the space after it), unless it has no letters
    /// or digits, is list markup, or sits in a table row.
    fn end(&mut self, table: bool) -> Option<(u64, u64)> {
        let (hash, chars) = (self.trimmed.0, self.trimmed_chars);
        let word = chars > 0 && !table && !self.raw.is_marker();
        *self = Self::default();
        word.then_some((hash, chars + 1))
    }
}

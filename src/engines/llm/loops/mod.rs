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
    token: Token,
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
            token: Token::default(),
            found: None,
        }
    }

    /// Reads one delta. Returns the loop the first time one is found, and `None` ever after.
    ///
    /// The delta is read as bytes: a run of ASCII characters that are not whitespace (most
    /// of any text) cannot end a line or a word, so it is read in one go
    /// (`LoopDetector::push_ascii`); whitespace ends the token before it, and a non-ASCII
    /// character goes through `Token::take` a lower-cased character at a time.
    pub fn push(&mut self, delta: &str) -> Option<LoopReport> {
        let already = self.found.is_some();
        let bytes = delta.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if is_ascii_word_byte(b) {
                i += self.push_ascii(&bytes[i..]);
            } else if b == b'\n' {
                self.end_line();
                i += 1;
            } else if b.is_ascii() {
                self.end_token();
                i += 1;
            } else if let Some(c) = delta.get(i..).and_then(|rest| rest.chars().next()) {
                if c.is_whitespace() {
                    self.end_token();
                } else {
                    self.push_char(c);
                }
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
    /// returns its length. None of them ends a token, so a token that began with a letter or
    /// digit (nearly every one) is hashed in one tight loop, a table lookup a byte.
    fn push_ascii(&mut self, bytes: &[u8]) -> usize {
        let Some(&first) = bytes.first() else {
            return 0;
        };
        self.start_token(char::from(first));
        let t = &mut self.token;
        if t.chars == 0 {
            t.split = !first.is_ascii_alphanumeric();
        }
        let run = if t.split {
            let run = bytes
                .iter()
                .position(|&b| !is_ascii_word_byte(b))
                .unwrap_or(bytes.len());
            for &b in &bytes[..run] {
                t.take(char::from(b.to_ascii_lowercase()));
            }
            run
        } else {
            let (mut full, mut alnum) = (t.full, t.alnum);
            let (mut trimmed, mut trimmed_at) = (t.trimmed, None);
            let mut run = bytes.len();
            for (i, &b) in bytes.iter().enumerate() {
                let class = ASCII[usize::from(b)];
                if class & WORD_BYTE == 0 {
                    run = i;
                    break;
                }
                // The low byte is the character lower-cased.
                full.write_byte(class as u8);
                if class & ALNUM != 0 {
                    alnum += 1;
                    trimmed = full;
                    trimmed_at = Some(i);
                }
            }
            if let Some(i) = trimmed_at {
                t.trimmed = trimmed;
                t.trimmed_chars = t.chars + i as u64 + 1;
            }
            t.full = full;
            t.alnum = alnum;
            t.chars += run as u64;
            run
        };
        t.raw.push_bytes(bytes, run);
        run
    }

    /// A non-ASCII character other than whitespace.
    fn push_char(&mut self, c: char) {
        self.start_token(c);
        self.token.raw.push(c);
        for l in c.to_lowercase() {
            self.token.take(l);
        }
    }

    /// Before the first character of a token: the first token of a line tells whether the
    /// line is a table row.
    fn start_token(&mut self, first: char) {
        if self.token.raw.total == 0 && !self.line.started {
            self.line.started = true;
            self.line.table = first == '|';
        }
    }

    /// Whitespace other than a line feed: the token before it, if any, is a word.
    fn end_token(&mut self) {
        if self.token.raw.total == 0 {
            return;
        }
        self.line.add(&self.token);
        let word = self.token.word(self.line.table);
        self.token = Token::default();
        if let Some((hash, chars)) = word {
            let hit = self
                .words
                .push(hash, chars, self.min_repeats, self.min_unit_chars);
            self.note(LoopUnit::Words, hit);
        }
    }

    /// A line feed: the token before it ends (its word goes in after the line), then the
    /// line. A line is an item when it has enough letters and digits; ties go to lines.
    fn end_line(&mut self) {
        let token = std::mem::take(&mut self.token);
        let mut word = None;
        if token.raw.total > 0 {
            self.line.add(&token);
            word = token.word(self.line.table);
        }
        if let Some((hash, chars, alnum)) = self.line.end()
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
const fn is_ascii_word_byte(b: u8) -> bool {
    b.is_ascii() && !matches!(b, b'\t'..=b'\r' | b' ')
}

/// [`ASCII`]'s flag for [`is_ascii_word_byte`].
const WORD_BYTE: u16 = 1 << 8;
/// [`ASCII`]'s flag for an ASCII letter or digit.
const ALNUM: u16 = 1 << 9;

/// What [`LoopDetector::push_ascii`] needs of each byte in one lookup: the byte lower-cased
/// (the low byte), [`WORD_BYTE`] and [`ALNUM`].
static ASCII: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut class = b.to_ascii_lowercase() as u16;
        if is_ascii_word_byte(b) {
            class |= WORD_BYTE;
        }
        if b.is_ascii_alphanumeric() {
            class |= ALNUM;
        }
        table[i] = class;
        i += 1;
    }
    table
};

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
        let mut buf = [0; 4];
        let bytes = c.encode_utf8(&mut buf).as_bytes();
        self.push_bytes(bytes, bytes.len());
    }

    /// Adds the first `len` bytes of `s` (whole characters; `s` may go on past them). Those
    /// past [`MARKER_BYTES`] are only counted (and a character across the end is cut, but a
    /// token that long is never looked at).
    fn push_bytes(&mut self, s: &[u8], len: usize) {
        if self.total < MARKER_BYTES {
            let room = (MARKER_BYTES - self.total).min(len);
            // Eight bytes in one load where there are eight, the wanted ones masked out.
            let word = match s.first_chunk::<8>() {
                Some(w) => u64::from_le_bytes(*w),
                None => s.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
            };
            let wanted = (1u64 << (8 * room)) - 1;
            self.bytes |= (word & wanted) << (8 * self.total);
        }
        self.total += len;
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

/// The line being read: its content tokens (those after the leading markers) folded into a
/// hash, which so stands for the line lower-cased with its whitespace collapsed.
#[derive(Clone, Debug, Default)]
struct LineState {
    /// A token of the line has begun: its first character told `table`.
    started: bool,
    /// The line's first non-blank character is `|`: a table row.
    table: bool,
    /// Past the leading markers: a content token has been read.
    content: bool,
    hash: u64,
    /// Characters of the content, lower-cased, one space between tokens.
    chars: u64,
    alnum: usize,
}

/// The multiplier that folds a token's hash into its line's (odd, with well mixed bits).
const LINE_MIX: u64 = 0x9e37_79b9_7f4a_7c15;

impl LineState {
    /// Adds a token: dropped while the line has no content and it is list markup.
    fn add(&mut self, token: &Token) {
        if self.content {
            // The one space that stands for the whitespace between tokens.
            self.chars += 1;
        } else if token.raw.is_marker() {
            return;
        } else {
            self.content = true;
        }
        self.hash = (self.hash.rotate_left(29) ^ token.full.0).wrapping_mul(LINE_MIX);
        self.chars += token.chars;
        self.alnum += token.alnum;
    }

    /// Ends the line: (hash, characters, letters and digits) of its content.
    fn end(&mut self) -> Option<(u64, u64, usize)> {
        let done = std::mem::take(self);
        (done.content && done.chars > 0).then_some((done.hash, done.chars, done.alnum))
    }
}

/// The token being read (a run of characters other than whitespace), lower-cased: hashed
/// whole for its line, and as a word from its first letter or digit to its last.
#[derive(Clone, Debug, Default)]
struct Token {
    /// The token as written, as far as a marker could go.
    raw: Head,
    /// Hash and count of all its characters, and how many are letters or digits.
    full: Fnv,
    chars: u64,
    alnum: usize,
    /// It began with a character other than a letter or digit, so its word starts later and
    /// is hashed on its own (`word`); otherwise the word's hash is `full`'s.
    split: bool,
    word: Fnv,
    word_chars: u64,
    /// The word's hash and length up to its last letter or digit (the trailing punctuation
    /// trimmed).
    trimmed: Fnv,
    trimmed_chars: u64,
}

impl Token {
    /// Takes one lower-cased character.
    fn take(&mut self, l: char) {
        let alnum = l.is_alphanumeric();
        if self.chars == 0 {
            self.split = !alnum;
        }
        self.full.write(l);
        self.chars += 1;
        self.alnum += usize::from(alnum);
        if !self.split {
            if alnum {
                self.trimmed = self.full;
                self.trimmed_chars = self.chars;
            }
            return;
        }
        if self.word_chars == 0 && !alnum {
            return;
        }
        self.word.write(l);
        self.word_chars += 1;
        if alnum {
            self.trimmed = self.word;
            self.trimmed_chars = self.word_chars;
        }
    }

    /// The token as a word: (hash, characters with the space after it), unless it has no
    /// letters or digits, is list markup, or sits in a table row.
    fn word(&self, table: bool) -> Option<(u64, u64)> {
        let word = self.trimmed_chars > 0 && !table && !self.raw.is_marker();
        word.then_some((self.trimmed.0, self.trimmed_chars + 1))
    }
}

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

use std::fmt;

use serde::{Deserialize, Serialize};

use super::StopReason;

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
    /// ([`LoopDetector::push_ascii`]); whitespace and non-ASCII characters go one at a time
    /// through [`LoopDetector::push_char`].
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

/// The latest items (lines or words) of a stream as hashes, and for each period `p` how
/// long the text has been repeating with that period: its run, the items in a row that
/// have each equalled the item `p` before them.
///
/// Only long runs (`p` items or more) can ever be seen from outside: [`Cycles::push`]
/// reports a period only once its run is `p * (min_repeats - 1)` items or more, a shorter
/// period `q` whose run is under `q` explains too short a stretch to hide a longer period
/// with a long run (`run_q + q < 2q < run_p + p`), and [`Cycles::repeats`] is 1 for any run
/// under `p`. So a run must be exact wherever it may be long, and shorter ones need not be
/// kept at all:
///
/// - Periods under `gram` (8): every matching item is counted, found by comparing the new
///   item with the `gram - 1` before it.
/// - Longer periods: a long run means the last `gram` items equal the `gram` items `p`
///   back, so only the periods at which that gram recurs are looked at. A table indexed by
///   the top bits of a gram's hash holds the latest position whose gram fell in that slot,
///   and each recent item the position before it whose gram fell in the same slot: the
///   chain from the table through the window holds every recurrence of the gram (and the
///   rare other gram sharing its slot, told apart by its hash). A recurring gram whose run
///   was counted one item earlier extends it when the new item matches; otherwise the gram
///   is compared item by item and its run starts at `gram` (the item before it differs, or
///   the gram would have matched one item earlier).
///
/// A run counts only while its `at` names the latest item, so a run that is not extended
/// is over without being touched. In ordinary text grams seldom recur within the window,
/// so a common word like "the" costs no more than a rare one.
///
/// Positions are kept as 1 + position, so that 0 means none: seen from item `n` the period
/// of `q` is `n + 1 - q`, and 0 gives `n + 1`, past any window, so a walk along a chain
/// needs no other test than the window's.
#[derive(Clone, Debug)]
struct Cycles {
    /// The latest items in a ring indexed by position modulo its length: a power of two
    /// that holds the window and the gram before its oldest item.
    ring: Vec<Item>,
    mask: u64,
    /// 1 + position of the latest item whose gram hash has these top bits (0: none).
    table: Vec<u64>,
    table_bits: u32,
    /// Items per gram (at least 1).
    gram: usize,
    /// The hash of the latest gram, rolled on item by item: the sum of its items' hashes
    /// times `gram_base` to the power of how far back they are; and `gram_base` to the power
    /// of `gram`, to take the oldest item out.
    rolling: u64,
    gram_base: u64,
    gram_power: u64,
    /// Items read so far.
    count: u64,
    /// `runs[p - 1]`: the run of period `p`.
    runs: Vec<Run>,
    chars: u64,
}

/// Items per gram: periods under it are compared item by item, longer ones gram by gram.
const GRAM: usize = 8;

/// The multiplier of the rolling gram hash (odd, with well mixed bits).
const GRAM_BASE: u64 = 0xff51_afd7_ed55_8ccd;

/// One recent item of [`Cycles`].
#[derive(Clone, Copy, Debug, Default)]
struct Item {
    hash: u64,
    /// Characters up to and including the item.
    end: u64,
    /// Hash of the gram ending at the item (0 when the stream is shorter than a gram).
    gram: u64,
    /// 1 + position of the latest item before it whose gram hash has the same table slot
    /// (0: none).
    prev: u64,
}

/// How many items in a row have equalled the item `p` before them (`len`), as of item
/// `at - 1`.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    at: u64,
    len: usize,
}

impl Cycles {
    fn new(max_period: usize) -> Self {
        // Eight table entries per item in the window keep the chains short.
        let table_bits = (max_period.max(1) * 8)
            .next_power_of_two()
            .trailing_zeros()
            .max(6);
        Self::with_gram(max_period, GRAM, table_bits, GRAM_BASE)
    }

    /// `gram_base` 0 or 1 make weak gram hashes (the last item; the sum of the items), which
    /// tests use to see that grams are told apart item by item all the same.
    fn with_gram(max_period: usize, gram: usize, table_bits: u32, gram_base: u64) -> Self {
        let gram = gram.max(1);
        let ring = (max_period + gram).next_power_of_two();
        Self {
            ring: vec![Item::default(); ring],
            mask: ring as u64 - 1,
            table: vec![0; 1 << table_bits],
            table_bits,
            gram,
            rolling: 0,
            gram_base,
            gram_power: gram_base.wrapping_pow(gram as u32),
            count: 0,
            runs: vec![Run::default(); max_period],
            chars: 0,
        }
    }

    /// The item at `pos` (it must be one of the latest the ring holds).
    fn item(&self, pos: u64) -> &Item {
        &self.ring[(pos & self.mask) as usize]
    }

    /// Adds one item; returns (period, repeats) of the shortest cycle that has now repeated
    /// `min_repeats` times with a unit of at least `min_unit_chars`.
    ///
    /// A period is only reported when it is primitive: when a shorter period explains as
    /// long a stretch (`ha ha ha …` is a 1-word cycle, not a 6-word one), it is left out,
    /// so a too-short unit cannot sneak in as a multiple of itself.
    fn push(
        &mut self,
        hash: u64,
        chars: u64,
        min_repeats: usize,
        min_unit_chars: u64,
    ) -> Option<(usize, usize)> {
        self.chars += chars;
        let n = self.count;
        let window = n.min(self.runs.len() as u64);
        let gram = self.gram as u64;
        let mut scan = Scan {
            n,
            chars: self.chars,
            min_repeats,
            min_unit_chars,
            matched_reach: 0,
            hit: None,
        };
        // The periods are visited shortest first: those under a gram one by one…
        for p in 1..=window.min(gram - 1) {
            let item = *self.item(n - p);
            if item.hash == hash {
                scan.visit(p as usize, item.end, &mut self.runs[p as usize - 1], 1);
            }
        }
        // …then those at which the gram ending here recurs, nearest first. The item leaving
        // the gram is still in the ring: at worst in the slot the new item is about to take.
        let mut rolling = self.rolling.wrapping_mul(self.gram_base).wrapping_add(hash);
        if n >= gram {
            rolling = rolling.wrapping_sub(self.item(n - gram).hash.wrapping_mul(self.gram_power));
        }
        self.rolling = rolling;
        let (mut gram_hash, mut prev) = (0, 0);
        if n + 1 >= gram {
            // Only the items that end a whole gram are in the table and the chains.
            let window = window.min(n + 1 - gram);
            gram_hash = rolling;
            let slot =
                (gram_hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.table_bits)) as usize;
            prev = self.table[slot];
            let mut pos = prev;
            while n + 1 - pos <= window {
                let item = *self.item(pos - 1);
                if item.gram == gram_hash {
                    self.visit_gram(&mut scan, n + 1 - pos, &item, hash);
                }
                pos = item.prev;
            }
            self.table[slot] = n + 1;
        }
        self.ring[(n & self.mask) as usize] = Item {
            hash,
            end: self.chars,
            gram: gram_hash,
            prev,
        };
        self.count = n + 1;
        scan.hit
    }

    /// The gram ending at the new item `hash` has the same hash as the one ending at `back`,
    /// `p` items back: visits period `p` if the grams are equal and `p` is not one of the
    /// periods compared one by one.
    fn visit_gram(&mut self, scan: &mut Scan, p: u64, back: &Item, hash: u64) {
        let (n, gram) = (self.count, self.gram as u64);
        if p < gram {
            return;
        }
        let run = self.runs[p as usize - 1];
        let equal = if run.at == n {
            // The gram one item earlier matched: all but the new item are known equal.
            back.hash == hash
        } else {
            back.hash == hash
                && (1..gram).all(|i| self.item(n - i).hash == self.item(n - p - i).hash)
        };
        if equal {
            scan.visit(
                p as usize,
                back.end,
                &mut self.runs[p as usize - 1],
                self.gram,
            );
        }
    }

    /// Whole cycles of `period` at the end of the items.
    fn repeats(&self, period: usize) -> usize {
        match self.runs.get(period.wrapping_sub(1)) {
            Some(run) if run.at == self.count => 1 + run.len / period,
            Some(_) => 1,
            None => 0,
        }
    }
}

/// The periods of one new item of [`Cycles::push`], visited shortest first.
struct Scan {
    n: u64,
    chars: u64,
    min_repeats: usize,
    min_unit_chars: u64,
    /// The longest stretch a shorter period explains: a period whose item differs explains
    /// itself (`p` items), one whose item matches `run + p`.
    matched_reach: usize,
    hit: Option<(usize, usize)>,
}

impl Scan {
    /// Period `p` matches; `before`: characters up to and including the item `p` back;
    /// `fresh`: the run's length if it does not extend the one counted an item earlier.
    fn visit(&mut self, p: usize, before: u64, run: &mut Run, fresh: usize) {
        let n = self.n;
        let len = if run.at == n { run.len + 1 } else { fresh };
        *run = Run { at: n + 1, len };
        let reach = len + p;
        // The test that nearly always fails goes first.
        if len >= p * (self.min_repeats - 1)
            && self.hit.is_none()
            && reach > self.matched_reach.max(p - 1)
            && self.chars - before >= self.min_unit_chars
        {
            self.hit = Some((p, 1 + len / p));
        }
        self.matched_reach = self.matched_reach.max(reach);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn detect(text: &str) -> Option<LoopReport> {
        let mut d = LoopDetector::new(&LoopParams::default());
        d.push(text);
        d.found()
    }

    /// Feeds `text` cut at the given character offsets; every report must come once.
    fn detect_chunked(text: &str, cuts: &[usize]) -> Option<LoopReport> {
        let chars: Vec<char> = text.chars().collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
        cuts.sort_unstable();
        let mut d = LoopDetector::new(&LoopParams::default());
        let mut at = 0;
        let mut reports = 0;
        for cut in cuts.into_iter().chain([chars.len()]) {
            let piece: String = chars[at..cut.max(at)].iter().collect();
            at = cut.max(at);
            reports += usize::from(d.push(&piece).is_some());
        }
        assert!(reports <= 1, "reported {reports} times");
        d.found()
    }

    fn tea(cycles: usize) -> String {
        let block = [
            "Identify the question: what does the user want to know?",
            "Identify the answer: what would a good answer contain?",
            "Create a step-by-step process to get from one to the other.",
        ];
        let mut s = String::from("Here is how to make tea, step by step:\n\n");
        for i in 0..cycles * 3 {
            s.push_str(&format!("{}. {}\n", i + 1, block[i % 3]));
        }
        s
    }

    fn spiral(times: usize) -> String {
        let mut s = String::from("The type you want is ");
        for _ in 0..times {
            s.push_str("std::rust::RustType that is a ");
        }
        s
    }

    fn block(times: usize) -> String {
        let mut s = String::from("Let me think about this.\n\n");
        for _ in 0..times {
            s.push_str(
                "The water must be hot.\nThe tea must steep.\nThen we pour it into the cup.\n\n",
            );
        }
        s
    }

    const NUMBERED: &str = "To make tea:\n\n1. Boil water in a kettle.\n2. Warm the pot with a splash of hot water.\n3. Add one teaspoon of tea per cup.\n4. Pour the boiling water over the tea.\n5. Let it steep for three to five minutes.\n6. Stir once.\n7. Strain into cups.\n8. Add milk if you like.\n9. Add sugar if you like.\n10. Add lemon if you like.\n11. Serve hot.\n12. Enjoy.\n";

    const SIMILAR: &str = "1. Add 1 cup of water to the pot.\n2. Add 2 cups of water to the pot.\n3. Add 3 cups of water to the pot.\n4. Add 4 cups of water to the pot.\n5. Add 5 cups of water to the pot.\n6. Add 6 cups of water to the pot.\n- Check step 1 again.\n- Check step 2 again.\n- Check step 3 again.\n- Check step 4 again.\n- Check step 5 again.\n";

    const BULLETS: &str = "## Options\n\n- **Black tea**: strong, good with milk.\n- **Green tea**: lighter, no milk.\n- **Oolong**: between the two.\n- **White tea**: the most delicate.\n- **Herbal**: not tea at all, strictly.\n  - *Mint*: fresh leaves work best.\n  - *Chamomile*: dried flowers.\n  - *Rooibos*: a red bush from South Africa.\n";

    const CODE: &str = "fn main() {\n    for i in 0..10 {\n        if i % 2 == 0 {\n            match i {\n                0 => {\n                    println!(\"zero\");\n                }\n                _ => {\n                    println!(\"{i}\");\n                }\n            }\n        }\n    }\n}\n\n(defun f (x)\n  (if (> x 0)\n      (g (h (i x)))\n      (k (l (m x)))))\n\nclass A\n  def b\n    if c\n      d\n    end\n  end\nend\n\nconst v = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];\nconst w = [None, None, None, None, None, None, None];\n}\n}\n}\n}\n)\n)\n)\n)\n\n\n\n\nend\nend\nend\nend\nend\n";

    const TABLE: &str = "| Feature | Basic | Pro | Team | Enterprise |\n|---|---|---|---|---|\n| Export | Yes | Yes | Yes | Yes |\n| Import | Yes | Yes | Yes | Yes |\n| Sync | Not available | Not available | Not available | Yes |\n| Audit | Not available | Not available | Not available | Not available |\n| Support | Not available | Not available | Not available | Not available |\n| SSO | Not available | Not available | Not available | Not available |\n|---|---|---|---|---|\n";

    const POEM: &str = "The kettle sings upon the stove,\nthe morning light is thin.\nOh pour the tea, my love, my love,\nand let the day begin.\nOh pour the tea, my love, my love,\nand let the day begin.\n\nThe cups are warm, the leaves unfold,\nthe steam is curling high.\nOh pour the tea, my love, my love,\nbefore the day goes by.\n";

    const PROSE: &str = "Tea is made by steeping cured leaves in hot water. Green tea wants cooler water than black tea, and it turns bitter when it steeps too long. Black tea is forgiving: boiling water and four minutes work for most of it. Some people add milk, some lemon, and some neither; the tea does not mind. Ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha ha. Very, very, very, very, very good. No, no, no, no, no.";

    #[test]
    fn ordinary_texts_never_fire() {
        for (name, text) in [
            ("numbered", NUMBERED),
            ("similar", SIMILAR),
            ("bullets", BULLETS),
            ("code", CODE),
            ("table", TABLE),
            ("poem", POEM),
            ("prose", PROSE),
            ("readme", include_str!("../../../README.md")),
            (
                "architecture",
                include_str!("../../../docs/ARCHITECTURE.md"),
            ),
            ("config", include_str!("../../../configs/default.toml")),
            ("keymap", include_str!("../../../configs/keymap.toml")),
            ("code file", include_str!("../orchestrator/turn.rs")),
            ("this file", include_str!("loops.rs")),
        ] {
            assert_eq!(detect(text), None, "{name} fired");
        }
    }

    #[test]
    fn a_numbered_block_repeating_fires_as_a_line_cycle() {
        assert_eq!(detect(&tea(3)), None, "three cycles are not yet a loop");
        assert_eq!(
            detect(&tea(4)),
            Some(LoopReport {
                unit: LoopUnit::Lines,
                period: 3,
                repeats: 4
            })
        );
    }

    #[test]
    fn a_phrase_repeating_in_one_line_fires_as_a_word_cycle() {
        let r = detect(&spiral(30)).unwrap();
        assert_eq!((r.unit, r.period), (LoopUnit::Words, 4));
        assert_eq!(r.repeats, 30, "repeats are counted on after the report");
        let mut d = LoopDetector::new(&LoopParams::default());
        let first = d.push(&spiral(4)).unwrap();
        assert_eq!(first.repeats, 4);
        assert_eq!(
            d.push("std::rust::RustType that is a "),
            None,
            "reported once"
        );
        assert_eq!(d.found().unwrap().repeats, 5);
    }

    #[test]
    fn a_block_of_lines_repeating_fires() {
        let r = detect(&block(6)).unwrap();
        assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Lines, 3, 6));
    }

    #[test]
    fn an_inline_numbered_cycle_fires_as_words() {
        let mut s = String::new();
        for i in 0..12 {
            let step = [
                "Identify the question",
                "Identify the answer",
                "Create a step-by-step process",
            ][i % 3];
            s.push_str(&format!("{}. {step} ", i + 1));
        }
        let r = detect(&s).unwrap();
        assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Words, 10, 4));
    }

    #[test]
    fn a_short_unit_needs_enough_characters() {
        assert_eq!(detect(&"I think. ".repeat(50)), None);
        assert_eq!(detect(&"Wait.\n".repeat(50)), None);
        assert!(detect(&"Wait, let me check that again.\n".repeat(4)).is_some());
    }

    #[test]
    fn markers_are_recognised() {
        for m in ["-", "*", "1.", "12)", "3:", "(4)", "a)", "###", ">"] {
            assert!(is_marker(m), "{m}");
        }
        for m in [
            "1", "a", "a.", "12345.", "1.5", "--", "(4", "Step", "#######",
        ] {
            assert!(!is_marker(m), "{m}");
        }
    }

    #[test]
    fn memory_stays_bounded_on_a_long_line() {
        let mut d = LoopDetector::new(&LoopParams::default());
        for _ in 0..10_000 {
            d.push("abcdefghij");
        }
        assert!(d.line.lead.len() <= MARKER_MAX * 4);
        assert!(d.word.raw.len() <= MARKER_MAX * 4);
        assert_eq!(d.found(), None);
    }

    proptest! {
        #[test]
        fn loops_fire_however_the_stream_is_cut(
            cuts in proptest::collection::vec(0usize..5000, 0..40),
            which in 0usize..3,
        ) {
            let text = [tea(5), spiral(8), block(5)][which].clone();
            let whole = detect(&text);
            prop_assert!(whole.is_some());
            prop_assert_eq!(detect_chunked(&text, &cuts), whole);
        }

        #[test]
        fn ordinary_texts_stay_quiet_however_cut(
            cuts in proptest::collection::vec(0usize..5000, 0..40),
            which in 0usize..6,
        ) {
            let text = [NUMBERED, SIMILAR, BULLETS, CODE, TABLE, POEM][which];
            prop_assert_eq!(detect_chunked(text, &cuts), None);
        }

        #[test]
        fn cycles_find_what_a_scan_of_every_period_finds(
            items in proptest::collection::vec((0usize..6, 1u64..30), 0..400),
            max_period in 1usize..20,
            min_repeats in 2usize..5,
            min_unit in 0u64..40,
        ) {
            // Six items, four of them sharing a table slot, so the collision path runs too.
            let hashes = colliding_hashes(max_period);
            let mut cycles = Cycles::new(max_period);
            let mut naive = Naive::new(max_period);
            for (k, chars) in items {
                let h = hashes[k];
                prop_assert_eq!(
                    cycles.push(h, chars, min_repeats, min_unit),
                    naive.push(h, chars, min_repeats, min_unit)
                );
                for period in 1..=max_period {
                    prop_assert_eq!(cycles.repeats(period), naive.repeats(period));
                }
            }
        }
    }

    /// Six hashes: four with one table slot between them, two others.
    fn colliding_hashes(max_period: usize) -> [u64; 6] {
        let probe = Cycles::new(max_period);
        let slot = |h: u64| h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - probe.table_bits);
        let mut same = Vec::new();
        let mut h = 1u64;
        while same.len() < 4 {
            if slot(h) == slot(1) {
                same.push(h);
            }
            h += 1;
        }
        [
            same[0],
            same[1],
            same[2],
            same[3],
            0xdead_beef,
            0x1234_5678_9abc,
        ]
    }

    /// The cycle finder as first written: every period looked at for every item.
    struct Naive {
        recent: Vec<(u64, u64)>,
        count: u64,
        runs: Vec<usize>,
        at: Vec<u64>,
        chars: u64,
    }

    impl Naive {
        fn new(max_period: usize) -> Self {
            Self {
                recent: vec![(0, 0); max_period.max(1)],
                count: 0,
                runs: vec![0; max_period],
                at: vec![0; max_period],
                chars: 0,
            }
        }

        fn push(
            &mut self,
            hash: u64,
            chars: u64,
            min_repeats: usize,
            min_unit: u64,
        ) -> Option<(usize, usize)> {
            self.chars += chars;
            let n = self.count;
            let slots = self.recent.len() as u64;
            let len = n.min(self.runs.len() as u64) as usize;
            let mut matched_reach = 0;
            let mut hit = None;
            for p in 1..=len {
                let (h, before) = self.recent[((n - p as u64) % slots) as usize];
                if h != hash {
                    continue;
                }
                let i = p - 1;
                let run = if self.at[i] == n { self.runs[i] + 1 } else { 1 };
                self.runs[i] = run;
                self.at[i] = n + 1;
                let reach = run + p;
                if hit.is_none()
                    && reach > matched_reach.max(p - 1)
                    && run >= p * (min_repeats - 1)
                    && self.chars - before >= min_unit
                {
                    hit = Some((p, 1 + run / p));
                }
                matched_reach = matched_reach.max(reach);
            }
            self.recent[(n % slots) as usize] = (hash, self.chars);
            self.count = n + 1;
            hit
        }

        fn repeats(&self, period: usize) -> usize {
            let i = period - 1;
            if self.at[i] == self.count {
                1 + self.runs[i] / period
            } else {
                1
            }
        }
    }

    #[test]
    fn a_long_sentence_repeating_fires_as_a_long_word_cycle() {
        let sentence = "First we boil the water, then we warm the pot, and then we add \
                        the leaves and wait for them. ";
        let r = detect(&format!("Let me see. {}", sentence.repeat(4))).unwrap();
        assert_eq!((r.unit, r.period, r.repeats), (LoopUnit::Words, 20, 4));
        let numbered: String = (0..2000)
            .map(|i| format!("step {i} weighs the option against the budget. "))
            .collect();
        assert_eq!(detect(&numbered), None);
    }

    /// Tokens for random texts: words, markers, table cells, punctuation, and letters whose
    /// lower case is longer than they are or differs inside a word.
    const TOKENS: &[&str] = &[
        "the",
        "The",
        "tea",
        "water",
        "hot.",
        "Wait,",
        "let",
        "me",
        "check",
        "1.",
        "12)",
        "(4)",
        "a)",
        "-",
        "*",
        "•",
        "—",
        "##",
        ">",
        "|",
        "|---|",
        "é",
        "École",
        "ß",
        "STRASSE",
        "İstanbul",
        "🚀",
        "x🚀y",
        "(hot),",
        "...",
        "42",
        "Σίσυφος",
        "ΣΑΣ",
        "ﬁne",
        "abcdefghij",
        "#######",
        "######",
        "(1234)",
        "(12345)",
        "1234.",
        "→",
        "\u{1}",
    ];
    const GAPS: &[&str] = &[
        " ", " ", " ", "\n", "\n\n", "  ", "\t", "\r\n", " \n ", "\u{b}", "\u{c}", "\u{85}",
        "\u{a0}", "\u{2028}", "\u{3000}",
    ];

    /// Texts made of a few units (runs of tokens and gaps), each written out some times in
    /// a row, so that loops of lines and of words, long and short, come up often.
    fn texts() -> impl Strategy<Value = String> {
        let unit = proptest::collection::vec((0..TOKENS.len(), 0..GAPS.len()), 1..14);
        let plan = proptest::collection::vec((0usize..4, 1usize..7), 0..24);
        (proptest::collection::vec(unit, 1..4), plan).prop_map(|(units, plan)| {
            let mut text = String::new();
            for (u, times) in plan {
                for _ in 0..times {
                    for &(t, g) in &units[u % units.len()] {
                        text.push_str(TOKENS[t]);
                        text.push_str(GAPS[g]);
                    }
                }
            }
            text
        })
    }

    fn params() -> impl Strategy<Value = LoopParams> {
        (0u32..6, 0u32..14, 0u32..30, 0u32..40, 0u32..7).prop_map(
            |(min_repeats, max_period_lines, max_period_words, min_unit_chars, min_line_chars)| {
                LoopParams {
                    min_repeats,
                    max_period_lines,
                    max_period_words,
                    min_unit_chars,
                    min_line_chars,
                    ..LoopParams::default()
                }
            },
        )
    }

    /// The detector as a plain reading of its rules: the text cut into lines and words as
    /// strings (a word at every whitespace, a line at every line feed, the line first), each
    /// item numbered by its normalised text and handed to [`Naive`]. Returns, for each item,
    /// the byte offset of the character that ended it and the loop found as of that item.
    fn plain(text: &str, params: &LoopParams) -> Vec<(usize, Option<LoopReport>)> {
        let lower = |s: &str| -> String { s.chars().flat_map(char::to_lowercase).collect() };
        let min_repeats = (params.min_repeats as usize).max(2);
        let min_unit = u64::from(params.min_unit_chars);
        let mut ids = std::collections::HashMap::new();
        let mut id = |s: String| {
            let next = ids.len() as u64;
            *ids.entry(s).or_insert(next)
        };
        let mut lines = Naive::new(params.max_period_lines as usize);
        let mut words = Naive::new(params.max_period_words as usize);
        let mut found: Option<LoopReport> = None;
        let note = |found: &mut Option<LoopReport>,
                    naive: &Naive,
                    unit: LoopUnit,
                    hit: Option<(usize, usize)>| match found {
            None => {
                *found = hit.map(|(period, repeats)| LoopReport {
                    unit,
                    period,
                    repeats,
                })
            }
            Some(f) if f.unit == unit => f.repeats = f.repeats.max(naive.repeats(f.period)),
            Some(_) => {}
        };
        let mut events = Vec::new();
        let (mut line_start, mut token_start) = (0, 0);
        for (at, c) in text.char_indices() {
            if !c.is_whitespace() {
                continue;
            }
            let line = &text[line_start..at];
            let table = line.trim_start().starts_with('|');
            let token = &text[token_start..at];
            token_start = at + c.len_utf8();
            let mut word = None;
            if !token.is_empty() && !is_marker(token) && !table {
                let l = lower(token);
                let trimmed = l.trim_matches(|c: char| !c.is_alphanumeric());
                if !trimmed.is_empty() {
                    word = Some((trimmed.to_string(), trimmed.chars().count() as u64 + 1));
                }
            }
            if c == '\n' {
                line_start = at + 1;
                let content: Vec<&str> = line
                    .split_whitespace()
                    .skip_while(|t| is_marker(t))
                    .collect();
                let content = lower(&content.join(" "));
                let alnum = content.chars().filter(|c| c.is_alphanumeric()).count();
                if !content.is_empty() && alnum >= params.min_line_chars as usize {
                    let chars = content.chars().count() as u64;
                    let hit =
                        lines.push(id(format!("line {content}")), chars, min_repeats, min_unit);
                    note(&mut found, &lines, LoopUnit::Lines, hit);
                }
            }
            if let Some((word, chars)) = word {
                let hit = words.push(id(format!("word {word}")), chars, min_repeats, min_unit);
                note(&mut found, &words, LoopUnit::Words, hit);
            }
            events.push((at, found));
        }
        events
    }

    /// Six items, the first with hash 0, for sequences fed to [`Cycles`] directly.
    const ITEMS: [u64; 6] = [
        0,
        0x1111,
        0x2222_0000_0000,
        0x3333,
        0xdead_beef,
        0x0123_4567_89ab,
    ];

    /// Sequences of items that repeat with periods short and long, each copy of a unit
    /// possibly with one item changed.
    fn periodic() -> impl Strategy<Value = Vec<(usize, u64)>> {
        let unit = proptest::collection::vec(0usize..5, 1..24);
        let plan = proptest::collection::vec((0usize..4, 1usize..7, 0usize..40), 0..24);
        (proptest::collection::vec(unit, 1..4), plan).prop_map(|(units, plan)| {
            let mut items = Vec::new();
            for (u, times, change) in plan {
                let unit = &units[u % units.len()];
                for _ in 0..times {
                    for (i, &k) in unit.iter().enumerate() {
                        let k = if i == change { 5 } else { k };
                        items.push((k, 1 + (k as u64 * 7 + i as u64) % 11));
                    }
                }
            }
            items
        })
    }

    proptest! {
        #[test]
        fn the_detector_finds_what_a_plain_reading_finds_however_cut(
            text in texts(),
            params in params(),
            cuts in proptest::collection::vec(0usize..4000, 0..30),
        ) {
            let events = plain(&text, &params);
            let mut bounds: Vec<usize> = cuts
                .iter()
                .map(|c| c % (text.len() + 1))
                .filter(|&c| text.is_char_boundary(c))
                .chain([text.len()])
                .collect();
            bounds.sort_unstable();
            let mut d = LoopDetector::new(&params);
            let mut at = 0;
            for end in bounds {
                let before = d.found();
                let reported = d.push(&text[at..end]);
                at = end;
                let expected = events
                    .iter()
                    .take_while(|(offset, _)| *offset < end)
                    .last()
                    .and_then(|(_, found)| *found);
                prop_assert_eq!(d.found(), expected);
                prop_assert_eq!(reported, expected.filter(|_| before.is_none()));
            }
        }

        #[test]
        fn cycles_of_any_gram_and_table_find_what_a_scan_of_every_period_finds(
            items in periodic(),
            max_period in 0usize..30,
            gram in 1usize..11,
            table_bits in 1u32..5,
            base in 0usize..3,
            min_repeats in 2usize..5,
            min_unit in 0u64..40,
        ) {
            // Tiny tables put most grams in one slot, weak gram hashes make equal hashes of
            // different grams, gram 1 chains every period.
            let base = [0, 1, GRAM_BASE][base];
            let mut cycles = Cycles::with_gram(max_period, gram, table_bits, base);
            let mut usual = Cycles::new(max_period);
            let mut naive = Naive::new(max_period);
            for (k, chars) in items {
                let h = ITEMS[k];
                let expected = naive.push(h, chars, min_repeats, min_unit);
                prop_assert_eq!(cycles.push(h, chars, min_repeats, min_unit), expected);
                prop_assert_eq!(usual.push(h, chars, min_repeats, min_unit), expected);
                for period in 1..=max_period {
                    prop_assert_eq!(cycles.repeats(period), naive.repeats(period));
                    prop_assert_eq!(usual.repeats(period), naive.repeats(period));
                }
            }
        }

        #[test]
        fn markers_are_short_and_end_in_markup(token in "[-*+>#().:ab0-9•·‣–—→é]{1,9}") {
            // What `Head::is_marker` relies on to look at few tokens.
            if is_marker(&token) {
                prop_assert!(token.len() <= MARKER_BYTES, "{}", token);
                prop_assert!(
                    matches!(
                        token.as_bytes().last(),
                        Some(b'-' | b'*' | b'+' | b'>' | b'#' | b'.' | b')' | b':' | 0x80..)
                    ),
                    "{}",
                    token
                );
            }
        }
    }
}

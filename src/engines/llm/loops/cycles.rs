//! The cycle finder under [`super::LoopDetector`]: the latest items of a stream and the runs
//! of every period, kept so that a common item costs no more than a rare one.

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
pub(super) struct Cycles {
    /// The latest items in a ring indexed by position modulo its length: a power of two
    /// that holds the window and the gram before its oldest item.
    ring: Vec<Item>,
    mask: u64,
    /// 1 + position of the latest item whose gram hash has these top bits (0: none).
    table: Vec<u64>,
    pub(super) table_bits: u32,
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
    /// `recent[k]`: the hash of the item `k + 1` back, for the short periods to be compared
    /// all at once.
    recent: [u64; RECENT],
}

/// Items whose hashes [`Cycles`] keeps in a row of their own.
const RECENT: usize = 8;

/// Items per gram: periods under it are compared item by item, longer ones gram by gram.
pub(super) const GRAM: usize = 8;

/// The multiplier of the rolling gram hash (odd, with well mixed bits).
pub(super) const GRAM_BASE: u64 = 0xff51_afd7_ed55_8ccd;

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
    pub(super) fn new(max_period: usize) -> Self {
        // Eight table entries per item in the window keep the chains short.
        let table_bits = (max_period.max(1) * 8)
            .next_power_of_two()
            .trailing_zeros()
            .max(6);
        Self::with_gram(max_period, GRAM, table_bits, GRAM_BASE)
    }

    /// `gram_base` 0 or 1 make weak gram hashes (the last item; the sum of the items), which
    /// tests use to see that grams are told apart item by item all the same.
    pub(super) fn with_gram(
        max_period: usize,
        gram: usize,
        table_bits: u32,
        gram_base: u64,
    ) -> Self {
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
            recent: [0; RECENT],
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
    pub(super) fn push(
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
        // The periods are visited shortest first: those under a gram one by one, the first
        // few compared all at once (they seldom match)…
        let short = window.min(gram - 1) as usize;
        let mut matches = self
            .recent
            .iter()
            .enumerate()
            .fold(0u32, |m, (k, &h)| m | (u32::from(h == hash) << k));
        matches &= (1u32 << short.min(RECENT)) - 1;
        while matches != 0 {
            let p = matches.trailing_zeros() as usize + 1;
            matches &= matches - 1;
            let end = self.item(n - p as u64).end;
            scan.visit(p, end, &mut self.runs[p - 1], 1);
        }
        for p in RECENT + 1..=short {
            let item = *self.item(n - p as u64);
            if item.hash == hash {
                scan.visit(p, item.end, &mut self.runs[p - 1], 1);
            }
        }
        self.recent.copy_within(..RECENT - 1, 1);
        self.recent[0] = hash;
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
    pub(super) fn repeats(&self, period: usize) -> usize {
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

//! Distinct terms and their counts, as a node's text is read for the index.

use std::cell::RefCell;
use std::hash::BuildHasher;

use super::TermHasher;

/// Distinct terms of a text and how often each occurs: the terms one after another in one
/// string, and a table holding, per term, where it lies there and its count. A lookup reads
/// the table and the term itself; a new term costs no allocation of its own; and clearing
/// the table for the next text keeps every buffer.
#[derive(Default)]
pub(super) struct TermTable {
    words: String,
    table: hashbrown::HashTable<Entry>,
}

/// One distinct term of a [`TermTable`]: the top half of its hash (most other terms that
/// land in its probe group are told apart by it without reading their bytes), its place in
/// `words` and its count.
#[derive(Clone, Copy)]
struct Entry {
    tag: u32,
    len: u32,
    count: u32,
    start: usize,
}

impl Entry {
    fn term<'w>(&self, words: &'w str) -> &'w str {
        words
            .get(self.start..self.start + self.len as usize)
            .unwrap_or("")
    }
}

thread_local! {
    /// The table [`TermTable::with_spare`] lends, kept between nodes.
    static SPARE: RefCell<TermTable> = RefCell::default();
}

/// A table that grew past this many terms (one huge text) is not kept for the next.
const KEEP_TERMS: usize = 1 << 16;

fn hash(term: &str) -> u64 {
    TermHasher::default().hash_one(term)
}

impl TermTable {
    /// Runs `f` on this thread's spare table, cleared: an importer counts the terms of
    /// hundreds of thousands of nodes, and its table and buffers then grow once.
    pub(super) fn with_spare<R>(f: impl FnOnce(&mut TermTable) -> R) -> R {
        SPARE.with(|spare| match spare.try_borrow_mut() {
            Ok(mut table) => {
                table.clear();
                let out = f(&mut table);
                if table.table.len() > KEEP_TERMS {
                    *table = TermTable::default();
                }
                out
            }
            // Only reached if `f` itself prepared a text: it gets a table of its own.
            Err(_) => f(&mut TermTable::default()),
        })
    }

    fn clear(&mut self) {
        self.words.clear();
        self.table.clear();
    }

    /// Counts one occurrence of `term`.
    pub(super) fn add(&mut self, term: &str) {
        let hash = hash(term);
        let tag = (hash >> 32) as u32;
        let words = &self.words;
        let found = self
            .table
            .find_mut(hash, |e| e.tag == tag && e.term(words) == term);
        match found {
            Some(e) => e.count += 1,
            None => {
                let start = self.words.len();
                self.words.push_str(term);
                let entry = Entry {
                    tag,
                    len: term.len() as u32,
                    count: 1,
                    start,
                };
                // Growing the table hashes its terms again (rarely: it doubles).
                let words = &self.words;
                self.table
                    .insert_unique(hash, entry, |e| self::hash(e.term(words)));
            }
        }
    }

    /// The terms with their counts, in no particular order (the same for the same text).
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u32)> + '_ {
        self.table.iter().map(|e| (e.term(&self.words), e.count))
    }

    /// The terms with their counts, sorted by term. They are ordered by their first eight
    /// bytes as one number first, and only terms that share those compare their bytes:
    /// sorting a long trace's hundred thousand terms by comparing strings was most of the
    /// wait for its words at the end of a turn.
    pub(super) fn sorted(&self) -> Vec<(&str, u32)> {
        let mut keyed: Vec<(u64, &str, u32)> = self
            .iter()
            .map(|(term, count)| (prefix_key(term), term, count))
            .collect();
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        keyed
            .into_iter()
            .map(|(_, term, count)| (term, count))
            .collect()
    }
}

/// A term's first eight bytes as a big-endian number, zero-padded: `prefix_key(a) <
/// prefix_key(b)` implies `a < b` (a shorter term that is a prefix of a longer one pads
/// with zeros, the least byte), and equal keys leave the order to the rest of the bytes.
fn prefix_key(term: &str) -> u64 {
    let mut head = [0u8; 8];
    let n = term.len().min(8);
    head[..n].copy_from_slice(&term.as_bytes()[..n]);
    u64::from_be_bytes(head)
}

#[cfg(test)]
mod tests {
    use super::TermTable;

    #[test]
    fn sorted_is_the_order_of_the_terms_themselves() {
        let words = [
            "b",
            "abcdefgh",
            "abcdefghi",
            "abcdefg",
            "abcdefgh",
            "a",
            "ab",
            "é",
            "zz",
            "abcdefgz",
            "abcdefgha",
            "1",
            "10",
            "9",
            "äpfel",
            "abcdefg",
        ];
        let mut table = TermTable::default();
        for w in words {
            table.add(w);
        }
        let mut expected: Vec<(&str, u32)> = table.iter().collect();
        expected.sort_by(|a, b| a.0.cmp(b.0));
        assert_eq!(table.sorted(), expected);
        assert_eq!(
            table.sorted().iter().find(|t| t.0 == "abcdefgh"),
            Some(&("abcdefgh", 2))
        );
    }
}

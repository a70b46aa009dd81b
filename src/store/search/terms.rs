//! Distinct terms and their counts, as a node's text is read for the index.

use std::cell::RefCell;
use std::hash::BuildHasher;

use super::TermHasher;

/// Distinct terms of a text and how often each occurs: the terms one after another in one
/// string, a list of where each lies and its count (in the order first seen), and a table
/// from a term's hash to its place in that list. A lookup reads the table and the term
/// itself only when its hash matches; a new term costs no allocation of its own; growing
/// the table hashes nothing again; and clearing it for the next text keeps every buffer.
/// Its terms are read through the list, so a table grown by one large text and kept for
/// the next costs nothing to walk.
#[derive(Default)]
pub(super) struct TermTable {
    words: String,
    /// Per term, first seen first: where it lies in `words`, its length and its count.
    terms: Vec<(usize, u32, u32)>,
    /// A term's hash and its index in `terms`.
    table: hashbrown::HashTable<(u64, u32)>,
}

thread_local! {
    /// The table [`TermTable::with_spare`] lends, kept between nodes.
    static SPARE: RefCell<TermTable> = RefCell::default();
}

/// A table that grew past this many terms (one huge text) is not kept for the next.
const KEEP_TERMS: usize = 1 << 16;

impl TermTable {
    /// Runs `f` on this thread's spare table, cleared: an importer counts the terms of
    /// hundreds of thousands of nodes, and its table and buffers then grow once.
    pub(super) fn with_spare<R>(f: impl FnOnce(&mut TermTable) -> R) -> R {
        SPARE.with(|spare| match spare.try_borrow_mut() {
            Ok(mut table) => {
                table.clear();
                let out = f(&mut table);
                if table.terms.len() > KEEP_TERMS {
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
        self.terms.clear();
        self.table.clear();
    }

    fn term(&self, i: usize) -> &str {
        let (start, len, _) = self.terms[i];
        self.words.get(start..start + len as usize).unwrap_or("")
    }

    /// Counts one occurrence of `term`.
    pub(super) fn add(&mut self, term: &str) {
        let hash = TermHasher::default().hash_one(term);
        let (words, terms) = (&self.words, &mut self.terms);
        let found = self.table.find(hash, |&(h, i)| {
            let (start, len, _) = terms[i as usize];
            h == hash && words.get(start..start + len as usize) == Some(term)
        });
        match found {
            Some(&(_, i)) => terms[i as usize].2 += 1,
            None => {
                let i = self.terms.len() as u32;
                self.terms.push((self.words.len(), term.len() as u32, 1));
                self.words.push_str(term);
                self.table.insert_unique(hash, (hash, i), |&(h, _)| h);
            }
        }
    }

    /// The terms with their counts, in the order first seen.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u32)> + '_ {
        (0..self.terms.len()).map(|i| (self.term(i), self.terms[i].2))
    }

    /// The terms with their counts, sorted by term. They are ordered by their first eight
    /// bytes as one number first, and only terms that share those compare their bytes:
    /// sorting a long trace's hundred thousand terms by comparing strings was most of the
    /// wait for its words at the end of a turn. What is sorted is each term's key and place
    /// in the list, sixteen bytes a term.
    pub(super) fn sorted(&self) -> impl ExactSizeIterator<Item = (&str, u32)> + '_ {
        let mut keyed: Vec<(u64, u32)> = (0..self.terms.len())
            .map(|i| (prefix_key(self.term(i)), i as u32))
            .collect();
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| self.term(a.1 as usize).cmp(self.term(b.1 as usize)))
        });
        keyed.into_iter().map(|(_, i)| {
            let i = i as usize;
            (self.term(i), self.terms[i].2)
        })
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
        let sorted: Vec<(&str, u32)> = table.sorted().collect();
        assert_eq!(sorted, expected);
        assert_eq!(
            sorted.iter().find(|t| t.0 == "abcdefgh"),
            Some(&("abcdefgh", 2))
        );
    }
}

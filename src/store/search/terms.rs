//! Distinct terms and their counts, as a node's text is read for the index.

use std::cell::RefCell;
use std::hash::{BuildHasher, BuildHasherDefault};

use super::TermHasher;

/// Distinct terms of a text and how often each occurs: the terms one after another in one
/// string, a list of where each lies (in the order first seen), and a table from a term's
/// hash to its place in that list. A lookup reads the table and the term itself; a new term
/// costs no allocation of its own; growing the table does not hash the terms again; and
/// clearing it for the next text keeps every buffer.
#[derive(Default)]
pub(super) struct TermTable {
    words: String,
    /// Per term, first seen first: where it lies in `words`, and its count.
    terms: Vec<(usize, usize, u32)>,
    /// Hash of a term and its index in `terms`.
    table: hashbrown::HashTable<(u64, usize)>,
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
        let (start, end, _) = self.terms[i];
        self.words.get(start..end).unwrap_or("")
    }

    /// Counts one occurrence of `term`.
    pub(super) fn add(&mut self, term: &str) {
        let hash = BuildHasherDefault::<TermHasher>::default().hash_one(term);
        let (words, terms) = (&self.words, &mut self.terms);
        let found = self.table.find(hash, |&(h, i)| {
            h == hash && words.get(terms[i].0..terms[i].1) == Some(term)
        });
        match found {
            Some(&(_, i)) => terms[i].2 += 1,
            None => {
                let start = self.words.len();
                self.words.push_str(term);
                self.terms.push((start, self.words.len(), 1));
                let i = self.terms.len() - 1;
                self.table.insert_unique(hash, (hash, i), |&(h, _)| h);
            }
        }
    }

    /// The terms with their counts, in the order first seen.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = (&str, u32)> + '_ {
        (0..self.terms.len()).map(|i| (self.term(i), self.terms[i].2))
    }

    /// The terms with their counts, sorted by term.
    pub(super) fn sorted(&self) -> Vec<(&str, u32)> {
        let mut terms: Vec<(&str, u32)> = self.iter().collect();
        terms.sort_unstable_by(|a, b| a.0.cmp(b.0));
        terms
    }
}

//! What the store's own records give its dictionary: samples to train it on for a store
//! filled without one ([`DictFeed`] takes them), and the rewrite of the records written
//! before it with it (`doctor --compact`).

use std::ops::Bound;

use super::dict::{DictFeed, RecordDict, SAMPLE_BYTES, Samples};
use super::kv::ReadableTable;
use super::tables::NODES;
use super::{Result, Store, codec};

/// Records a new import looks at in a store without a dictionary for samples of its own: a
/// store filled a session at a time (a hook's import, `ask`) never had one import with
/// a quarter megabyte of records to train on, and the look stays short on a store of many
/// tiny ones.
const SCAN_RECORDS: usize = 20_000;

impl Store {
    /// Samples of the records already stored (those compressed without a dictionary), for a
    /// store that has none: looks at no more than [`SCAN_RECORDS`] records and reads no more
    /// of each than a sample takes.
    pub(super) fn stored_samples(&self, samples: &mut Samples) -> Result<()> {
        let r = self.db.begin_read()?;
        let Some(table) = r.open_table_if_exists(NODES)? else {
            return Ok(());
        };
        for row in table.iter()?.take(SCAN_RECORDS) {
            if samples.is_full() {
                break;
            }
            let (_, v) = row?;
            if let Some(json) = codec::record_json_start(v.value(), SAMPLE_BYTES) {
                samples.add(&json);
            }
        }
        Ok(())
    }
}

/// Bytes of node records read per transaction by [`Store::recompress_records`]: bounds what
/// a transaction holds and how long another glassbox's writes wait for it.
const RECOMPRESS_BYTES: usize = 8 << 20;

/// What [`Store::recompress_records`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recompressed {
    /// The dictionary the records are compressed with now (`None`: the store has none, and
    /// too few records to train one on).
    pub dict: Option<u32>,
    /// Whether that dictionary was trained just now.
    pub trained: bool,
    /// Records rewritten, and their bytes before and after.
    pub records: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl Store {
    /// Compresses with the store's dictionary the node records written before it had one
    /// (plain, or compressed on their own), training the dictionary first on the records
    /// held when there is none. A record's content is unchanged, so a stop partway loses
    /// nothing: the records rewritten so far are committed, the others are as they were.
    /// `progress` gets the records rewritten so far after each transaction.
    pub fn recompress_records(&self, progress: &dyn Fn(u64)) -> Result<Recompressed> {
        self.recompress_in_batches(RECOMPRESS_BYTES, progress)
    }

    /// [`Store::recompress_records`], reading `batch` bytes of records per transaction.
    pub(super) fn recompress_in_batches(
        &self,
        batch: usize,
        progress: &dyn Fn(u64),
    ) -> Result<Recompressed> {
        let mut done = Recompressed::default();
        let dict = match self.record_dict() {
            Some(dict) => dict,
            None => {
                let mut feed = DictFeed::new(self);
                feed.wait();
                let Some(dict) = feed.take_new() else {
                    return Ok(done);
                };
                self.write(|w| w.put_record_dict(&dict))?;
                done.trained = true;
                dict
            }
        };
        done.dict = Some(dict.id());
        let mut after = None;
        while self.write(|w| w.recompress_some(&dict, batch, &mut after, &mut done))? {
            progress(done.records);
        }
        progress(done.records);
        Ok(done)
    }
}

impl super::Writer<'_> {
    /// Rewrites with `dict` the records that need it among those after `after` (all when
    /// `None`), until `batch` bytes were read; moves `after` on to the last record read and
    /// returns whether any are left.
    fn recompress_some(
        &mut self,
        dict: &RecordDict,
        batch: usize,
        after: &mut Option<[u8; 16]>,
        done: &mut Recompressed,
    ) -> Result<bool> {
        let mut table = self.txn.open_table(NODES)?;
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let (mut rewrites, mut read, mut more) = (Vec::new(), 0, false);
        for row in table.range::<[u8; 16]>((start, Bound::Unbounded))? {
            let (key, value) = row?;
            let (key, value) = (key.value(), value.value());
            *after = Some(key);
            read += value.len();
            if let Some(packed) = codec::recompressed_with_dict(value, dict) {
                done.bytes_before += value.len() as u64;
                done.bytes_after += packed.len() as u64;
                rewrites.push((key, packed));
            }
            if read >= batch {
                more = true;
                break;
            }
        }
        for (key, packed) in &rewrites {
            table.insert(key, packed.as_slice())?;
        }
        done.records += rewrites.len() as u64;
        Ok(more)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::store::dict::tests::{forgetting, nodes, stored_format};
    use crate::store::testing::{Fixture, on_every_arm};
    use crate::store::{Node, Session, SessionSource};

    on_every_arm!(records_written_before_the_dictionary_are_recompressed_with_it);

    fn records_written_before_the_dictionary_are_recompressed_with_it(fx: &Fixture) {
        let _alone = forgetting();
        let store = fx.open();
        let s = Session::new("old", SessionSource::ClaudeCode);
        let all = nodes(&s, 400);
        let write = |nodes: &[Node]| {
            store
                .write(|w| {
                    w.put_session(&s)?;
                    nodes.iter().try_for_each(|n| w.put_node(n))
                })
                .unwrap();
        };
        // Too few records to train on: nothing is done.
        write(&all[..50]);
        assert_eq!(
            store.recompress_records(&|_| {}).unwrap(),
            Recompressed::default()
        );
        write(&all[50..]);
        let before = store.node_compression().unwrap();
        // Trained on the records held, then each record rewritten with it, a few at a time.
        let seen = std::cell::Cell::new(0);
        let done = store
            .recompress_in_batches(64 << 10, &|n| {
                assert!(n >= seen.get());
                seen.set(n);
            })
            .unwrap();
        let dict = store.record_dict().expect("trained and kept");
        assert_eq!(done.dict, Some(dict.id()));
        assert!(done.trained);
        assert_eq!((done.records, seen.get()), (400, 400));
        let after = store.node_compression().unwrap();
        assert_eq!(after.plain, before.plain);
        assert_eq!(
            (before.without_dict, after.without_dict),
            (before.stored, 0)
        );
        assert_eq!(
            before.stored - after.stored,
            done.bytes_before - done.bytes_after
        );
        assert!(
            after.stored * 10 < before.stored * 9,
            "{} bytes before, {} after",
            before.stored,
            after.stored
        );
        for n in [&all[0], &all[199], &all[399]] {
            assert_eq!(stored_format(&store, n), codec::FORMAT_DICT_JSON);
        }
        assert_eq!(store.session_nodes(s.id).unwrap(), all);
        // Done once: a second run finds nothing left to rewrite.
        let again = store.recompress_records(&|_| {}).unwrap();
        assert_eq!((again.records, again.trained), (0, false));
        assert_eq!(store.node_compression().unwrap().stored, after.stored);
    }
}

//! Compression dictionaries for node records (schema v14, record format 4).
//!
//! Most node records are a few kilobytes of JSON: too little for zstd to learn from, so
//! each one spends most of its compression time building entropy tables and still repeats
//! the field names and phrases every other record has. A dictionary trained on the store's
//! own first records holds those tables and phrases once: compressing gets about a third
//! faster and records about 40% smaller.
//!
//! A store holds its dictionaries in `record_dicts` (keyed by the dictionary's zstd id,
//! which its frames carry) and names the one new records use in `meta`. Nothing is fitted
//! in advance: an import into a store without one trains it, on a thread of its own, on the
//! first quarter megabyte of records, those the store already holds and then those it
//! writes ([`DictFeed`]), and writes it in the transaction of the first records compressed
//! with it. `doctor --compact` rewrites the records from before it with it
//! (`store/recompress.rs`).
//!
//! Dictionaries are known process-wide by id: every store registers its own when it opens,
//! and takes in those another process added since at the start of its transactions
//! (`refresh`; see `Store::read`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};

use super::kv::{Db, ReadableTable};
use super::tables::{META, RECORD_DICTS};
use super::{COMPRESS_ABOVE, Node, Result, Store, StoreError, ZSTD_LEVEL};

/// Record JSON an import gathers before training a dictionary on it. Measured on generated
/// Claude Code histories: a quarter of a megabyte trains in about 23 ms and compresses within
/// 1% of a megabyte's dictionary, which took 55 ms; the records compressed without one while
/// it trains are fewer too.
const TRAIN_BYTES: usize = 256 << 10;
/// Longest part of one record taken as a sample: a huge record would teach little more
/// than its own text.
pub(super) const SAMPLE_BYTES: usize = 16 << 10;
/// Size of a trained dictionary. Measured on 98,000 records of Claude Code sessions: 32,
/// 64 and 112 KiB compress within 2% of each other; the smallest trains fastest.
const DICT_BYTES: usize = 32 << 10;
/// The `meta` key naming the dictionary new records use (its id, u32 little-endian).
const CURRENT_KEY: &str = "record_dict";

/// A dictionary, ready to compress and decompress with.
pub struct RecordDict {
    id: u32,
    bytes: Vec<u8>,
    encoder: zstd::dict::EncoderDictionary<'static>,
    decoder: zstd::dict::DecoderDictionary<'static>,
}

impl std::fmt::Debug for RecordDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordDict")
            .field("id", &self.id)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl RecordDict {
    /// A dictionary from its bytes; `None` for bytes that are not a zstd dictionary with
    /// an id.
    fn new(bytes: Vec<u8>) -> Option<Self> {
        let id = zstd::zstd_safe::get_dict_id(&bytes)?.get();
        Some(Self {
            id,
            encoder: zstd::dict::EncoderDictionary::copy(&bytes, ZSTD_LEVEL),
            decoder: zstd::dict::DecoderDictionary::copy(&bytes),
            bytes,
        })
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(super) fn encoder(&self) -> &zstd::dict::EncoderDictionary<'static> {
        &self.encoder
    }

    pub(super) fn decoder(&self) -> &zstd::dict::DecoderDictionary<'static> {
        &self.decoder
    }
}

/// The dictionaries known in this process, by id.
static KNOWN: LazyLock<RwLock<HashMap<u32, Arc<RecordDict>>>> = LazyLock::new(Default::default);
/// How many times a record named a dictionary not known here. A store whose last
/// `refresh` saw fewer looks for new ones in its next transaction: a count rather than a
/// flag, so that one store's refresh does not hide another store's miss.
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Makes `bytes` known as a dictionary. The one already known under its id is returned when
/// it has the same bytes; different bytes under a known id (two trainings met the one
/// chance in two billion) are refused, as are bytes that are not a dictionary.
pub(super) fn register(bytes: Vec<u8>) -> Result<Arc<RecordDict>> {
    let dict = RecordDict::new(bytes)
        .ok_or_else(|| StoreError::Corrupt("record_dicts: not a zstd dictionary".into()))?;
    let mut known = KNOWN
        .write()
        .map_err(|_| StoreError::Io("the dictionary registry is poisoned".into()))?;
    match known.get(&dict.id) {
        Some(old) if old.bytes == dict.bytes => Ok(old.clone()),
        Some(_) => Err(StoreError::Corrupt(format!(
            "two different record dictionaries have the id {}",
            dict.id
        ))),
        None => {
            let dict = Arc::new(dict);
            known.insert(dict.id, dict.clone());
            Ok(dict)
        }
    }
}

/// The dictionary `id`, if it is known in this process. A miss is remembered, so that the
/// stores' next transactions look for dictionaries another process added.
pub(super) fn find(id: u32) -> Option<Arc<RecordDict>> {
    let found = KNOWN.read().ok()?.get(&id).cloned();
    if found.is_none() {
        MISSES.fetch_add(1, Ordering::Relaxed);
    }
    found
}

/// How many times a record named an unknown dictionary in this process.
pub(super) fn misses() -> u64 {
    MISSES.load(Ordering::Relaxed)
}

/// Registers the dictionaries in `table` (a store's `record_dicts`) not known yet. One that
/// cannot be (see [`register`]) is left out with a warning: only the records compressed
/// with it fail to read.
pub(super) fn refresh(table: &impl ReadableTable<u32, &'static [u8]>) -> Result<()> {
    for entry in table.iter()? {
        let (id, bytes) = entry?;
        let id = id.value();
        if KNOWN.read().is_ok_and(|k| k.contains_key(&id)) {
            continue;
        }
        if let Err(e) = register(bytes.value().to_vec()) {
            tracing::warn!("record dictionary {id} left out: {e}");
        }
    }
    Ok(())
}

/// Registers the dictionaries of a store that just opened; returns the one its new records
/// use, if it names one.
pub(super) fn load(db: &Db) -> Result<Option<Arc<RecordDict>>> {
    let r = db.begin_read()?;
    let Some(table) = r.open_table_if_exists(RECORD_DICTS)? else {
        return Ok(None);
    };
    refresh(&table)?;
    let current = r
        .open_table(META)?
        .get(CURRENT_KEY)?
        .and_then(|v| <[u8; 4]>::try_from(v.value()).ok())
        .map(u32::from_le_bytes);
    Ok(current.and_then(find))
}

impl super::Writer<'_> {
    /// Stores `dict` and makes it the one new records use; the store's handle uses it too
    /// once this transaction has committed.
    pub fn put_record_dict(&mut self, dict: &Arc<RecordDict>) -> Result<()> {
        self.txn
            .open_table(RECORD_DICTS)?
            .insert(dict.id, dict.bytes.as_slice())?;
        self.txn
            .open_table(META)?
            .insert(CURRENT_KEY, dict.id.to_le_bytes().as_slice())?;
        self.new_dict = Some(dict.clone());
        Ok(())
    }
}

/// Record JSON gathered to train a dictionary on: the start of each record, one after
/// another, and each one's length.
#[derive(Default)]
pub(super) struct Samples {
    bytes: Vec<u8>,
    sizes: Vec<usize>,
}

impl Samples {
    /// Takes the start of one record's JSON, unless it is too short to be compressed at all.
    pub(super) fn add(&mut self, json: &[u8]) {
        if json.len() <= COMPRESS_ABOVE || self.is_full() {
            return;
        }
        let take = json.len().min(SAMPLE_BYTES);
        self.bytes.extend_from_slice(&json[..take]);
        self.sizes.push(take);
    }

    pub(super) fn is_full(&self) -> bool {
        self.bytes.len() >= TRAIN_BYTES
    }
}

/// The dictionary an import's records are compressed with: the store's, or, for a store
/// without one, one trained on the first `TRAIN_BYTES` of records: those the store
/// already holds (a store filled by hooks, a session per process), then those the import
/// writes. The training (about 23 ms, once per store) runs on a thread of its own while the
/// import goes on: the records before it is ready go out without a dictionary, as the first
/// ones do.
pub struct DictFeed {
    current: Option<Arc<RecordDict>>,
    /// Trained and in use, not yet handed out to be written ([`DictFeed::take_new`]).
    unsaved: Option<Arc<RecordDict>>,
    /// Records gathered to train on; `None` once there is a dictionary or the training was
    /// started.
    samples: Option<Samples>,
    /// The training under way.
    training: Option<std::thread::JoinHandle<Result<Arc<RecordDict>>>>,
}

impl DictFeed {
    pub fn new(store: &Store) -> Self {
        let current = store.record_dict();
        let mut feed = Self {
            samples: None,
            current,
            unsaved: None,
            training: None,
        };
        if feed.current.is_none() {
            let mut samples = Samples::default();
            // Without them the import trains on its own records alone.
            if let Err(e) = store.stored_samples(&mut samples) {
                tracing::warn!("the stored records could not be sampled: {e}");
            }
            feed.samples = Some(samples);
            feed.train_when_full();
        }
        feed
    }

    /// The store's dictionary only: nothing is trained.
    pub fn existing(store: &Store) -> Self {
        Self {
            current: store.record_dict(),
            unsaved: None,
            samples: None,
            training: None,
        }
    }

    /// The dictionary to compress records with now.
    pub fn dict(&self) -> Option<&RecordDict> {
        self.current.as_deref()
    }

    /// Takes `nodes` (about to be written) as samples while gathering, and starts the
    /// training once there are enough; takes the dictionary in once it is trained, for
    /// `nodes` and the records after them.
    pub fn observe(&mut self, nodes: &[Node]) {
        if let Some(samples) = &mut self.samples {
            for n in nodes {
                if samples.is_full() {
                    break;
                }
                if let Ok(json) = serde_json::to_vec(n) {
                    samples.add(&json);
                }
            }
            self.train_when_full();
        }
        if self.training.as_ref().is_some_and(|t| t.is_finished()) {
            self.wait();
        }
    }

    /// Starts the training once the samples are enough.
    fn train_when_full(&mut self) {
        if !self.samples.as_ref().is_some_and(Samples::is_full) {
            return;
        }
        let Some(Samples { bytes, sizes }) = self.samples.take() else {
            return;
        };
        let train = move || {
            let t0 = std::time::Instant::now();
            let dict = zstd::dict::from_continuous(&bytes, &sizes, DICT_BYTES)
                .map_err(|e| StoreError::Encode(e.to_string()))
                .and_then(register)?;
            tracing::debug!(
                id = dict.id,
                bytes = dict.len(),
                ms = t0.elapsed().as_millis() as u64,
                "record dictionary trained"
            );
            Ok(dict)
        };
        // A process out of threads imports without a dictionary, as it did before this one.
        match std::thread::Builder::new()
            .name("record-dict".into())
            .spawn(train)
        {
            Ok(handle) => self.training = Some(handle),
            Err(e) => tracing::warn!("no record dictionary: cannot start its training: {e}"),
        }
    }

    /// Waits for a training under way and takes its dictionary in; nothing to wait for
    /// otherwise.
    pub fn wait(&mut self) {
        if let Some(handle) = self.training.take() {
            let trained = handle
                .join()
                .unwrap_or_else(|_| Err(StoreError::Io("the training thread panicked".into())));
            self.trained(trained);
        }
    }

    fn trained(&mut self, trained: Result<Arc<RecordDict>>) {
        match trained {
            Ok(dict) => {
                self.current = Some(dict.clone());
                self.unsaved = Some(dict);
            }
            Err(e) => tracing::warn!("no record dictionary: {e}"),
        }
    }

    /// The dictionary the records just compressed used, the first time only: it goes into
    /// the transaction that writes them.
    pub fn take_new(&mut self) -> Option<Arc<RecordDict>> {
        self.unsaved.take()
    }
}

/// Forgets a dictionary in this process, as a process that never saw it would be.
#[cfg(test)]
fn forget(id: u32) {
    if let Ok(mut known) = KNOWN.write() {
        known.remove(&id);
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::store::kv::ReadableTable;
    use crate::store::testing::{Fixture, on_every_arm};
    use crate::store::{NodeType, PreparedNode, Session, SessionSource, codec, tables::NODES};

    on_every_arm!(a_trained_dictionary_is_kept_and_its_records_read_back);
    on_every_arm!(a_store_filled_a_session_at_a_time_trains_on_the_records_it_holds);

    /// Held by each test that forgets a dictionary: the arms of one test train the same
    /// dictionary, and one arm forgetting it must not pull it from under another.
    static FORGETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    pub(in crate::store) fn forgetting() -> std::sync::MutexGuard<'static, ()> {
        FORGETTING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Nodes of varied prose, about 1.5 KB each, numbered so that no two are alike.
    pub(in crate::store) fn nodes(session: &Session, count: usize) -> Vec<Node> {
        let words = [
            "the", "parser", "reads", "a", "header", "then", "its", "body", "and", "checks",
            "each", "field", "against", "schema", "before", "writing", "index", "pages",
        ];
        (0..count)
            .map(|i| {
                let text: Vec<String> = (0..220)
                    .map(|j| match (i * 7 + j * 13) % 23 {
                        0 => format!("case{}", i * 31 + j),
                        k => words[k % words.len()].to_string(),
                    })
                    .collect();
                Node::new(session.id, NodeType::Response, text.join(" "))
            })
            .collect()
    }

    /// A dictionary trained on [`nodes`], known in this process (hold [`forgetting`] while
    /// using it).
    pub(in crate::store) fn trained() -> Arc<RecordDict> {
        let s = Session::new("t", SessionSource::Glassbox);
        let samples: Vec<Vec<u8>> = nodes(&s, 800)
            .iter()
            .map(|n| serde_json::to_vec(n).unwrap())
            .collect();
        register(zstd::dict::from_samples(&samples, DICT_BYTES).unwrap()).unwrap()
    }

    pub(in crate::store) fn stored_format(store: &Store, n: &Node) -> u8 {
        let r = store.db.begin_read().unwrap();
        r.open_table(NODES)
            .unwrap()
            .get(n.id.to_bytes())
            .unwrap()
            .unwrap()
            .value()[0]
    }

    fn a_trained_dictionary_is_kept_and_its_records_read_back(fx: &Fixture) {
        let _alone = forgetting();
        let store = fx.open();
        assert!(store.record_dict().is_none());
        let s = Session::new("t", SessionSource::Glassbox);
        let all = nodes(&s, 900);
        let mut feed = DictFeed::new(&store);
        // About 150 KB of records: not enough to train on yet.
        feed.observe(&all[..100]);
        assert!(feed.dict().is_none());
        feed.observe(&all[100..]);
        // Trained on a thread of its own: waited for, it is in use.
        feed.wait();
        let dict = feed.dict().expect("trained");
        let (with, without): (Vec<_>, Vec<_>) = all
            .iter()
            .map(|n| {
                (
                    PreparedNode::new(n, Some(dict)).unwrap(),
                    PreparedNode::new(n, None).unwrap(),
                )
            })
            .unzip();
        let size = |p: &[PreparedNode]| p.iter().map(PreparedNode::encoded_len).sum::<usize>();
        assert!(
            size(&with) * 10 < size(&without) * 9,
            "{} bytes with the dictionary, {} without",
            size(&with),
            size(&without)
        );
        let new = feed.take_new().expect("the new dictionary, once");
        assert!(feed.take_new().is_none());
        store
            .write(|w| {
                w.put_record_dict(&new)?;
                w.put_session(&s)?;
                w.put_prepared_nodes(&with).map(|_| ())
            })
            .unwrap();
        assert_eq!(store.record_dict().map(|d| d.id()), Some(new.id()));
        assert_eq!(stored_format(&store, &all[0]), codec::FORMAT_DICT_JSON);
        assert_eq!(store.node(all[5].id).unwrap().as_ref(), Some(&all[5]));

        // A process that never saw the dictionary reads it from the store: a redb file on
        // its next transaction, a byte backend on the read after the one that met it.
        // Another store of the process taking in its own dictionaries in between does not
        // keep this one from taking in the one it missed.
        let other_fx = Fixture::bytes();
        let other = other_fx.open();
        forget(new.id());
        match store.node(all[7].id) {
            Ok(n) => assert_eq!(n.as_ref(), Some(&all[7])),
            Err(e) if !fx.is_redb() => {
                assert!(
                    e.to_string().contains("needs compression dictionary"),
                    "{e}"
                )
            }
            Err(e) => panic!("{e}"),
        }
        other.schema_version().unwrap();
        assert_eq!(store.node(all[7].id).unwrap().as_ref(), Some(&all[7]));

        // Opened again, the store compresses what it writes with the same dictionary.
        drop(store);
        forget(new.id());
        let store = fx.open();
        assert_eq!(store.record_dict().map(|d| d.id()), Some(new.id()));
        let later = nodes(&s, 901).pop().unwrap();
        store.write(|w| w.put_node(&later)).unwrap();
        assert_eq!(stored_format(&store, &later), codec::FORMAT_DICT_JSON);
        assert_eq!(store.node(later.id).unwrap(), Some(later));
        let listed = store.session_nodes(s.id).unwrap();
        assert_eq!(listed.len(), 901);
        assert_eq!(&listed[..900], &all[..]);
    }

    fn a_store_filled_a_session_at_a_time_trains_on_the_records_it_holds(fx: &Fixture) {
        let _alone = forgetting();
        let store = fx.open();
        let all = (0..9)
            .map(|i| {
                let s = Session::new(format!("hook {i}"), SessionSource::ClaudeCode);
                let nodes = nodes(&s, 100);
                (s, nodes)
            })
            .collect::<Vec<(Session, Vec<Node>)>>();
        // Each session stored on its own, without a dictionary, as one hook's import would.
        let store_session = |(s, nodes): &(Session, Vec<Node>)| {
            store
                .write(|w| {
                    w.put_session(s)?;
                    nodes.iter().try_for_each(|n| w.put_node(n))
                })
                .unwrap();
            assert_eq!(stored_format(&store, &nodes[0]), codec::FORMAT_ZSTD_JSON);
        };
        // About 150 KB of records: the next import finds too few to train on.
        store_session(&all[0]);
        let mut feed = DictFeed::new(&store);
        assert!(feed.training.is_none());
        feed.wait();
        assert!(feed.take_new().is_none());
        for session in &all[1..] {
            store_session(session);
        }
        // Enough now: the next import starts training on them before it reads a line.
        let mut feed = DictFeed::new(&store);
        assert!(feed.training.is_some());
        feed.wait();
        let dict = feed.take_new().expect("trained on the stored records");
        let records = all.iter().flat_map(|(_, nodes)| nodes);
        let (with, without) = records.fold((0, 0), |(with, without), n| {
            (
                with + PreparedNode::new(n, Some(&dict)).unwrap().encoded_len(),
                without + PreparedNode::new(n, None).unwrap().encoded_len(),
            )
        });
        assert!(
            with * 10 < without * 9,
            "{with} bytes with the dictionary, {without} without"
        );
        // A feed for a store that has a dictionary samples nothing.
        store.write(|w| w.put_record_dict(&dict)).unwrap();
        assert!(DictFeed::new(&store).samples.is_none());
    }

    #[test]
    fn a_record_whose_dictionary_is_nowhere_fails_with_its_id() {
        let _alone = forgetting();
        let s = Session::new("t", SessionSource::Glassbox);
        let all = nodes(&s, 800);
        let samples: Vec<Vec<u8>> = all.iter().map(|n| serde_json::to_vec(n).unwrap()).collect();
        let dict = register(zstd::dict::from_samples(&samples, DICT_BYTES).unwrap()).unwrap();
        // A value too short to compress stays plain JSON.
        let short = serde_json::json!({"text": "short"});
        assert_eq!(
            codec::encode_with_dict(&short, Some(&dict)).unwrap()[0],
            codec::FORMAT_JSON
        );
        let bytes = codec::encode_with_dict(&all[1], Some(&dict)).unwrap();
        assert_eq!(bytes[0], codec::FORMAT_DICT_JSON);
        assert_eq!(codec::decode::<Node>("nodes", &bytes).unwrap(), all[1]);
        assert_eq!(
            codec::plain_len(&bytes),
            serde_json::to_vec(&all[1]).unwrap().len() + 1
        );
        forget(dict.id());
        let err = codec::decode::<Node>("nodes", &bytes)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("needs compression dictionary {}", dict.id())),
            "{err}"
        );
    }

    #[test]
    fn bytes_that_are_no_dictionary_are_refused() {
        assert!(register(b"not a dictionary".to_vec()).is_err());
    }
}

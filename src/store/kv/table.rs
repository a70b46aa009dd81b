//! Typed tables over either arm: redb's own tables, or a table of a byte backend with keys
//! written by [`Key::ordered`] and values by redb's `Value::as_bytes`.

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use redb::{ReadableTable as _, ReadableTableMetadata as _};

use super::iter::{Entry, ExtractIf, Guard, Range, byte_row, redb_row};
use super::key::Key;
use super::source::{PAGE_ROWS, Pager, Source};
use crate::store::{Result, StoreError};

/// A table of a byte backend: the transaction and the table's name.
pub(super) struct ByteTable<'t> {
    pub(super) source: Source<'t>,
    pub(super) name: String,
}

fn bound<'a, K: Key, KR: Borrow<K::SelfType<'a>> + 'a>(b: Bound<&KR>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(K::ordered(k.borrow())),
        Bound::Excluded(k) => Bound::Excluded(K::ordered(k.borrow())),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'t> ByteTable<'t> {
    fn get<K: Key, V: redb::Value + 'static>(
        &self,
        key: &K::SelfType<'_>,
    ) -> Result<Option<Guard<'t, V>>> {
        Ok(self
            .source
            .get(&self.name, &K::ordered(key))?
            .map(Guard::owned))
    }

    fn get_many<'a, K: Key, V: redb::Value + 'static, KR: Borrow<K::SelfType<'a>>>(
        &self,
        keys: impl IntoIterator<Item = KR>,
    ) -> Result<Vec<Option<Guard<'t, V>>>> {
        let keys: Vec<Vec<u8>> = keys.into_iter().map(|k| K::ordered(k.borrow())).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        Ok(self
            .source
            .get_many(&self.name, &refs)?
            .into_iter()
            .map(|v| v.map(Guard::owned))
            .collect())
    }

    fn end<K: Key, V: redb::Value + 'static>(&self, rev: bool) -> Result<Option<Entry<'t, K, V>>> {
        let row = self
            .source
            .range(&self.name, Bound::Unbounded, Bound::Unbounded, rev, 1)?
            .pop();
        Ok(row.map(byte_row))
    }

    fn pager(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Pager<'t> {
        Pager::new(self.source, &self.name, lo, hi)
    }

    /// Removes the rows of `(lo, hi)` for which `keep` is false.
    fn retain<K, V, F>(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>, mut keep: F) -> Result<()>
    where
        K: Key,
        V: redb::Value + 'static,
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        let mut lo = lo;
        loop {
            let page = self
                .source
                .range(&self.name, as_ref(&lo), as_ref(&hi), false, PAGE_ROWS)?;
            let full = page.len() == PAGE_ROWS;
            let Some(last) = page.last().map(|r| r.0.clone()) else {
                return Ok(());
            };
            let gone: Vec<Vec<u8>> = page
                .into_iter()
                .filter(|(k, v)| {
                    let key = K::from_ordered(k.clone());
                    !keep(K::from_bytes(&key), V::from_bytes(v))
                })
                .map(|(k, _)| k)
                .collect();
            self.source.write(|w| {
                for k in &gone {
                    w.remove(&self.name, k)?;
                }
                Ok(())
            })?;
            if !full {
                return Ok(());
            }
            lo = Bound::Excluded(last);
        }
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// What both table types read: redb's `ReadableTable` and `ReadableTableMetadata` in one.
pub trait ReadableTable<K: Key, V: redb::Value + 'static> {
    /// The value under `key`.
    fn get<'a>(&self, key: impl Borrow<K::SelfType<'a>>) -> Result<Option<Guard<'_, V>>>;

    /// The values under `keys`, one for each in the order given (`None` where a key has
    /// none): a byte backend reads them in one batch, redb one at a time as [`get`] does.
    ///
    /// [`get`]: ReadableTable::get
    fn get_many<'a, KR: Borrow<K::SelfType<'a>>>(
        &self,
        keys: impl IntoIterator<Item = KR>,
    ) -> Result<Vec<Option<Guard<'_, V>>>>;

    /// The rows with keys in `range`, in key order (or reversed with `.rev()`).
    fn range<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Range<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a;

    /// Every row, in key order.
    fn iter(&self) -> Result<Range<'_, K, V>>;

    /// The row with the smallest key.
    fn first(&self) -> Result<Option<Entry<'_, K, V>>>;

    /// The row with the largest key.
    fn last(&self) -> Result<Option<Entry<'_, K, V>>>;

    /// How many rows the table holds.
    fn len(&self) -> Result<u64>;

    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// A table opened in a read transaction.
pub struct ReadTable<'t, K: Key, V: redb::Value + 'static>(ReadArm<'t, K, V>);

enum ReadArm<'t, K: Key, V: redb::Value + 'static> {
    Redb(redb::ReadOnlyTable<K, V>, PhantomData<&'t ()>),
    Bytes(ByteTable<'t>, PhantomData<fn() -> (K, V)>),
}

impl<'t, K: Key, V: redb::Value + 'static> ReadTable<'t, K, V> {
    #[inline]
    pub(super) fn redb(t: redb::ReadOnlyTable<K, V>) -> Self {
        Self(ReadArm::Redb(t, PhantomData))
    }

    #[inline]
    pub(super) fn bytes(t: ByteTable<'t>) -> Self {
        Self(ReadArm::Bytes(t, PhantomData))
    }
}

impl<K: Key, V: redb::Value + 'static> ReadableTable<K, V> for ReadTable<'_, K, V> {
    #[inline]
    fn get<'a>(&self, key: impl Borrow<K::SelfType<'a>>) -> Result<Option<Guard<'_, V>>> {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(t.get(key)?.map(Guard::redb)),
            ReadArm::Bytes(t, _) => t.get::<K, V>(key.borrow()),
        }
    }

    fn get_many<'a, KR: Borrow<K::SelfType<'a>>>(
        &self,
        keys: impl IntoIterator<Item = KR>,
    ) -> Result<Vec<Option<Guard<'_, V>>>> {
        match &self.0 {
            ReadArm::Redb(t, _) => keys
                .into_iter()
                .map(|k| Ok(t.get(k)?.map(Guard::redb)))
                .collect(),
            ReadArm::Bytes(t, _) => t.get_many::<K, V, KR>(keys),
        }
    }

    #[inline]
    fn range<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Range<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(Range::redb(redb::ReadableTable::range(t, range)?)),
            ReadArm::Bytes(t, _) => Ok(Range::bytes(t.pager(
                bound::<K, KR>(range.start_bound()),
                bound::<K, KR>(range.end_bound()),
            ))),
        }
    }

    #[inline]
    fn iter(&self) -> Result<Range<'_, K, V>> {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(Range::redb(redb::ReadableTable::iter(t)?)),
            ReadArm::Bytes(t, _) => Ok(Range::bytes(t.pager(Bound::Unbounded, Bound::Unbounded))),
        }
    }

    #[inline]
    fn first(&self) -> Result<Option<Entry<'_, K, V>>> {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(t.first()?.map(redb_row)),
            ReadArm::Bytes(t, _) => t.end(false),
        }
    }

    #[inline]
    fn last(&self) -> Result<Option<Entry<'_, K, V>>> {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(t.last()?.map(redb_row)),
            ReadArm::Bytes(t, _) => t.end(true),
        }
    }

    #[inline]
    fn len(&self) -> Result<u64> {
        match &self.0 {
            ReadArm::Redb(t, _) => Ok(t.len()?),
            ReadArm::Bytes(t, _) => t.source.len(&t.name),
        }
    }
}

/// A table opened in a write transaction.
pub struct Table<'t, K: Key, V: redb::Value + 'static>(WriteArm<'t, K, V>);

enum WriteArm<'t, K: Key, V: redb::Value + 'static> {
    Redb(redb::Table<'t, K, V>),
    Bytes(ByteTable<'t>, PhantomData<fn() -> (K, V)>),
}

impl<'t, K: Key, V: redb::Value + 'static> Table<'t, K, V> {
    #[inline]
    pub(super) fn redb(t: redb::Table<'t, K, V>) -> Self {
        Self(WriteArm::Redb(t))
    }

    #[inline]
    pub(super) fn bytes(t: ByteTable<'t>) -> Self {
        Self(WriteArm::Bytes(t, PhantomData))
    }

    /// Puts `value` under `key`; returns the value it replaced.
    #[inline]
    pub fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<Option<Guard<'_, V>>> {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(t.insert(key, value)?.map(Guard::redb)),
            WriteArm::Bytes(t, _) => {
                let key = K::ordered(key.borrow());
                let value = V::as_bytes(value.borrow());
                let old = t
                    .source
                    .write(|w| w.insert(&t.name, &key, value.as_ref()))?;
                Ok(old.map(Guard::owned))
            }
        }
    }

    /// Puts `value` under `key`, like [`Table::insert`] without the value it replaced: a
    /// byte backend may send the row later, together with others (the transaction still
    /// reads it back).
    #[inline]
    pub fn put<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<()> {
        match &mut self.0 {
            WriteArm::Redb(t) => {
                t.insert(key, value)?;
                Ok(())
            }
            WriteArm::Bytes(t, _) => {
                let key = K::ordered(key.borrow());
                let value = V::as_bytes(value.borrow());
                t.source.write(|w| w.put(&t.name, &key, value.as_ref()))
            }
        }
    }

    /// Removes `key`; returns the value it held.
    #[inline]
    pub fn remove<'a>(
        &mut self,
        key: impl Borrow<K::SelfType<'a>>,
    ) -> Result<Option<Guard<'_, V>>> {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(t.remove(key)?.map(Guard::redb)),
            WriteArm::Bytes(t, _) => {
                let key = K::ordered(key.borrow());
                let old = t.source.write(|w| w.remove(&t.name, &key))?;
                Ok(old.map(Guard::owned))
            }
        }
    }

    /// Removes every row for which `keep` is false.
    pub fn retain<F>(&mut self, keep: F) -> Result<()>
    where
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(t.retain(keep)?),
            WriteArm::Bytes(t, _) => t.retain::<K, V, F>(Bound::Unbounded, Bound::Unbounded, keep),
        }
    }

    /// Removes the rows with keys in `range` for which `keep` is false.
    pub fn retain_in<'a, KR, F>(&mut self, range: impl RangeBounds<KR> + 'a, keep: F) -> Result<()>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(t.retain_in(range, keep)?),
            WriteArm::Bytes(t, _) => t.retain::<K, V, F>(
                bound::<K, KR>(range.start_bound()),
                bound::<K, KR>(range.end_bound()),
                keep,
            ),
        }
    }

    /// The rows with keys in `range` for which `pick` is true, each removed as it is read.
    pub fn extract_from_if<'a, KR, F>(
        &mut self,
        range: impl RangeBounds<KR> + 'a,
        pick: F,
    ) -> Result<ExtractIf<'_, K, V, F>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
        F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(ExtractIf::redb(t.extract_from_if(range, pick)?)),
            WriteArm::Bytes(t, _) => Ok(ExtractIf::bytes(
                t.pager(
                    bound::<K, KR>(range.start_bound()),
                    bound::<K, KR>(range.end_bound()),
                ),
                pick,
            )),
        }
    }

    /// Appends rows past the table's last key, given in increasing key order: the fast way
    /// to fill a new table (redb gathers them into whole leaves).
    pub fn appender(&mut self) -> Result<Appender<'_, K, V>> {
        match &mut self.0 {
            WriteArm::Redb(t) => Ok(Appender(Appending::Redb(
                t.upper_bound_mut(Bound::<K::SelfType<'_>>::Unbounded)?,
            ))),
            WriteArm::Bytes(t, _) => {
                let last = t
                    .source
                    .range(&t.name, Bound::Unbounded, Bound::Unbounded, true, 1)?
                    .pop()
                    .map(|r| r.0);
                Ok(Appender(Appending::Bytes(t, last, PhantomData)))
            }
        }
    }
}

impl<K: Key, V: redb::Value + 'static> ReadableTable<K, V> for Table<'_, K, V> {
    #[inline]
    fn get<'a>(&self, key: impl Borrow<K::SelfType<'a>>) -> Result<Option<Guard<'_, V>>> {
        match &self.0 {
            WriteArm::Redb(t) => Ok(t.get(key)?.map(Guard::redb)),
            WriteArm::Bytes(t, _) => t.get::<K, V>(key.borrow()),
        }
    }

    fn get_many<'a, KR: Borrow<K::SelfType<'a>>>(
        &self,
        keys: impl IntoIterator<Item = KR>,
    ) -> Result<Vec<Option<Guard<'_, V>>>> {
        match &self.0 {
            WriteArm::Redb(t) => keys
                .into_iter()
                .map(|k| Ok(t.get(k)?.map(Guard::redb)))
                .collect(),
            WriteArm::Bytes(t, _) => t.get_many::<K, V, KR>(keys),
        }
    }

    #[inline]
    fn range<'a, KR>(&self, range: impl RangeBounds<KR> + 'a) -> Result<Range<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'a>> + 'a,
    {
        match &self.0 {
            WriteArm::Redb(t) => Ok(Range::redb(redb::ReadableTable::range(t, range)?)),
            WriteArm::Bytes(t, _) => Ok(Range::bytes(t.pager(
                bound::<K, KR>(range.start_bound()),
                bound::<K, KR>(range.end_bound()),
            ))),
        }
    }

    #[inline]
    fn iter(&self) -> Result<Range<'_, K, V>> {
        match &self.0 {
            WriteArm::Redb(t) => Ok(Range::redb(redb::ReadableTable::iter(t)?)),
            WriteArm::Bytes(t, _) => Ok(Range::bytes(t.pager(Bound::Unbounded, Bound::Unbounded))),
        }
    }

    #[inline]
    fn first(&self) -> Result<Option<Entry<'_, K, V>>> {
        match &self.0 {
            WriteArm::Redb(t) => Ok(t.first()?.map(redb_row)),
            WriteArm::Bytes(t, _) => t.end(false),
        }
    }

    #[inline]
    fn last(&self) -> Result<Option<Entry<'_, K, V>>> {
        match &self.0 {
            WriteArm::Redb(t) => Ok(t.last()?.map(redb_row)),
            WriteArm::Bytes(t, _) => t.end(true),
        }
    }

    #[inline]
    fn len(&self) -> Result<u64> {
        match &self.0 {
            WriteArm::Redb(t) => Ok(t.len()?),
            WriteArm::Bytes(t, _) => t.source.len(&t.name),
        }
    }
}

/// Rows appended past a table's last key ([`Table::appender`]). [`Appender::close`] reports
/// whether every row reached the table.
pub struct Appender<'a, K: Key, V: redb::Value + 'static>(Appending<'a, K, V>);

// redb's side is held inline: boxing it would cost the redb arm an allocation each time.
#[allow(clippy::large_enum_variant)]
enum Appending<'a, K: Key, V: redb::Value + 'static> {
    Redb(redb::CursorMut<'a, K, V>),
    /// The table and the largest key it holds.
    Bytes(
        &'a ByteTable<'a>,
        Option<Vec<u8>>,
        PhantomData<fn() -> (K, V)>,
    ),
}

impl<K: Key, V: redb::Value + 'static> Appender<'_, K, V> {
    /// Appends a row; its key must be larger than every key the table holds.
    #[inline]
    pub fn push<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<()> {
        match &mut self.0 {
            Appending::Redb(c) => c
                .insert_before(key, value)
                .map_err(|e| redb::Error::from(e).into()),
            Appending::Bytes(t, last, _) => {
                let key = K::ordered(key.borrow());
                if last.as_ref().is_some_and(|l| *l >= key) {
                    return Err(StoreError::Io(format!(
                        "{}: a key appended out of order",
                        t.name
                    )));
                }
                let value = V::as_bytes(value.borrow());
                t.source.write(|w| w.put(&t.name, &key, value.as_ref()))?;
                *last = Some(key);
                Ok(())
            }
        }
    }

    pub fn close(self) -> Result<()> {
        match self.0 {
            Appending::Redb(c) => Ok(c.close()?),
            Appending::Bytes(..) => Ok(()),
        }
    }
}

//! Values read from a table, and the iterators over its rows.

use std::marker::PhantomData;

use super::bytes::Row;
use super::key::Key;
use super::source::Pager;
use crate::store::Result;

/// A key or value read from a table; [`Guard::value`] decodes it.
pub struct Guard<'a, V: redb::Value + 'static>(Held<'a, V>);

enum Held<'a, V: redb::Value + 'static> {
    Redb(redb::AccessGuard<'a, V>),
    /// Bytes in redb's form of the type, read from a byte backend.
    Owned(Vec<u8>, PhantomData<&'a ()>),
}

impl<'a, V: redb::Value + 'static> Guard<'a, V> {
    #[inline]
    pub(super) fn redb(g: redb::AccessGuard<'a, V>) -> Self {
        Self(Held::Redb(g))
    }

    #[inline]
    pub(super) fn owned(bytes: Vec<u8>) -> Self {
        Self(Held::Owned(bytes, PhantomData))
    }

    #[inline]
    pub fn value(&self) -> V::SelfType<'_> {
        match &self.0 {
            Held::Redb(g) => g.value(),
            Held::Owned(b, _) => V::from_bytes(b),
        }
    }
}

/// One row: its key and its value.
pub type Entry<'a, K, V> = (Guard<'a, K>, Guard<'a, V>);

#[inline]
pub(super) fn redb_row<'a, K: Key, V: redb::Value + 'static>(
    row: (redb::AccessGuard<'a, K>, redb::AccessGuard<'a, V>),
) -> Entry<'a, K, V> {
    (Guard::redb(row.0), Guard::redb(row.1))
}

#[inline]
pub(super) fn byte_row<'a, K: Key, V: redb::Value + 'static>(row: Row) -> Entry<'a, K, V> {
    (Guard::owned(K::from_ordered(row.0)), Guard::owned(row.1))
}

/// The rows of a key range in key order; reversible.
pub struct Range<'a, K: Key, V: redb::Value + 'static>(Ranged<'a, K, V>);

enum Ranged<'a, K: Key, V: redb::Value + 'static> {
    Redb(redb::Range<'a, K, V>),
    Bytes(Pager<'a>, PhantomData<fn() -> (K, V)>),
}

impl<'a, K: Key, V: redb::Value + 'static> Range<'a, K, V> {
    #[inline]
    pub(super) fn redb(r: redb::Range<'a, K, V>) -> Self {
        Self(Ranged::Redb(r))
    }

    #[inline]
    pub(super) fn bytes(p: Pager<'a>) -> Self {
        Self(Ranged::Bytes(p, PhantomData))
    }
}

impl<'a, K: Key, V: redb::Value + 'static> Iterator for Range<'a, K, V> {
    type Item = Result<Entry<'a, K, V>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Ranged::Redb(r) => r.next().map(|row| Ok(redb_row(row?))),
            Ranged::Bytes(p, _) => p.next_front().transpose().map(|row| Ok(byte_row(row?))),
        }
    }
}

impl<K: Key, V: redb::Value + 'static> DoubleEndedIterator for Range<'_, K, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Ranged::Redb(r) => r.next_back().map(|row| Ok(redb_row(row?))),
            Ranged::Bytes(p, _) => p.next_back().transpose().map(|row| Ok(byte_row(row?))),
        }
    }
}

/// The rows of a key range that a predicate picks, each removed from its table as it is
/// read (rows not read stay).
pub struct ExtractIf<'a, K, V, F>(Extracted<'a, K, V, F>)
where
    K: Key,
    V: redb::Value + 'static,
    F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool;

// redb's side is held inline: boxing it would cost the redb arm an allocation each time.
#[allow(clippy::large_enum_variant)]
enum Extracted<'a, K, V, F>
where
    K: Key,
    V: redb::Value + 'static,
    F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
{
    Redb(redb::ExtractIf<'a, K, V, F>),
    Bytes(Pager<'a>, F, PhantomData<fn() -> (K, V)>),
}

impl<'a, K, V, F> ExtractIf<'a, K, V, F>
where
    K: Key,
    V: redb::Value + 'static,
    F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
{
    #[inline]
    pub(super) fn redb(x: redb::ExtractIf<'a, K, V, F>) -> Self {
        Self(Extracted::Redb(x))
    }

    #[inline]
    pub(super) fn bytes(p: Pager<'a>, f: F) -> Self {
        Self(Extracted::Bytes(p, f, PhantomData))
    }
}

impl<'a, K, V, F> Iterator for ExtractIf<'a, K, V, F>
where
    K: Key,
    V: redb::Value + 'static,
    F: for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
{
    type Item = Result<Entry<'a, K, V>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Extracted::Redb(x) => x.next().map(|row| Ok(redb_row(row?))),
            Extracted::Bytes(p, f, _) => loop {
                let row = match p.next_front() {
                    Ok(Some(row)) => row,
                    Ok(None) => return None,
                    Err(e) => return Some(Err(e)),
                };
                let key = K::from_ordered(row.0.clone());
                if !f(K::from_bytes(&key), V::from_bytes(&row.1)) {
                    continue;
                }
                let (source, table) = (p.source(), p.table().to_string());
                if let Err(e) = source.write(|w| w.remove(&table, &row.0)) {
                    return Some(Err(e));
                }
                return Some(Ok((Guard::owned(key), Guard::owned(row.1))));
            },
        }
    }
}

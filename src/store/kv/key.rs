//! Table definitions and how a key becomes bytes that sort in the key's order.

use std::marker::PhantomData;

/// A key type of the store's tables. redb orders keys with its own comparison; a byte
/// backend orders them by their bytes, so each key type says how it is written so that the
/// two orders agree.
pub trait Key: redb::Key + 'static {
    /// The key as a byte backend stores it: byte order is key order.
    fn ordered(value: &Self::SelfType<'_>) -> Vec<u8> {
        Self::as_bytes(value).as_ref().to_vec()
    }

    /// redb's form of a key, from the form [`Key::ordered`] gave.
    fn from_ordered(bytes: Vec<u8>) -> Vec<u8> {
        bytes
    }
}

impl Key for u64 {
    fn ordered(value: &u64) -> Vec<u8> {
        value.to_be_bytes().to_vec()
    }

    fn from_ordered(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes.reverse();
        bytes
    }
}

impl Key for u32 {
    fn ordered(value: &u32) -> Vec<u8> {
        value.to_be_bytes().to_vec()
    }

    fn from_ordered(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes.reverse();
        bytes
    }
}

impl<const N: usize> Key for [u8; N] {}

impl Key for &'static str {}

impl Key for &'static [u8] {}

/// A table: its name and the types of its keys and values. The name is the table's redb
/// name and, in a byte backend, its table name.
pub struct TableDefinition<'n, K: Key, V: redb::Value + 'static> {
    name: &'n str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<'n, K: Key, V: redb::Value + 'static> TableDefinition<'n, K, V> {
    #[inline]
    pub const fn new(name: &'n str) -> Self {
        Self {
            name,
            types: PhantomData,
        }
    }

    #[inline]
    pub fn name(&self) -> &'n str {
        self.name
    }

    #[inline]
    pub(super) fn redb(&self) -> redb::TableDefinition<'n, K, V> {
        redb::TableDefinition::new(self.name)
    }
}

impl<K: Key, V: redb::Value + 'static> Clone for TableDefinition<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key, V: redb::Value + 'static> Copy for TableDefinition<'_, K, V> {}

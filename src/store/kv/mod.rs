//! What the store's code reads and writes through, whatever holds the tables.

pub mod bytes;

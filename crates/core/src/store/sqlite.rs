//! The SQLite store: one writer thread, a pool of readers, WAL.

pub mod query;

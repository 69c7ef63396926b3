//! Storage behind the `Store` trait. The only module that contains SQL.

pub mod sqlite;

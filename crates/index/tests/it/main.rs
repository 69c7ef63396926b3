//! The index against real HTTPS publishers on loopback (`sites`), through
//! the crawler's public API; each test asserts the index's exact contents.

#![allow(clippy::unwrap_used)] // a panic is a failed test

mod crawl;
mod search;
mod serve;
pub mod sites;

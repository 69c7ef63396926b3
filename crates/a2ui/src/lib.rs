//! A2UI v1.0 surfaces for A2Apps (DESIGN §8): an agent shows the person a
//! form, a list, cards or an approval, drawn by the app's view from the
//! app's own catalog.
//!
//! Three parts, none of them about transport or storage:
//! - `catalog`: what can be drawn, the security boundary;
//! - `check`: reading a batch of messages, checking every message and
//!   component against the catalog, and applying the batch all or nothing;
//! - `doc`: a surface's state in a Loro document, kept as snapshot bytes.

pub mod catalog;
pub mod check;
pub mod doc;

pub use catalog::{CATALOG_ID, VERSION};
pub use check::{Message, Rules, Surface, apply, parse};
pub use doc::{Doc, DocError};

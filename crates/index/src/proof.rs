//! Does the card's publisher list it? Only the publisher's own documents
//! count, tried in this order until one lists the card:
//!
//! 1. the catalog at `/.well-known/ai-catalog.json` of the card's origin;
//! 2. the catalog an `ai-catalog` `Link` header of the card's answer names;
//! 3. the catalog the page at the card's `websiteUrl` links, by its `Link`
//!    header or a static `<link rel="ai-catalog">` (page scripts never run).
//!
//! Any other catalog listing the card (someone else's copy) only made the
//! crawler look; it proves nothing. When none lists the card and one of them
//! could not be reached, nothing is decided: the publisher may be down.

use crate::card::Card;
use crate::catalog;
use crate::crawl::Run;
use crate::entry::Source;
use a2app_client::discovery::{Doc, WELL_KNOWN};
use reqwest::Url;

/// What a page is fetched as.
const PAGE_ACCEPT: &str = "text/html, application/xhtml+xml;q=0.9";

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// This catalog, one of the publisher's own, lists the card.
    Proven { source: Source, catalog: String },
    /// Every source answered and none lists the card.
    Unlisted(String),
    /// None lists it, and at least one could not be reached.
    Unknown(String),
}

/// Checks the publisher's sources for `card_url`, whose answer was `answer`.
pub async fn check(run: &Run<'_>, card_url: &Url, answer: &Doc, card: &Card) -> Verdict {
    let mut said = Vec::new();
    let mut silent = Vec::new();
    let wanted = card_url.as_str();

    let mut sources: Vec<(Source, Result<Url, String>)> = Vec::new();
    match card_url.join(WELL_KNOWN) {
        Ok(u) => sources.push((Source::WellKnown, Ok(u))),
        Err(e) => said.push(format!("no well-known catalog URL: {e}")),
    }
    if let Some(u) = answer.catalog_header() {
        sources.push((Source::CardLink, Ok(u)));
    }
    for (source, catalog_url) in sources {
        match catalog_url {
            Ok(url) => match listed(run, &url, wanted).await {
                Ok(true) => return Verdict::Proven { source, catalog: url.to_string() },
                Ok(false) => said.push(format!("{url} does not list it")),
                Err(r) if r.unreachable => silent.push(r.message),
                Err(r) => said.push(r.message),
            },
            Err(e) => said.push(e),
        }
    }
    if let Some(page) = card.website_url.as_deref().and_then(|w| Url::parse(w).ok()) {
        match run.doc(&page, PAGE_ACCEPT).await {
            Ok(doc) => match page_catalog(&doc) {
                Some(url) => match listed(run, &url, wanted).await {
                    Ok(true) => return Verdict::Proven { source: Source::WebsitePage, catalog: url.to_string() },
                    Ok(false) => said.push(format!("{url} (linked from {page}) does not list it")),
                    Err(r) if r.unreachable => silent.push(r.message),
                    Err(r) => said.push(r.message),
                },
                None => said.push(format!("{page} links no AI catalog")),
            },
            Err(r) if r.unreachable => silent.push(r.message),
            Err(r) => said.push(r.message),
        }
    }
    if silent.is_empty() {
        Verdict::Unlisted(format!("no catalog of its publisher lists it: {}", said.join("; ")))
    } else {
        Verdict::Unknown(format!("the publisher's catalog could not be checked: {}", silent.join("; ")))
    }
}

/// The catalog a page links: its `Link` header, or a static `<link>` tag
/// of an HTML page (never anything a script would write).
fn page_catalog(doc: &Doc) -> Option<Url> {
    let url = doc.catalog_header().or_else(|| if doc.is_html() { doc.catalog_link() } else { None })?;
    (url.scheme() == "https").then_some(url)
}

async fn listed(run: &Run<'_>, catalog_url: &Url, card: &str) -> Result<bool, crate::hosts::Refusal> {
    let doc = run.doc(catalog_url, catalog::ACCEPT).await?;
    match catalog::cards(&doc) {
        Ok(cards) => Ok(cards.iter().any(|c| c == card)),
        Err(why) => Err(crate::hosts::Refusal { unreachable: false, message: why }),
    }
}

//! robots.txt as RFC 9309 reads it, for one product token (`OpenBot`).
//!
//! Pure: bytes in, a decision out. What a fetch answered (a 4xx means no
//! file, so everything may be crawled; a 5xx or no answer means nothing may
//! be) is the caller's to map onto [`Robots::allow_all`] and
//! [`Robots::unreachable`]. Only the first [`PARSE_LIMIT`] bytes are read.

use std::time::Duration;

/// How much of a file is parsed: the RFC's floor (500 KiB); the rest is ignored.
pub const PARSE_LIMIT: usize = 500 * 1024;

/// How long a fetched file may be used before it is fetched again (RFC 9309
/// 2.4: no longer than 24 hours).
pub const MAX_AGE_SECS: i64 = 24 * 60 * 60;

/// The rules that apply to one crawler at one origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Robots {
    rules: Vec<Rule>,
    delay: Option<Duration>,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A file was read (possibly naming no group for us: all allowed).
    Parsed,
    /// No file (a 4xx): everything may be crawled.
    Absent,
    /// No answer or a server error: nothing may be crawled.
    Unreachable,
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    allow: bool,
    /// Normalized (see [`normalize`]), with `*` and a final `$` special.
    pattern: Vec<u8>,
}

impl Robots {
    /// No robots.txt (its answer was a 4xx): everything may be crawled.
    pub fn allow_all() -> Robots {
        Robots { rules: Vec::new(), delay: None, state: State::Absent }
    }

    /// robots.txt could not be had (5xx, timeout, DNS): nothing may be.
    pub fn unreachable() -> Robots {
        Robots { rules: Vec::new(), delay: None, state: State::Unreachable }
    }

    pub fn is_unreachable(&self) -> bool {
        self.state == State::Unreachable
    }

    /// The rules of the groups for `token` (merged when there are several),
    /// else of the `*` groups, else none.
    pub fn parse(body: &[u8], token: &str) -> Robots {
        let mut body = &body[..body.len().min(PARSE_LIMIT)];
        if body.len() == PARSE_LIMIT {
            // A line cut in the middle could say less than it meant
            // (`Disallow: /private` read as `/pri` widens, `Allow` likewise).
            let end = body.iter().rposition(|b| *b == b'\n' || *b == b'\r').map_or(0, |i| i + 1);
            body = &body[..end];
        }
        let text = String::from_utf8_lossy(body);
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let groups = groups(text);
        let named: Vec<&Group> = groups.iter().filter(|g| g.agents.iter().any(|a| names(a, token))).collect();
        let chosen = if named.is_empty() {
            groups.iter().filter(|g| g.agents.iter().any(|a| a == "*")).collect()
        } else {
            named
        };
        let rules = chosen.iter().flat_map(|g| g.rules.iter().cloned()).collect();
        // Of several merged groups' delays, the longest: the politest reading.
        let delay = chosen.iter().filter_map(|g| g.delay).max();
        Robots { rules, delay, state: State::Parsed }
    }

    /// May `path` (the URL's path and query, as sent) be fetched?
    pub fn allowed(&self, path: &str) -> bool {
        match self.state {
            State::Absent => return true,
            State::Unreachable => return false,
            State::Parsed => {}
        }
        // The file itself is always allowed (RFC 9309 2.2.3).
        if path == "/robots.txt" {
            return true;
        }
        let path = normalize(path.as_bytes());
        let mut best: Option<(usize, bool)> = None;
        for rule in &self.rules {
            if !matches(&rule.pattern, &path) {
                continue;
            }
            let len = rule.pattern.len();
            best = match best {
                // The most octets wins; on a tie, allow.
                Some((l, allow)) if l > len || (l == len && allow) => Some((l, allow)),
                _ => Some((len, rule.allow)),
            };
        }
        best.is_none_or(|(_, allow)| allow)
    }

    /// The `Crawl-delay` of the groups that apply, if any gave one.
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.delay
    }
}

/// Does an answer's `X-Robots-Tag` keep it out of the index for `token`?
/// `noindex` or `none`, given to every crawler or to `token` by name
/// (`OpenBot: noindex`); another crawler's named directives are not ours.
pub fn noindex(values: &[String], token: &str) -> bool {
    values.iter().any(|value| {
        let (scope, directives) = match value.split_once(':') {
            // `unavailable_after: <date>` and the like are directives, not names.
            Some((name, rest)) if !name.contains(',') && !is_directive(name) => (Some(name.trim()), rest),
            _ => (None, value.as_str()),
        };
        scope.is_none_or(|s| names(s, token))
            && directives.split(',').any(|d| {
                let d = d.trim();
                d.eq_ignore_ascii_case("noindex") || d.eq_ignore_ascii_case("none")
            })
    })
}

fn is_directive(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    ["unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"].contains(&name.as_str())
}

struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
    delay: Option<Duration>,
}

/// The groups of a file: each starts with one or more `user-agent` lines;
/// rules before the first one belong to no group and are dropped.
fn groups(text: &str) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    // The previous record was a user-agent line: another one joins its group.
    let mut agents_open = false;
    for line in text.split(['\n', '\r']) {
        let line = line.split('#').next().unwrap_or_default();
        let Some((key, value)) = line.split_once(':') else { continue };
        let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
        match key.as_str() {
            "user-agent" => {
                if !agents_open {
                    groups.push(Group { agents: Vec::new(), rules: Vec::new(), delay: None });
                }
                agents_open = true;
                if let Some(g) = groups.last_mut() {
                    g.agents.push(value.to_owned());
                }
            }
            "allow" | "disallow" => {
                agents_open = false;
                // An empty value matches nothing (`Disallow:` allows all).
                if let Some(g) = groups.last_mut()
                    && !value.is_empty()
                {
                    g.rules.push(Rule { allow: key == "allow", pattern: normalize(value.as_bytes()) });
                }
            }
            "crawl-delay" => {
                agents_open = false;
                if let Some(g) = groups.last_mut()
                    && let Ok(secs) = value.parse::<f64>()
                    && secs.is_finite()
                    && secs >= 0.0
                {
                    // Past a day it is as good as "never"; the crawler's own cap decides.
                    g.delay = Some(Duration::from_secs_f64(secs.min(86_400.0)));
                }
            }
            // Sitemaps and unknown records neither end nor join a group.
            _ => {}
        }
    }
    groups
}

/// Does a `user-agent` value name `token`? Its product token (the leading
/// letters, `_` and `-`) is compared without regard to case, so
/// `OpenBot/1.0` and `openbot` name `OpenBot`.
fn names(value: &str, token: &str) -> bool {
    let end = value.find(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '-')).unwrap_or(value.len());
    let product = &value[..end];
    !product.is_empty() && product.eq_ignore_ascii_case(token)
}

/// Bytes as compared (RFC 9309 2.2.2): a percent-encoded unreserved
/// character decoded, other escapes upper-cased, and what a URI cannot hold
/// as it is (non-ASCII bytes, spaces, quotes…) percent-encoded, so
/// `/caf%C3%A9`, `/café` and `/caf%c3%a9` are one path, and `%7E` is `~`.
fn normalize(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%'
            && let (Some(h), Some(l)) = (raw.get(i + 1).and_then(hex), raw.get(i + 2).and_then(hex))
        {
            let v = h * 16 + l;
            if unreserved(v) {
                out.push(v);
            } else {
                push_escaped(&mut out, v);
            }
            i += 3;
            continue;
        }
        if unreserved(b) || reserved(b) || b == b'%' {
            out.push(b);
        } else {
            push_escaped(&mut out, b);
        }
        i += 1;
    }
    out
}

fn hex(b: &u8) -> Option<u8> {
    (*b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

fn push_escaped(out: &mut Vec<u8>, b: u8) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    out.extend_from_slice(&[b'%', DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 15)]]);
}

fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
    )
}

/// Does `pattern` match `path` from its start? `*` stands for any run of
/// bytes, a final `$` for the path's end; without one, the pattern is a
/// prefix. One backtracking point per `*` keeps it linear in practice and
/// quadratic at worst, on a path of bounded length.
fn matches(pattern: &[u8], path: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix(b"$") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let (mut p, mut s) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p == pattern.len() {
            if !anchored || s == path.len() {
                return true;
            }
        } else if pattern[p] == b'*' {
            star = Some((p, s));
            p += 1;
            continue;
        } else if s < path.len() && pattern[p] == path[s] {
            p += 1;
            s += 1;
            continue;
        }
        // Mismatch (or anchored and not at the end): let the last `*` take one more byte.
        match star {
            Some((sp, ss)) if ss < path.len() => {
                star = Some((sp, ss + 1));
                p = sp + 1;
                s = ss + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(file: &str, rows: &[(&str, bool)]) {
        let robots = Robots::parse(file.as_bytes(), "OpenBot");
        for (path, allowed) in rows {
            assert_eq!(robots.allowed(path), *allowed, "{path} under:\n{file}");
        }
    }

    #[test]
    fn the_longest_match_wins_and_allow_wins_a_tie() {
        let file = "User-agent: *\nDisallow: /private\nAllow: /private/open\nDisallow: /tie\nAllow: /tie\n";
        check(
            file,
            &[
                ("/", true),
                ("/private", false),
                ("/private/x", false),
                ("/private/open/x", true),
                ("/tie", true),
                ("/robots.txt", true),
            ],
        );
        // Longer by octets, whatever the order of lines.
        check(
            "User-agent: *\nAllow: /a/b\nDisallow: /a/b/c\nDisallow: /a\n",
            &[("/a/b/c/d", false), ("/a/b/x", true), ("/a/x", false)],
        );
    }

    #[test]
    fn wildcards_and_the_end_anchor() {
        let file =
            "User-agent: *\nDisallow: /*.json$\nDisallow: /a*b\nAllow: /x$\nDisallow: /x\nDisallow: /q?*secret\n";
        check(
            file,
            &[
                ("/card.json", false),
                ("/card.json?x=1", true),
                ("/card.jsonp", true),
                ("/a-b", false),
                ("/ab", false),
                ("/a", true),
                ("/x", true),
                ("/xy", false),
                ("/q?token=secret", false),
                ("/q?token=public", true),
            ],
        );
        // A `$` inside a pattern is a plain byte; `*` at the end changes nothing.
        check("User-agent: *\nDisallow: /a$b\nDisallow: /c*\n", &[("/a$b", false), ("/a", true), ("/c", false)]);
    }

    #[test]
    fn our_groups_merge_and_replace_the_star_group() {
        let file = "User-agent: *\nDisallow: /\n\nUser-agent: OtherBot\nUser-agent: openbot/2.1\nDisallow: /one\n\nUser-agent: OPENBOT\nDisallow: /two\nCrawl-delay: 2.5\n";
        check(file, &[("/", true), ("/one", false), ("/two", false), ("/three", true)]);
        assert_eq!(Robots::parse(file.as_bytes(), "OpenBot").crawl_delay(), Some(Duration::from_millis(2500)));
        // Another crawler's group says nothing to us; the star group does.
        check("User-agent: OpenBotX\nDisallow: /\nUser-agent: *\nDisallow: /star\n", &[("/", true), ("/star", false)]);
        // No group for us and none for `*`: everything.
        check("User-agent: Other\nDisallow: /\n", &[("/x", true)]);
        // Rules before any user-agent line belong to no group.
        check("Disallow: /\nUser-agent: *\nAllow: /\n", &[("/x", true)]);
        // A user-agent line after rules starts a new group.
        check("User-agent: OpenBot\nDisallow: /a\nUser-agent: Other\nDisallow: /b\n", &[("/a", false), ("/b", true)]);
        // Empty disallow allows all; comments, case and odd line ends are read.
        check(
            "user-AGENT: OpenBot # us\r\ndisallow:\r\nDISALLOW: /c # comment\rallow: /c/ok",
            &[("/x", true), ("/c", false), ("/c/ok", true)],
        );
    }

    #[test]
    fn percent_encodings_compare_as_the_rfc_says() {
        let file = "User-agent: *\nDisallow: /caf%C3%A9\nDisallow: /%7Euser\nDisallow: /a%2fb\nDisallow: /sp ace\n";
        check(
            file,
            &[
                ("/caf%c3%a9/menu", false),
                ("/~user", false),
                ("/%7euser", false),
                // An encoded slash is not a slash.
                ("/a%2Fb", false),
                ("/a/b", true),
                ("/sp%20ace", false),
            ],
        );
        check("User-agent: *\nDisallow: /café\n", &[("/caf%C3%A9", false)]);
    }

    #[test]
    fn what_a_fetch_answered_decides_without_a_file() {
        assert!(Robots::allow_all().allowed("/anything"));
        assert!(!Robots::unreachable().allowed("/anything"));
        assert!(!Robots::unreachable().allowed("/robots.txt"));
        assert!(Robots::unreachable().is_unreachable());
        // Garbage is a file with no rules.
        assert!(Robots::parse(b"\xff\xfe<html>not robots</html>", "OpenBot").allowed("/x"));
        assert!(Robots::parse("\u{feff}User-agent: *\nDisallow: /".as_bytes(), "OpenBot").allowed("/robots.txt"));
        assert!(!Robots::parse("\u{feff}User-agent: *\nDisallow: /".as_bytes(), "OpenBot").allowed("/x"));
    }

    #[test]
    fn only_the_first_500_kib_are_read_and_a_cut_line_is_dropped() {
        let mut file = String::from("User-agent: *\nDisallow: /early\n");
        while file.len() < PARSE_LIMIT - 20 {
            file.push_str("# padding padding padding\n");
        }
        file.push_str("Allow: /early/but-cut-here\nDisallow: /late\n");
        assert!(file.len() > PARSE_LIMIT);
        check(&file, &[("/early/but-cut-here", false), ("/early", false), ("/late", true)]);
    }

    #[test]
    fn crawl_delays_are_read_leniently() {
        let delay = |f: &str| Robots::parse(f.as_bytes(), "OpenBot").crawl_delay();
        assert_eq!(delay("User-agent: *\nCrawl-delay: 3\n"), Some(Duration::from_secs(3)));
        assert_eq!(delay("User-agent: *\nCrawl-delay: soon\n"), None);
        assert_eq!(delay("User-agent: *\nCrawl-delay: -1\n"), None);
        assert_eq!(delay("User-agent: *\nCrawl-delay: 1e9\n"), Some(Duration::from_secs(86_400)));
        assert_eq!(delay("User-agent: Other\nCrawl-delay: 5\n"), None);
    }

    #[test]
    fn x_robots_tag_noindex_for_us_or_everyone() {
        let tag = |values: &[&str]| noindex(&values.iter().map(|v| v.to_string()).collect::<Vec<_>>(), "OpenBot");
        assert!(tag(&["noindex"]));
        assert!(tag(&["NOINDEX, nofollow"]));
        assert!(tag(&["none"]));
        assert!(tag(&["nofollow", "noindex"]));
        assert!(tag(&["openbot: noindex"]));
        assert!(!tag(&["googlebot: noindex"]));
        assert!(!tag(&["nofollow"]));
        assert!(!tag(&["unavailable_after: 2030-01-01"]));
        assert!(!tag(&[]));
    }

    #[test]
    fn hostile_patterns_end() {
        let pattern = "*a".repeat(2000);
        let file = format!("User-agent: *\nDisallow: /{pattern}$\n");
        let path = format!("/{}", "a".repeat(3000) + "b");
        check(&file, &[(path.as_str(), true)]);
    }
}

//! What the user typed as the first argument: an app's URL or a local app's name.
//!
//! A path is neither: `a2app` never reads an app's files, so a directory
//! (including a Windows one such as `C:\apps\kanban`, which a URL parser would
//! read as scheme `c`) is refused with the command that does work.

use reqwest::Url;

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An app by URL: its base (scheme, host, port, optional path prefix).
    Url(Url),
    /// A local app by the name or id it registered under.
    Name(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AddressError {
    #[error(
        "{0} is a path; a2app drives an app by URL or by the name it registered under, never through its files (serve it with `agent-app serve {0}`, then use its name)"
    )]
    Path(String),
    #[error("{0} is not a usable URL: {1}")]
    BadUrl(String, String),
    #[error("{0} is neither a URL (http:// or https://) nor an app name")]
    Unrecognized(String),
}

pub fn parse(text: &str) -> Result<Target, AddressError> {
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let mut url = Url::parse(text).map_err(|e| AddressError::BadUrl(text.into(), e.to_string()))?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err(AddressError::BadUrl(text.into(), "it has no host".into()));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(AddressError::BadUrl(text.into(), "give the app's base URL, without ? or #".into()));
        }
        // The base keeps a path prefix (an app behind a proxy path) without its trailing slash.
        let path = url.path().trim_end_matches('/').to_owned();
        url.set_path(&path);
        return Ok(Target::Url(url));
    }
    if is_path(text) {
        return Err(AddressError::Path(text.into()));
    }
    if let Some((host, port)) = text.rsplit_once(':')
        && !host.is_empty()
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
    {
        // `localhost:8090`: a host and port without a scheme means plain HTTP.
        return parse(&format!("http://{text}"));
    }
    let name_like = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && text.as_bytes()[0].is_ascii_alphanumeric();
    if name_like { Ok(Target::Name(text.into())) } else { Err(AddressError::Unrecognized(text.into())) }
}

/// `C:\x`, `C:/x`, `C:`, `\\server\share`, `./x`, `../x`, `/x`, `~/x`, or anything with a separator.
fn is_path(text: &str) -> bool {
    let b = text.as_bytes();
    let drive =
        b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b.len() == 2 || matches!(b[2], b'\\' | b'/'));
    drive || text.contains('/') || text.contains('\\') || text.starts_with('.') || text.starts_with('~')
}

/// The origin a URL's credentials and pins are keyed by: `scheme://host:port`,
/// with the port always written, so `https://x` and `https://x:443` are one origin.
pub fn origin(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let port = url.port_or_known_default().unwrap_or(0);
    format!("{}://{host}:{port}", url.scheme())
}

/// True for names and addresses that stay on this machine.
pub fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_urls_names_and_paths_apart() {
        let url = |s: &str| match parse(s) {
            Ok(Target::Url(u)) => u.to_string(),
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(url("https://kanban.example.com/"), "https://kanban.example.com/");
        assert_eq!(url("HTTP://127.0.0.1:8090"), "http://127.0.0.1:8090/");
        assert_eq!(url("https://example.com/apps/kanban/"), "https://example.com/apps/kanban");
        assert_eq!(url("localhost:8090"), "http://localhost:8090/");
        assert_eq!(parse("kanban"), Ok(Target::Name("kanban".into())));
        assert_eq!(parse("my-app_2"), Ok(Target::Name("my-app_2".into())));
        for path in [
            r"C:\apps\kanban",
            "C:/apps/kanban",
            "c:",
            r"\\server\share\app",
            "./kanban",
            "/srv/kanban",
            "~/kanban",
            "examples/kanban",
        ] {
            assert!(matches!(parse(path), Err(AddressError::Path(_))), "{path}");
        }
        assert!(matches!(parse("https://x/?a=1"), Err(AddressError::BadUrl(..))));
        assert!(matches!(parse("what is this"), Err(AddressError::Unrecognized(_))));
    }

    #[test]
    fn origins_always_carry_the_port() {
        let o = |s: &str| origin(&Url::parse(s).unwrap());
        assert_eq!(o("https://Kanban.Example.com/x"), "https://kanban.example.com:443");
        assert_eq!(o("http://127.0.0.1:8090"), "http://127.0.0.1:8090");
    }
}

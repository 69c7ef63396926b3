//! Where a request came from on the network, for bounds that must hold per
//! stranger rather than per caller (pending grants: an ask needs no
//! credential, so there is no caller to count).
//!
//! The source is the connecting address; behind a reverse proxy the app
//! trusts (`[http] trusted_proxies`), the nearest address in
//! `X-Forwarded-For` that is not one of those proxies, since every address
//! left of an untrusted one may be made up by the client. An IPv6 source is
//! its /64, as one machine is commonly handed a whole one.

use super::State;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use std::convert::Infallible;
use std::net::IpAddr;

/// A request's network source, as text (`203.0.113.7`, `2001:db8:1:2::/64`);
/// empty when the connection's address is not known (a router driven
/// without a socket).
pub struct Source(pub String);

impl FromRequestParts<State> for Source {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &State) -> Result<Source, Infallible> {
        let peer = parts.extensions.get::<ConnectInfo<crate::listener::Peer>>().map(|c| c.0.0.ip());
        let trusted = &state.app.definition.config.http.trusted_proxies;
        Ok(Source(peer.map(|ip| key(behind(ip, &parts.headers, trusted))).unwrap_or_default()))
    }
}

/// The client's address: `peer`, or past the trusted proxies in front of it.
fn behind(peer: IpAddr, headers: &HeaderMap, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev() {
        // A hop that is no address ends what can be believed.
        let Ok(ip) = hop.parse::<IpAddr>() else { break };
        client = ip;
        if !trusted.contains(&ip) {
            break;
        }
    }
    client
}

fn key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(forwarded: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in forwarded {
            map.append("x-forwarded-for", value.parse().expect("header value"));
        }
        map
    }

    #[test]
    fn only_a_trusted_proxy_is_believed() {
        let proxy: IpAddr = "10.0.0.1".parse().expect("ip");
        let stranger: IpAddr = "198.51.100.9".parse().expect("ip");
        let forwarded = headers(&["1.2.3.4"]);
        // Not a trusted proxy: its header is the client's own words.
        assert_eq!(behind(stranger, &forwarded, &[proxy]), stranger);
        assert_eq!(behind(proxy, &forwarded, &[proxy]), "1.2.3.4".parse::<IpAddr>().expect("ip"));
        // A client that writes its own X-Forwarded-For gets the hop the proxy added.
        let spoofed = headers(&["6.6.6.6, 1.2.3.4"]);
        assert_eq!(behind(proxy, &spoofed, &[proxy]), "1.2.3.4".parse::<IpAddr>().expect("ip"));
        // Two proxies in a row, and a garbled hop that ends the walk.
        let second: IpAddr = "10.0.0.2".parse().expect("ip");
        let chain = headers(&["1.2.3.4", "10.0.0.2"]);
        assert_eq!(behind(proxy, &chain, &[proxy, second]), "1.2.3.4".parse::<IpAddr>().expect("ip"));
        let garbled = headers(&["nonsense"]);
        assert_eq!(behind(proxy, &garbled, &[proxy]), proxy);
    }

    #[test]
    fn an_ipv6_source_is_its_slash_64() {
        assert_eq!(key("2001:db8:1:2:3:4:5:6".parse().expect("ip")), "2001:db8:1:2::/64");
        assert_eq!(key("::ffff:192.0.2.1".parse().expect("ip")), "192.0.2.1");
        assert_eq!(key("127.0.0.2".parse().expect("ip")), "127.0.0.2");
    }
}

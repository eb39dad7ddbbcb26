//! Where a request goes next (RFC 3261 §16.4–§16.6 steps 6–7, §18.1.1).
//!
//! Order: a Route set (loose routing, or strict routing when the next URI
//! lacks `;lr`), else the configured static next hop (the benchmark's
//! UAC → proxy → UAS topology), else the Request-URI's host and port. IP
//! literals are used as they are; names go to the system resolver
//! (`getaddrinfo`, on the thread handling the request) through a small
//! cache that keeps failures too ([`RESOLVE_NEGATIVE_TTL`]), or, with
//! [`ProxyConfig::resolve_names`](super::ProxyConfig::resolve_names) off,
//! are unresolvable (404) without a lookup. RFC 3263 NAPTR/SRV is not
//! done.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Target, Transport};
use crate::wire::{parse_uri, Scheme, Uri};

/// How long a resolved name is kept.
pub const RESOLVE_TTL: Duration = Duration::from_secs(60);
/// How long a name that did not resolve is kept as unresolvable: a flood
/// of requests to one bad name costs one lookup per this period, not one
/// per request.
pub const RESOLVE_NEGATIVE_TTL: Duration = Duration::from_secs(10);
/// Most names kept.
pub const RESOLVE_CACHE_MAX: usize = 4096;

/// Why there is no next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// A scheme the proxy cannot route (416).
    #[error("unsupported URI scheme")]
    Scheme,
    /// The host does not resolve (404).
    #[error("destination does not resolve")]
    Unresolvable,
    /// The request targets this proxy and nothing else (404).
    #[error("no route beyond this proxy")]
    NoRoute,
}

impl RouteError {
    /// The status and reason to answer with.
    pub fn response(&self) -> (u16, &'static str) {
        match self {
            RouteError::Scheme => (416, "Unsupported URI Scheme"),
            RouteError::Unresolvable => (404, "Not Found (unresolvable destination)"),
            RouteError::NoRoute => (404, "Not Found"),
        }
    }
}

/// The IPv4 address `s` writes as a dotted quad (four decimal numbers up
/// to 255, no leading zeros, as the standard parser accepts), or `None`
/// for anything else. One loop: every stateless response resolves its
/// next Via's host, and the standard parser would be 14 code lines of
/// that path (the `proxy` module docs, "Cost of a message").
pub(crate) fn dotted_quad(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    // octets done, the number being read, its digits
    let (mut k, mut v, mut digits) = (0usize, 0u32, 0u32);
    for &c in s {
        if c.is_ascii_digit() {
            if digits == 1 && v == 0 {
                return None; // a leading zero
            }
            v = v * 10 + u32::from(c - b'0');
            digits += 1;
            if v > 255 {
                return None;
            }
        } else if c == b'.' && digits > 0 && k < 3 {
            out[k] = v as u8;
            (k, v, digits) = (k + 1, 0, 0);
        } else {
            return None;
        }
    }
    if k != 3 || digits == 0 {
        return None;
    }
    out[3] = v as u8;
    Some(out)
}

/// A name and port, lower-cased as looked up.
type NameKey = (String, u16);

/// What a lookup gave (`None`: it did not resolve), and when.
type Looked = (Option<SocketAddr>, Instant);

/// Resolves hosts, caching names (and failures).
#[derive(Debug)]
pub struct Resolver {
    /// Whether names are looked up at all (else only IP literals resolve).
    names: bool,
    cache: Mutex<HashMap<NameKey, Looked>>,
}

impl Resolver {
    /// A resolver that looks names up with the system's resolver if
    /// `names`, else resolves IP literals only.
    pub fn new(names: bool) -> Resolver {
        Resolver {
            names,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves `host` (bytes as in a URI; IPv6 in brackets) and `port`.
    pub fn resolve(&self, host: &[u8], port: u16) -> Result<SocketAddr, RouteError> {
        if let Some(v4) = dotted_quad(host) {
            return Ok(SocketAddr::new(IpAddr::from(v4), port));
        }
        let h = std::str::from_utf8(host).map_err(|_| RouteError::Unresolvable)?;
        let bare = h
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .unwrap_or(h);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, port));
        }
        if !self.names {
            return Err(RouteError::Unresolvable);
        }
        let key = (h.to_ascii_lowercase(), port);
        if let Ok(c) = self.cache.lock() {
            if let Some((a, t)) = c.get(&key) {
                let ttl = if a.is_some() {
                    RESOLVE_TTL
                } else {
                    RESOLVE_NEGATIVE_TTL
                };
                if t.elapsed() < ttl {
                    return a.ok_or(RouteError::Unresolvable);
                }
            }
        }
        let addr = (bare, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next());
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= RESOLVE_CACHE_MAX {
                c.clear();
            }
            c.insert(key, (addr, Instant::now()));
        }
        addr.ok_or(RouteError::Unresolvable)
    }

    /// Names held in the cache, failures included.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }

    /// The target a SIP URI designates (maddr, port, transport param; sips → TCP).
    pub fn target_of(&self, b: &[u8], u: &Uri) -> Result<Target, RouteError> {
        if !matches!(u.scheme, Scheme::Sip | Scheme::Sips) {
            return Err(RouteError::Scheme);
        }
        let transport = match u.transport.map(|t| t.of(b)) {
            Some(t) if t.eq_ignore_ascii_case(b"tcp") => Transport::Tcp,
            Some(t) if t.eq_ignore_ascii_case(b"udp") => Transport::Udp,
            Some(_) => return Err(RouteError::Scheme),
            None if u.scheme == Scheme::Sips => return Err(RouteError::Scheme),
            None => Transport::Udp,
        };
        let host = u.maddr.unwrap_or(u.host).of(b);
        let addr = self.resolve(host, u.port.unwrap_or(5060))?;
        Ok(Target {
            addr,
            transport,
            conn: None,
        })
    }

    /// Parses a URI held in `[start, end)` of `b` and resolves it.
    pub fn target_of_span(&self, b: &[u8], start: usize, end: usize) -> Result<Target, RouteError> {
        let u = parse_uri(b, start, end, true).map_err(|_| RouteError::Scheme)?;
        self.target_of(b, &u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_quads_agree_with_the_standard_parser() {
        let seeds: [&[u8]; 7] = [
            b"1.2.3.4",
            b"10.0.20.255",
            b"192.168.100.7",
            b"0.0.0.0",
            b"255.255.255.255",
            b"256.1.1.1",
            b"",
        ];
        for v in crate::test_util::one_edit_away(&seeds, b"0123456789.a :") {
            let text = String::from_utf8(v.clone()).unwrap();
            let std = text.parse::<std::net::Ipv4Addr>().ok().map(|a| a.octets());
            assert_eq!(dotted_quad(&v), std, "{text:?}");
        }
    }

    #[test]
    fn literals_and_params() {
        let r = Resolver::new(true);
        let b = b"sip:bob@192.0.2.7:5070;transport=tcp";
        let u = parse_uri(b, 0, b.len(), false).unwrap();
        let t = r.target_of(b, &u).unwrap();
        assert_eq!(t.addr, "192.0.2.7:5070".parse().unwrap());
        assert_eq!(t.transport, Transport::Tcp);
        let b = b"sip:[::1]";
        let u = parse_uri(b, 0, b.len(), false).unwrap();
        assert_eq!(
            r.target_of(b, &u).unwrap().addr,
            "[::1]:5060".parse().unwrap()
        );
        let b = b"tel:+1555";
        let u = parse_uri(b, 0, b.len(), false).unwrap();
        assert_eq!(r.target_of(b, &u), Err(RouteError::Scheme));
        let b = b"sip:localhost:5099";
        let u = parse_uri(b, 0, b.len(), false).unwrap();
        assert_eq!(r.target_of(b, &u).unwrap().addr.port(), 5099);
    }

    #[test]
    fn names_off_resolve_literals_only_and_failed_names_are_kept() {
        let off = Resolver::new(false);
        assert_eq!(
            off.resolve(b"192.0.2.7", 5070),
            Ok("192.0.2.7:5070".parse().unwrap())
        );
        assert_eq!(off.resolve(b"[::1]", 5060).unwrap().port(), 5060);
        assert_eq!(
            off.resolve(b"localhost", 5060),
            Err(RouteError::Unresolvable)
        );
        assert_eq!(off.cached(), 0, "no lookup, nothing kept");
        // a name that cannot resolve (RFC 6761's `.invalid`) is kept as
        // unresolvable: the next request for it is answered from the cache
        let on = Resolver::new(true);
        let bad = on.resolve(b"no-such-host.invalid", 5060);
        assert_eq!(bad, Err(RouteError::Unresolvable));
        assert_eq!(on.cached(), 1);
        assert_eq!(on.resolve(b"No-Such-Host.INVALID", 5060), bad);
        assert_eq!(on.cached(), 1, "the same name (any case): no new entry");
    }
}

//! A forwarded chain (`X-Forwarded-For`, or the `for=` nodes of RFC 7239 `Forwarded`) read as
//! bytes from the **right**, one entry at a time, as far as the caller goes.
//!
//! Each proxy appends the address it received the request from, so the rightmost entries are
//! the ones the server's own proxies wrote and everything to their left is whatever the client
//! sent. Reading from the right and stopping at the first entry that is not a trusted proxy
//! means no byte left of that entry is ever looked at: a client can neither choose the key by
//! what it prepends (forged addresses, invalid UTF-8, a megabyte of commas) nor make the server
//! pay for parsing it. Every instance of the header counts, the last one rightmost.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use http::header::{HeaderName, ValueIter, FORWARDED};
use http::request::Parts;
use http::HeaderValue;

/// `X-Forwarded-For`.
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The longest element searched for its start (a comma): an element past this is malformed
/// and ends the walk (its start, and so the entries left of it, cannot be found without
/// reading client bytes without bound).
const MAX_ELEMENT: usize = 512;

/// The longest node (`"[v6]:port"` with quotes is 55 bytes) parsed as an address.
const MAX_NODE: usize = 64;

/// The header a chain is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `X-Forwarded-For: client, proxy1, proxy2`.
    XForwardedFor,
    /// `Forwarded: for=client;proto=https, for=proxy1`.
    Forwarded,
}

/// One entry of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// The address the proxy that wrote the entry received the request from.
    Addr(IpAddr),
    /// Not an address: `unknown`, an obfuscated `_name`, no `for=`, bytes that are not one, or
    /// an element too long to find its start.
    Malformed,
}

/// The entries of a request's chain, rightmost first.
pub(crate) struct FromRight<'a> {
    values: std::iter::Rev<ValueIter<'a, HeaderValue>>,
    /// What is left of the current header value: the bytes left of the entries read so far.
    rest: &'a [u8],
    source: Source,
    /// An element too long to delimit was met: nothing left of it can be read.
    stuck: bool,
}

impl<'a> FromRight<'a> {
    /// The chain of `parts`' headers named by `source`.
    pub(crate) fn new(parts: &'a Parts, source: Source) -> FromRight<'a> {
        let name = match source {
            Source::XForwardedFor => &X_FORWARDED_FOR,
            Source::Forwarded => &FORWARDED,
        };
        FromRight {
            values: parts.headers.get_all(name).iter().rev(),
            rest: &[],
            source,
            stuck: false,
        }
    }
}

impl Iterator for FromRight<'_> {
    type Item = Hop;

    fn next(&mut self) -> Option<Hop> {
        if self.stuck {
            return None;
        }
        loop {
            if self.rest.is_empty() {
                self.rest = self.values.next()?.as_bytes();
                continue;
            }
            let window = self.rest.len().saturating_sub(MAX_ELEMENT);
            let tail = &self.rest[window..];
            let comma = match self.source {
                Source::XForwardedFor => tail.iter().rposition(|&b| b == b','),
                // A `Forwarded` element's values may be quoted strings holding commas (a
                // proxy's `host="a,b"`): only a comma outside quotes ends an element.
                Source::Forwarded => last_unquoted(tail, b','),
            };
            let element = match comma {
                Some(comma) => {
                    let comma = window + comma;
                    let element = &self.rest[comma + 1..];
                    self.rest = &self.rest[..comma];
                    element
                }
                None if window == 0 => std::mem::take(&mut self.rest),
                None => {
                    self.stuck = true;
                    return Some(Hop::Malformed);
                }
            };
            let element = trim(element);
            // An empty list element (`a,,b`, a trailing comma) is no entry (RFC 9110 §5.6.1).
            if element.is_empty() {
                continue;
            }
            let addr = match self.source {
                Source::XForwardedFor => node(element),
                Source::Forwarded => forwarded_for(element),
            };
            return Some(addr.map_or(Hop::Malformed, Hop::Addr));
        }
    }
}

/// The index of the last `sep` of `b` outside quoted strings (RFC 9110 §5.6.4), read from
/// the right (where `b` ends outside quotes, at an element's end). A `"` after an odd run of
/// backslashes is a quoted-pair inside a string, not a quote: inside a quoted string a
/// backslash always starts a pair, so the parity of the run decides.
fn last_unquoted(b: &[u8], sep: u8) -> Option<usize> {
    let mut quoted = false;
    let mut i = b.len();
    while i > 0 {
        i -= 1;
        let c = b[i];
        if c == b'"' {
            let run = b[..i].iter().rev().take_while(|&&c| c == b'\\').count();
            if run % 2 == 0 {
                quoted = !quoted;
            }
        } else if c == sep && !quoted {
            return Some(i);
        }
    }
    None
}

/// The parts of `b` between the `sep`s outside quoted strings, read from the left.
fn split_unquoted(b: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(b);
    std::iter::from_fn(move || {
        let b = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, &c) in b.iter().enumerate() {
            match c {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                _ if c == sep && !quoted => {
                    rest = Some(&b[i + 1..]);
                    return Some(&b[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(b)
    })
}

/// `b` without leading and trailing spaces and tabs.
fn trim(b: &[u8]) -> &[u8] {
    let ows = |c: &u8| *c == b' ' || *c == b'\t';
    let start = b.iter().position(|c| !ows(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !ows(c)).map_or(start, |i| i + 1);
    &b[start..end]
}

/// A node: an IPv4 or IPv6 address, maybe quoted, IPv6 maybe in brackets, maybe with a port
/// (`192.0.2.1:4711`, `"[2001:db8::1]:4711"`). `unknown`, `_obfuscated` and anything else are
/// not addresses.
fn node(b: &[u8]) -> Option<IpAddr> {
    let b = trim(b);
    let mut buf = [0u8; MAX_NODE];
    let b = match b {
        // A quoted string, its quoted-pairs (`\x`: x) unescaped (RFC 9110 §5.6.4).
        [b'"', inner @ .., b'"'] => {
            let mut len = 0;
            let mut bytes = inner.iter();
            while let Some(&c) = bytes.next() {
                let c = if c == b'\\' { *bytes.next()? } else { c };
                *buf.get_mut(len)? = c;
                len += 1;
            }
            &buf[..len]
        }
        _ => b,
    };
    if b.len() > MAX_NODE {
        return None;
    }
    let s = std::str::from_utf8(b).ok()?;
    if let Some(rest) = s.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        if !after.is_empty() && !is_port(after.strip_prefix(':')?) {
            return None;
        }
        return v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let (host, port) = s.rsplit_once(':')?;
    if !is_port(port) {
        return None;
    }
    host.parse::<Ipv4Addr>().ok().map(IpAddr::V4)
}

/// A port number (RFC 7239 also allows an obfuscated `_port`).
fn is_port(s: &str) -> bool {
    s.parse::<u16>().is_ok() || s.starts_with('_')
}

/// The `for=` node of one `Forwarded` element (`for=192.0.2.1;proto=https`); a `;` inside a
/// quoted value (`host="a;for=1.2.3.4"`) separates nothing.
fn forwarded_for(element: &[u8]) -> Option<IpAddr> {
    split_unquoted(element, b';').find_map(|pair| {
        let eq = pair.iter().position(|&b| b == b'=')?;
        trim(&pair[..eq])
            .eq_ignore_ascii_case(b"for")
            .then(|| node(&pair[eq + 1..]))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn parts(name: &'static str, values: &[&[u8]]) -> Parts {
        let mut req = http::Request::get("/").body(()).unwrap();
        for v in values {
            req.headers_mut()
                .append(name, HeaderValue::from_bytes(v).unwrap());
        }
        req.into_parts().0
    }

    #[test]
    fn nodes_parse_with_ports_and_quotes() {
        assert_eq!(node(b" 192.0.2.1 "), Some(ip("192.0.2.1")));
        assert_eq!(node(b"192.0.2.1:8080"), Some(ip("192.0.2.1")));
        assert_eq!(node(b"\"[2001:db8::1]:80\""), Some(ip("2001:db8::1")));
        assert_eq!(node(b"[2001:db8::1]"), Some(ip("2001:db8::1")));
        assert_eq!(node(b"2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(node(b"192.0.2.1:_p"), Some(ip("192.0.2.1")));
        for bad in [
            &b"unknown"[..],
            b"_hidden",
            b"[2001:db8::1]x",
            b"192.0.2.1:99999",
            b"\xff192.0.2.1",
            b"",
        ] {
            assert_eq!(node(bad), None, "{bad:?}");
        }
        assert_eq!(
            forwarded_for(b"proto=https;For=\"192.0.2.9\""),
            Some(ip("192.0.2.9"))
        );
        assert_eq!(forwarded_for(b"by=192.0.2.9"), None);
    }

    #[test]
    fn entries_come_from_the_right_across_instances() {
        let p = parts(
            "x-forwarded-for",
            &[b"\xff\xfe1.2.3.4, unknown", b" , 198.51.100.22,,10.0.0.1 "],
        );
        let hops: Vec<Hop> = FromRight::new(&p, Source::XForwardedFor).collect();
        assert_eq!(
            hops,
            [
                Hop::Addr(ip("10.0.0.1")),
                Hop::Addr(ip("198.51.100.22")),
                Hop::Malformed,
                Hop::Malformed,
            ]
        );
        let p = parts(
            "forwarded",
            &[b"for=192.0.2.60;proto=http, for=\"[2001:db8:cafe::17]:4711\";by=x"],
        );
        let hops: Vec<Hop> = FromRight::new(&p, Source::Forwarded).collect();
        assert_eq!(
            hops,
            [
                Hop::Addr(ip("2001:db8:cafe::17")),
                Hop::Addr(ip("192.0.2.60"))
            ]
        );
    }

    #[test]
    fn forwarded_values_are_quoted_strings_with_quoted_pairs() {
        // The proxy quoted the client's Host: its commas and semicolons separate nothing.
        let p = parts(
            "forwarded",
            &[b"for=192.0.2.7;host=\"a,b;for=6.6.6.6\\\",c\";proto=http, for=10.0.0.1;host=\"x,y\""],
        );
        let hops: Vec<Hop> = FromRight::new(&p, Source::Forwarded).collect();
        assert_eq!(
            hops,
            [Hop::Addr(ip("10.0.0.1")), Hop::Addr(ip("192.0.2.7"))]
        );
        assert_eq!(node(b"\"\\[2001:db8::1\\]:80\""), Some(ip("2001:db8::1")));
        assert_eq!(node(b"\"192.0.2.1\\\""), None);
        assert_eq!(last_unquoted(b"a=\"x\\\\\",b", b','), Some(7));
        assert_eq!(
            split_unquoted(b"a=\"1;2\";b=3", b';').collect::<Vec<_>>(),
            [&b"a=\"1;2\""[..], b"b=3"]
        );
    }

    #[test]
    fn an_element_too_long_to_delimit_ends_the_walk() {
        let mut value = vec![b'x'; 10_000];
        value.extend_from_slice(b", 192.0.2.1");
        let p = parts("x-forwarded-for", &[&value]);
        let hops: Vec<Hop> = FromRight::new(&p, Source::XForwardedFor).collect();
        assert_eq!(hops, [Hop::Addr(ip("192.0.2.1")), Hop::Malformed]);
    }
}

//! The layer's black-box attack suite: every request shape of both attack rounds (issues 25
//! and 42), one test per shape, each sent by a real client to a real axum server on a free
//! loopback port. Limiters run on a `ManualClock` the test moves, so the floods' rates are
//! exact and no result depends on the speed of a loaded machine. Policies are 5 per second,
//! burst 5, as in the attacks; key tables are small (capacity 20) so that each flood fills
//! them at the attack's ratio of new keys to capacity.
//!
//! Round one: long keys, non-ASCII bytes in a forwarded chain, IPv4-embedding spellings, a
//! flood of one-shot keys, a huge chain. Round two: long and invented methods on `Route`,
//! `HEAD` beside `GET`, gRPC content types over HTTP/1.1, a table-full refusal after another
//! policy, floods whose keys repeat (twice, three and five times, back to back or a while
//! apart, through 404 paths), a flood of new forwarded addresses on `IntKeyed`, quoted commas
//! in `Forwarded`, empty and odd-byte keys, tunnelled and link-local IPv6 clients, a server
//! without `ConnectInfo`, the legacy fields on a 400.

#[path = "attack/harness.rs"]
mod harness;

use std::net::IpAddr;
use std::sync::Arc;

use harness::{bounded, raw, rss, steady_through_flood, Answer, Flood, Http, Server, Target};
use hotlimit::{Gcra, IntKeyed, Keyed, ManualClock, Rate};
use hotlimit_tower::{
    Bearer, ForwardedIp, HeaderKey, MissingKey, PeerIp, Policy, RateLimitLayer, Route,
};

const LOCAL: [u8; 4] = [127, 0, 0, 1];

fn five() -> Rate {
    Rate::per_second(5).unwrap()
}

/// A `Keyed<String>` table at 5 per second on `clock`.
fn string_table(clock: &ManualClock, capacity: usize) -> Arc<Keyed<String, Gcra, ManualClock>> {
    Arc::new(
        Keyed::gcra(five())
            .capacity(capacity)
            .clock(clock.clone())
            .build()
            .unwrap(),
    )
}

/// An `IntKeyed<IpAddr>` table at 5 per second on `clock`.
fn ip_table(clock: &ManualClock, capacity: usize) -> Arc<IntKeyed<IpAddr, ManualClock>> {
    Arc::new(
        IntKeyed::builder(five())
            .capacity(capacity)
            .clock(clock.clone())
            .build()
            .unwrap(),
    )
}

/// The client behind our proxy (127.0.0.1, trusted) is the rightmost `X-Forwarded-For` entry.
fn behind_proxy() -> ForwardedIp {
    ForwardedIp::trusted_proxies(["127.0.0.1"]).unwrap()
}

/// The statuses of `n` requests made by `send`.
async fn statuses<F: std::future::Future<Output = Answer>>(
    n: usize,
    send: impl Fn() -> F,
) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(send().await.status);
    }
    out
}

const FIVE_THEN_REFUSED: [u16; 6] = [200, 200, 200, 200, 200, 429];

// ---- Round one ---------------------------------------------------------------------------

/// Issue 25: 17,400 distinct 64 KB `x-api-key` values took a server from 7.6 MB to 1.1 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_api_keys_do_not_grow_the_server() {
    let per_key = string_table(&ManualClock::new(), 100_000);
    let layer = RateLimitLayer::new(Policy::new(
        "per-key",
        per_key.clone(),
        HeaderKey::new("x-api-key").unwrap(),
    ))
    .unwrap();
    let server = Server::start(layer, true).await;
    let http = Http::new(server.addr, LOCAL);
    let grown = bounded(async {
        let mut key = "k".repeat(64 * 1024);
        let mut send = |i: u32| {
            key.replace_range(..10, &format!("{i:010}"));
            let key = key.clone();
            let http = http.clone();
            async move { http.get("/a", ("x-api-key", &key)).await.status }
        };
        for i in 0..50 {
            assert_eq!(send(i).await, 200);
        }
        let before = rss();
        for i in 50..850 {
            assert_eq!(send(i).await, 200);
        }
        rss().saturating_sub(before)
    })
    .await;
    server.stop().await;
    assert_eq!(per_key.len(), 850);
    // Stored whole, the 800 keys alone are 50 MiB.
    assert!(grown < 16 << 20, "the server grew by {} MiB", grown >> 20);
}

/// Round one: one non-ASCII byte the client prepends must not void the proxy's entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_ascii_byte_in_the_chain_does_not_void_the_proxys_entry() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let send = |client: &'static [u8]| {
        let http = http.clone();
        async move {
            let mut chain = b"\xfe\xff1.2.3.4, ".to_vec();
            chain.extend_from_slice(client);
            http.send("GET", "/a", &[("x-forwarded-for", &chain)]).await
        }
    };
    let a = bounded(statuses(6, || send(b"192.0.2.9"))).await;
    let b = bounded(send(b"192.0.2.10")).await.status;
    server.stop().await;
    assert_eq!(a, FIVE_THEN_REFUSED);
    assert_eq!(
        b, 200,
        "another client with the same junk has its own limit"
    );
}

/// Round one: every IPv6 spelling of an IPv4 client is that client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ipv4_embedding_spellings_are_one_client() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let refused = bounded(async {
        for _ in 0..5 {
            assert_eq!(
                http.get("/a", ("x-forwarded-for", "192.0.2.1"))
                    .await
                    .status,
                200
            );
        }
        let mut refused = Vec::new();
        for spelling in [
            "::ffff:192.0.2.1",
            "::ffff:0:192.0.2.1",
            "::192.0.2.1",
            "64:ff9b::192.0.2.1",
            "[::ffff:192.0.2.1]:4711",
        ] {
            refused.push((
                spelling,
                http.get("/a", ("x-forwarded-for", spelling)).await.status,
            ));
        }
        refused
    })
    .await;
    server.stop().await;
    for (spelling, status) in refused {
        assert_eq!(status, 429, "{spelling} is a fresh client");
    }
}

/// Round one: a 312 KB forwarded chain is read from the right, as far as the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_forwarded_chain_is_keyed_by_its_rightmost_client() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let forged: String = (0..27_000u32)
        .map(|i| format!("10.{}.{}.{}, ", i >> 16, (i >> 8) & 255, i & 255))
        .collect();
    assert!(forged.len() > 300_000);
    let chain = format!("{forged}192.0.2.77");
    let got = bounded(statuses(6, || http.get("/a", ("x-forwarded-for", &chain)))).await;
    server.stop().await;
    assert_eq!(got, FIVE_THEN_REFUSED);
}

/// Keys from one header, the steady client's is `steady`.
struct ByHeader;

impl Target for ByHeader {
    async fn steady(&self, http: &Http) -> Answer {
        http.get("/a", ("x-api-key", "steady")).await
    }
    async fn flood(&self, http: &Http, n: u32) -> Answer {
        http.get("/a", ("x-api-key", &format!("flood-{n}"))).await
    }
}

/// The steady client's share of 41 requests through `flood` on a per-key table (capacity 20).
async fn keyed_flood(flood: Flood) -> (u32, u32) {
    let clock = ManualClock::new();
    let per_key = string_table(&clock, 20);
    let policy = Policy::new(
        "per-key",
        per_key.clone(),
        HeaderKey::new("x-api-key").unwrap(),
    );
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(steady_through_flood(&http, &clock, &ByHeader, flood)).await;
    server.stop().await;
    assert!(per_key.len() <= 20);
    got
}

/// 100 new keys per 500 ms: 40 busy at once, twice the capacity (the attack's 11,300 a
/// second at capacity 1,000 keeps 2,260 busy).
const NEW: u32 = 100;

/// Round one (issue 26): a flood of one-shot keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_one_shot_keys_does_not_push_out_a_steady_client() {
    let (served, full) = keyed_flood(Flood {
        new: NEW,
        times: 1,
        lag: 0,
    })
    .await;
    assert!(full > 0, "the flood never filled the table");
    assert_eq!(served, 41);
}

// ---- Round two ---------------------------------------------------------------------------

/// Issue 42, 1: `Route` stored the method whole; 1,690 methods of 390 KB took a server from
/// 186 MB to 1.45 GB. Every method but the standard ones is one key per path now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_methods_on_route_are_one_key() {
    let clock = ManualClock::new();
    let per_route = string_table(&clock, 1_000);
    let layer = RateLimitLayer::new(Policy::new("per-route", per_route.clone(), Route)).unwrap();
    let server = Server::start(layer, true).await;
    let addr = server.addr;
    let (statuses, grown) = bounded(async {
        let before = rss();
        let mut statuses = Vec::new();
        let mut method = "M".repeat(32 * 1024);
        for i in 0..400u32 {
            method.replace_range(..10, &format!("M{i:09}"));
            statuses.push(raw(addr, format!("{method} /a HTTP/1.1\r\nhost: x").as_bytes()).await);
        }
        (statuses, rss().saturating_sub(before))
    })
    .await;
    server.stop().await;
    // The first five pass the layer (and get the router's 405), then the one key is spent.
    assert_eq!(&statuses[..6], [405, 405, 405, 405, 405, 429]);
    assert_eq!(per_route.len(), 1, "one key for every invented method");
    // Stored whole, 400 methods of 32 KiB are 12.5 MiB.
    assert!(grown < 8 << 20, "the server grew by {} MiB", grown >> 20);
}

/// Issue 42, 1: short invented methods, each its own key, would fill the route table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invented_methods_on_route_cannot_fill_the_table() {
    let clock = ManualClock::new();
    let per_route = string_table(&clock, 20);
    let layer = RateLimitLayer::new(Policy::new("per-route", per_route.clone(), Route)).unwrap();
    let server = Server::start(layer, true).await;
    let http = Http::new(server.addr, LOCAL);
    let get = bounded(async {
        for i in 0..100u32 {
            let a = http.send(&format!("X{i}"), "/a", &[]).await;
            assert!(a.status == 405 || a.status == 429, "{}", a.status);
        }
        http.send("GET", "/a", &[]).await.status
    })
    .await;
    server.stop().await;
    assert!(per_route.len() <= 2, "{} keys", per_route.len());
    assert_eq!(get, 200, "GET /a still has its limit");
}

/// Issue 42, 6: `HEAD` runs the `GET` handler, so it is the same route and the same limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_is_limited_with_get_on_route() {
    let clock = ManualClock::new();
    let layer =
        RateLimitLayer::new(Policy::new("per-route", string_table(&clock, 100), Route)).unwrap();
    let server = Server::start(layer, true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        let mut got = statuses(5, || http.send("GET", "/a", &[])).await;
        got.push(http.send("HEAD", "/a", &[]).await.status);
        got
    })
    .await;
    server.stop().await;
    assert_eq!(got, FIVE_THEN_REFUSED);
}

/// Issue 42, 5: on HTTP/1.1 a gRPC content type turned a 429 into `200 OK` with
/// `grpc-status: 8`: refusals vanished from status-based logs, and a cache could keep the 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_content_type_over_http1_keeps_the_refusal_status() {
    let clock = ManualClock::new();
    let policy = PeerIp::new()
        .policy_with(
            "per-ip",
            IntKeyed::builder(Rate::per_second(1).unwrap()).clock(clock.clone()),
        )
        .unwrap();
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        assert_eq!(http.send("GET", "/a", &[]).await.status, 200);
        let mut got = Vec::new();
        for ct in [
            "application/grpc",
            "application/grpc+proto",
            "application/grpc; charset=utf-8",
            "application/grpc-web",
            "application/grpcx",
        ] {
            let a = http
                .send("GET", "/a", &[("content-type", ct.as_bytes())])
                .await;
            got.push((ct, a.status, a.header("grpc-status").to_owned()));
        }
        got
    })
    .await;
    server.stop().await;
    for (ct, status, grpc) in got {
        assert_eq!((status, grpc.as_str()), (429, ""), "{ct} over HTTP/1.1");
    }
}

/// Issue 42, 4: per-IP, then per-key with its table full: five 503s took per-IP from 4 to 0,
/// then per-IP refused. A refusal, whatever refuses, charges no policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_full_refusal_charges_no_policy() {
    let clock = ManualClock::new();
    let per_ip = ip_table(&clock, 1_000);
    let per_key = string_table(&clock, 10);
    let layer = RateLimitLayer::builder()
        .policy(Policy::new("per-ip", per_ip, PeerIp::new()))
        .policy(Policy::new(
            "per-key",
            per_key,
            HeaderKey::new("x-api-key").unwrap(),
        ))
        .build()
        .unwrap();
    let server = Server::start(layer, true).await;
    let (refused, after) = bounded(async {
        // Ten other clients fill the key table with busy keys.
        for i in 0..10u8 {
            let other = Http::new(server.addr, [127, 0, 1, i]);
            assert_eq!(
                other
                    .get("/a", ("x-api-key", &format!("k{i}")))
                    .await
                    .status,
                200
            );
        }
        let http = Http::new(server.addr, LOCAL);
        let mut refused = Vec::new();
        for i in 0..5 {
            let a = http.get("/a", ("x-api-key", &format!("new-{i}"))).await;
            refused.push((a.status, a.header("ratelimit").to_owned()));
        }
        // A key of the table: per-IP still has its whole burst.
        let after = statuses(6, || http.get("/a", ("x-api-key", "k0"))).await;
        (refused, after)
    })
    .await;
    server.stop().await;
    for (status, ratelimit) in refused {
        assert_eq!(status, 503);
        assert!(ratelimit.starts_with(r#""per-ip";r=5;"#), "{ratelimit}");
    }
    // k0 had one request already: four more, then its own limit.
    assert_eq!(after, [200, 200, 200, 200, 429, 429]);
}

/// Issue 42, 2: each flood key sent twice in a row refused the steady client 25 of 41.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_keys_sent_twice_does_not_push_out_a_steady_client() {
    let (served, full) = keyed_flood(Flood {
        new: NEW,
        times: 2,
        lag: 0,
    })
    .await;
    assert!(full > 0, "the flood never filled the table");
    assert_eq!(served, 41);
}

/// Issue 42, 2: three times (28 of 41 refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_keys_sent_three_times_does_not_push_out_a_steady_client() {
    let (served, _) = keyed_flood(Flood {
        new: NEW,
        times: 3,
        lag: 0,
    })
    .await;
    assert_eq!(served, 41);
}

/// Issue 42, 2: five times (24 of 41 refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_keys_sent_five_times_does_not_push_out_a_steady_client() {
    let (served, _) = keyed_flood(Flood {
        new: NEW,
        times: 5,
        lag: 0,
    })
    .await;
    assert_eq!(served, 41);
}

/// Issue 42, 2: each flood key sent again once it is idle (40 new keys, 200 ms, later), so
/// that it comes back as the steady client does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_keys_that_come_back_once_does_not_push_out_a_steady_client() {
    let (served, _) = keyed_flood(Flood {
        new: NEW,
        times: 2,
        lag: 40,
    })
    .await;
    assert_eq!(served, 41);
}

/// The route of `GET /a` for the steady client, 404 paths for the flood.
struct ByRoute;

impl Target for ByRoute {
    async fn steady(&self, http: &Http) -> Answer {
        http.send("GET", "/a", &[]).await
    }
    async fn flood(&self, http: &Http, n: u32) -> Answer {
        http.send("GET", &format!("/nowhere-{n}"), &[]).await
    }
}

/// Issue 42, 2: on `Route`, a flood of 404 paths each sent twice (19 of 41 served).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_404_paths_sent_twice_does_not_push_out_a_route() {
    let clock = ManualClock::new();
    let per_route = string_table(&clock, 20);
    let policy = Policy::new("per-route", per_route.clone(), Route);
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let flood = Flood {
        new: NEW,
        times: 2,
        lag: 0,
    };
    let (served, _) = bounded(steady_through_flood(&http, &clock, &ByRoute, flood)).await;
    server.stop().await;
    assert!(per_route.len() <= 20);
    assert_eq!(served, 41);
}

/// Forwarded addresses: the steady client is 192.0.2.1, flood key n a new address.
struct ByForwardedIp;

impl Target for ByForwardedIp {
    async fn steady(&self, http: &Http) -> Answer {
        http.get("/a", ("x-forwarded-for", "192.0.2.1")).await
    }
    async fn flood(&self, http: &Http, n: u32) -> Answer {
        let ip = IpAddr::from((10u32 << 24 | n).to_be_bytes());
        http.get("/a", ("x-forwarded-for", &ip.to_string())).await
    }
}

/// Issue 42, 3: `IntKeyed` had no flood protection: one request per new forwarded address
/// refused the steady client 29 of 41 (21,100 a second at capacity 1,000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_addresses_does_not_push_out_a_steady_client_of_int_keyed() {
    let clock = ManualClock::new();
    let per_ip = ip_table(&clock, 20);
    let policy = Policy::new("per-ip", per_ip.clone(), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let flood = Flood {
        new: NEW,
        times: 1,
        lag: 0,
    };
    let (served, full) = bounded(steady_through_flood(&http, &clock, &ByForwardedIp, flood)).await;
    server.stop().await;
    assert!(per_ip.len() <= 20);
    assert!(full > 0, "the flood never filled the table");
    assert_eq!(served, 41);
}

/// Issue 42, 3: the same flood, each address sent twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_addresses_sent_twice_does_not_push_out_a_steady_client_of_int_keyed() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 20), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let flood = Flood {
        new: NEW,
        times: 2,
        lag: 0,
    };
    let (served, _) = bounded(steady_through_flood(&http, &clock, &ByForwardedIp, flood)).await;
    server.stop().await;
    assert_eq!(served, 41);
}

/// Issue 42, 6: the proxy quoted the client's `Host` (`host="a,b"`): the comma split the
/// proxy's element and moved 40 clients onto the proxy's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quoted_comma_in_forwarded_does_not_move_clients_onto_the_proxy() {
    let clock = ManualClock::new();
    let key = behind_proxy().forwarded_header();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), key);
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        let mut got = Vec::new();
        for i in 1..=40 {
            let v = format!(r#"for=192.0.2.{i};host="a,b";proto=http"#);
            got.push(http.get("/a", ("forwarded", &v)).await.status);
        }
        // A quoted-pair and a semicolon inside the quotes: still the element's `for=`.
        let v = r#"host="x\";for=6.6.6.6;y";for="192.0.2.1""#;
        let again = statuses(5, || http.get("/a", ("forwarded", v))).await;
        (got, again)
    })
    .await;
    server.stop().await;
    assert_eq!(got.0, [200; 40], "40 clients, 40 limits");
    // 192.0.2.1 had one request: four more, then refused.
    assert_eq!(got.1, [200, 200, 200, 200, 429]);
}

/// Issue 42, 8: an empty `x-api-key:` was one key shared by everyone who sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_api_key_is_a_missing_key() {
    let clock = ManualClock::new();
    let policy = Policy::new(
        "per-key",
        string_table(&clock, 100),
        HeaderKey::new("x-api-key").unwrap(),
    );
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(http.get("/a", ("x-api-key", ""))).await;
    server.stop().await;
    assert_eq!(got.status, 400);
    assert_eq!(got.header("ratelimit"), r#""per-key";r=0"#);
}

/// Issue 42, 7: with `MissingKey::Allow`, a key with a byte outside visible ASCII (or a
/// `Bearer<TAB>token`) was "no key", unlimited. A key the client sent is a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_with_odd_bytes_is_still_limited() {
    let clock = ManualClock::new();
    let layer = RateLimitLayer::builder()
        .policy(
            Policy::new(
                "per-key",
                string_table(&clock, 100),
                HeaderKey::new("x-api-key").unwrap(),
            )
            .on_missing_key(MissingKey::Allow),
        )
        .policy(
            Policy::new("per-token", string_table(&clock, 100), Bearer)
                .on_missing_key(MissingKey::Allow),
        )
        .build()
        .unwrap();
    let server = Server::start(layer, true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        let odd = statuses(6, || {
            http.send("GET", "/a", &[("x-api-key", b"caf\xe9\tkey")])
        })
        .await;
        let tab = statuses(6, || {
            http.send("GET", "/a", &[("authorization", b"Bearer\ttok")])
        })
        .await;
        (odd, tab)
    })
    .await;
    server.stop().await;
    assert_eq!(got.0, FIVE_THEN_REFUSED);
    assert_eq!(got.1, FIVE_THEN_REFUSED);
}

/// Issue 42, 7: a 6to4 or Teredo address is its IPv4 host, not a /56 of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tunnelled_ipv4_hosts_are_their_ipv4_client() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        for _ in 0..5 {
            assert_eq!(
                http.get("/a", ("x-forwarded-for", "192.0.2.45"))
                    .await
                    .status,
                200
            );
        }
        let six_to_four = http
            .get("/a", ("x-forwarded-for", "2002:c000:22d::1"))
            .await
            .status;
        let teredo = http
            .get(
                "/a",
                ("x-forwarded-for", "2001:0:4136:e378:8000:63bf:3fff:fdd2"),
            )
            .await
            .status;
        (six_to_four, teredo)
    })
    .await;
    server.stop().await;
    assert_eq!(got, (429, 429));
}

/// Issue 42, 7: every link-local client shares fe80::/56; each is its own client now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_local_clients_do_not_share_one_key() {
    let clock = ManualClock::new();
    let policy = Policy::new("per-ip", ip_table(&clock, 1_000), behind_proxy());
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        let a = statuses(6, || http.get("/a", ("x-forwarded-for", "fe80::1"))).await;
        let b = http.get("/a", ("x-forwarded-for", "fe80::2")).await.status;
        (a, b)
    })
    .await;
    server.stop().await;
    assert_eq!(got.0, FIVE_THEN_REFUSED);
    assert_eq!(got.1, 200);
}

/// Issue 42, 8: a server without `ConnectInfo` answered 500 with a body that did not name the
/// fix, and logged it nowhere without a `tracing` subscriber.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_connect_info_the_500_names_the_fix() {
    let policy = PeerIp::new().policy("per-ip", five()).unwrap();
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), false).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(http.send("GET", "/a", &[])).await;
    server.stop().await;
    assert_eq!(got.status, 500);
    assert!(
        got.body
            .contains("into_make_service_with_connect_info::<SocketAddr>()"),
        "{}",
        got.body
    );
}

/// Issue 42, 7: on a 400 the legacy `X-RateLimit-Remaining` named another policy's remaining
/// while `RateLimit` said `r=0`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_400_the_legacy_remaining_agrees_with_ratelimit() {
    let clock = ManualClock::new();
    let layer = RateLimitLayer::builder()
        .policy(Policy::new(
            "per-ip",
            ip_table(&clock, 1_000),
            PeerIp::new(),
        ))
        .policy(Policy::new(
            "per-key",
            string_table(&clock, 100),
            HeaderKey::new("x-api-key").unwrap(),
        ))
        .legacy_headers(true)
        .build()
        .unwrap();
    let server = Server::start(layer, true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(http.send("GET", "/a", &[])).await;
    server.stop().await;
    assert_eq!(got.status, 400);
    assert!(got.header("ratelimit").contains(r#""per-key";r=0"#));
    assert_eq!(got.header("x-ratelimit-remaining"), "0");
}

/// What a 503 for a full table says: that the limiter has no room, never that the request
/// costs more than it can ever grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_full_503_says_so() {
    let clock = ManualClock::new();
    let policy = Policy::new(
        "per-key",
        string_table(&clock, 1),
        HeaderKey::new("x-api-key").unwrap(),
    );
    let server = Server::start(RateLimitLayer::new(policy).unwrap(), true).await;
    let http = Http::new(server.addr, LOCAL);
    let got = bounded(async {
        assert_eq!(http.get("/a", ("x-api-key", "a")).await.status, 200);
        http.get("/a", ("x-api-key", "b")).await
    })
    .await;
    server.stop().await;
    assert_eq!(got.status, 503);
    assert!(
        got.body.contains("has no room for new clients"),
        "{}",
        got.body
    );
}

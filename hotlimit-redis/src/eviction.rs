//! [`check_eviction`]: whether the server may evict limiter keys.

use redis::ConnectionLike;

use crate::error::Error;

/// Checks the server's `maxmemory-policy` (`CONFIG GET`), once, at startup: every limiter key
/// has an expiry, so every policy but `noeviction` may evict one when the server is full
/// (`volatile-*` evicts only keys with an expiry: limiter keys first), and an evicted key
/// restarts with its whole burst free, in fenced mode too (the marker, with no expiry,
/// survives: the loss of one key is not seen). The cost of an eviction: at most b more per
/// evicted key, leased keys included.
///
/// Returns the policy when it cannot evict a limiter key (`noeviction`), and `None` when the
/// server does not allow `CONFIG` (managed services often rename or forbid it): then nothing
/// is known, and what an eviction costs is as above; ask the provider for `noeviction`, or
/// give the limiter a database or server of its own sized to never fill.
///
/// # Errors
///
/// [`Error::Evicting`] naming the policy when it may evict limiter keys; [`Error::Redis`]
/// when the connection fails.
///
/// # Examples
///
/// ```no_run
/// let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// match hotlimit_redis::check_eviction(&mut con) {
///     Ok(Some(policy)) => println!("safe: {policy}"),
///     Ok(None) => println!("CONFIG is not allowed: cannot tell"),
///     Err(e) => eprintln!("{e}"),
/// }
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn check_eviction(con: &mut impl ConnectionLike) -> Result<Option<String>, Error> {
    let reply: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query(con);
    let policy = match reply {
        Ok(pair) => match pair.into_iter().nth(1) {
            Some(policy) => policy,
            None => return Ok(None),
        },
        // A server error (CONFIG renamed, forbidden by an ACL, unknown): nothing is known.
        Err(e)
            if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                || e.code().is_some() =>
        {
            return Ok(None)
        }
        Err(e) => return Err(Error::Redis(e)),
    };
    if policy == "noeviction" {
        Ok(Some(policy))
    } else {
        Err(Error::Evicting(policy))
    }
}

//! The round trips of a [`LeasedGcra`]: a refill (the lease script, its reply mapped to the
//! local clock, the size of the next lease) and returns (the reservation-cancel rule, by the
//! return script), blocking or async.

use std::sync::{Arc, LazyLock};

use hotlimit::Clock;
use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

use super::offset;
use super::word::{Closed, Lease, RefillGuard, MAX_PERMITS};
use super::{KeyState, LeasedGcra};
use crate::connection::SyncConnection;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::fence::Fence;
use crate::limiter::{nanos, only};
use crate::reply::ints;
use crate::sync::Ordering;
use crate::transport::{is_connection_fault, Call, Lua, Replies};
use crate::waiting;

/// The lease script: the shared prelude, then `lua/lease.lua`.
static LEASE: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("../lua/now.lua"),
        include_str!("../lua/lease.lua")
    ))
});

/// The return script: the shared prelude, then `lua/lease_return.lua`.
static RETURN: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("../lua/now.lua"),
        include_str!("../lua/lease_return.lua")
    ))
});

/// How a refill ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refilled {
    /// A new lease is installed.
    Installed,
    /// Another refill holds the key, or a lease waits already.
    Busy,
    /// Redis did not lease (down, late, or an error).
    Failed,
    /// The key's queue is full (its TAT is τ + Q ahead): no lease until this many ns from now.
    Wait(u64),
}

/// The ns until the key's last refused lease said room opens, if that is after `now`: no
/// round trip before it.
fn queue_full(state: &KeyState, now: u64) -> Option<u64> {
    // Relaxed: a hint (see `finish`).
    let until = state.full_until.load(Ordering::Relaxed);
    (now < until).then(|| until - now)
}

/// What a lease reply carries: a lease, or (the key's queue full) the ns until one fits.
enum Leased {
    Lease(Lease),
    Full(u64),
}

/// A refill under way: the key's guard, the lease's size and the local time it was sent.
pub(super) struct Pending<'a> {
    guard: RefillGuard<'a>,
    permits: u64,
    /// The fewest permits worth leasing: the request's.
    fewest: u64,
    key: Vec<u8>,
    sent: u64,
}

impl<C: Clock> LeasedGcra<C> {
    /// Refills `state`'s lease over one of the limiter's blocking connections (after a take at
    /// `now` for `n` permits).
    pub(super) fn refill_blocking(
        &self,
        state: &KeyState,
        key: &str,
        n: u32,
        now: u64,
    ) -> Refilled {
        if let Some(wait) = queue_full(state, now) {
            return Refilled::Wait(wait);
        }
        let Some(pending) = self.begin(state, key, n, now) else {
            return self.busy_or_down(now);
        };
        let deadline = Deadline::new(self.shared.deadline);
        let mut con = self.connection();
        let reply = self
            .call(&pending)
            .send_blocking(&mut con, &deadline)
            .map(only);
        self.put_back(con);
        let refilled = self.finish(state, pending, reply, &deadline);
        self.sweep_if_due();
        refilled
    }

    /// Refills `state`'s lease over an async connection.
    pub(super) async fn refill_async<Conn: ConnectionLike + Send>(
        &self,
        con: &mut Conn,
        state: &KeyState,
        key: &str,
        n: u32,
        now: u64,
    ) -> Refilled {
        if let Some(wait) = queue_full(state, now) {
            return Refilled::Wait(wait);
        }
        let Some(pending) = self.begin(state, key, n, now) else {
            return self.busy_or_down(now);
        };
        let deadline = Deadline::new(self.shared.deadline);
        let reply = self
            .call(&pending)
            .send_async(con, &deadline)
            .await
            .map(only);
        self.finish(state, pending, reply, &deadline)
    }

    /// The refill's start: the key's guard (one refill per key, none while a lease waits) and
    /// the lease's size; `None` when the key is busy or Redis is known to be down.
    fn begin<'a>(&self, state: &'a KeyState, key: &str, n: u32, now: u64) -> Option<Pending<'a>> {
        let s = &self.shared;
        // Relaxed: a hint shared by all callers, as `RedisLimiter`'s.
        if now < s.down_until.load(Ordering::Relaxed) {
            return None;
        }
        let guard = state.lease.begin_refill()?;
        let permits = self.size(state, u64::from(n), now);
        s.counters.round_trip();
        Some(Pending {
            guard,
            permits,
            fewest: u64::from(n).clamp(1, permits),
            key: self.redis_key(key),
            sent: s.clock.now(),
        })
    }

    fn busy_or_down(&self, now: u64) -> Refilled {
        // Relaxed: as in `begin`.
        if now < self.shared.down_until.load(Ordering::Relaxed) {
            Refilled::Failed
        } else {
            Refilled::Busy
        }
    }

    /// The lease script's call: ARGV I, τ, k, no test hook, the fence (0: none), the queue Q,
    /// the fewest permits worth leasing and where a missing key starts (Q; the planted twin:
    /// now) (see `lua/lease.lua`); `WAIT` after it when the limiter is durable (paid once per
    /// lease).
    fn call(&self, pending: &Pending<'_>) -> Call {
        let s = &self.shared;
        let g = &s.gcra;
        let marker = s.fence.map(|_| Fence::marker(&s.prefix, &pending.key));
        let fence = s.fence.map_or(0, |f| f.horizon);
        // Per-decision callers refused by the queue on this key mark it (see `waiting.rs`).
        let waiting = waiting::marker(&pending.key);
        let markers: Vec<&[u8]> = marker.iter().chain(&waiting).map(Vec::as_slice).collect();
        let mut call = Call::new(&LEASE).durable(s.durable);
        call.push(
            &pending.key,
            &markers,
            &[
                g.interval(),
                g.tolerance(),
                pending.permits,
                0,
                fence,
                s.queue,
                pending.fewest,
                if s.planted_early { 0 } else { s.queue },
                u64::from(waiting.is_some()),
            ],
        );
        call
    }

    /// The size of the next lease for a request of `n`: the key's recent demand times
    /// `lease_time`, at least `n` plus what a round trip costs a lease taken on an idle key
    /// (⌈rtt/I⌉ + 1), at most `max_lease` (or `n`, if more).
    ///
    /// The demand: when the permits of the current lease whose slots have come are spent (all
    /// but an eighth of the lease, or 4: a thread asleep until its retry-after lags a little),
    /// the key wants at least what it is given, and its demand is taken as the whole rate (1/I):
    /// then every process on an over-limit key asks for the same size and they share the rate
    /// evenly (sized by their own grant rates instead, a process that once got more would ask
    /// for more and keep it). Otherwise it is the permits spent since the lease arrived (or its
    /// first slot came, if later) per unit of time.
    fn size(&self, state: &KeyState, n: u64, now: u64) -> u64 {
        let s = &self.shared;
        let (lease, spent) = state.lease.current();
        // Relaxed (both): estimates.
        let arrived = state.arrived.load(Ordering::Relaxed);
        let rtt = s.rtt.load(Ordering::Relaxed);
        let since = i128::from(now) - i128::from(lease.first_slot);
        let reached = if since < 0 {
            0
        } else {
            (since as u128 / u128::from(s.interval) + 1).min(u128::from(lease.permits)) as u64
        };
        let lag = reached.saturating_sub(spent);
        let demand = if spent > 0 && lag <= (lease.permits / 8).max(4) {
            s.lease_time / s.interval
        } else {
            let began = lease.first_slot.max(arrived as i64).max(0) as u64;
            let span = now.saturating_sub(began).max(s.interval);
            (u128::from(spent) * u128::from(s.lease_time) / u128::from(span))
                .min(u128::from(MAX_PERMITS)) as u64
        };
        let floor = n + rtt.div_ceil(s.interval) + 1;
        demand.max(floor).min(s.max_lease.max(n))
    }

    /// Installs the lease a reply carries, or counts the failure (marking Redis down when the
    /// connection is at fault).
    fn finish(
        &self,
        state: &KeyState,
        pending: Pending<'_>,
        reply: Result<RedisResult<Value>, Error>,
        deadline: &Deadline,
    ) -> Refilled {
        let s = &self.shared;
        let received = s.clock.now();
        let lease = reply
            .and_then(|r| r.map_err(|e| deadline.error(e)))
            .and_then(|v| self.lease_of(&v, pending.sent, received));
        match lease {
            Ok(Leased::Full(wait)) => {
                // Relaxed: an estimate, as below.
                s.rtt.store(received - pending.sent, Ordering::Relaxed);
                // The room opens `wait` after the server's `now`, read after `sent`: from
                // `sent + wait` on at the earliest, when the next refill may ask again.
                // Relaxed: a hint; a stale read costs one refused round trip, or one denial
                // whose retry-after is the refusal's.
                state
                    .full_until
                    .store(pending.sent.saturating_add(wait), Ordering::Relaxed);
                drop(pending);
                Refilled::Wait(wait)
            }
            Ok(Leased::Lease(lease)) => {
                // Relaxed (both): estimates, read by this key's next refill and by denials.
                state.arrived.store(received, Ordering::Relaxed);
                s.rtt.store(received - pending.sent, Ordering::Relaxed);
                state.lease.install(&pending.guard, lease);
                s.counters.leased(lease.permits);
                Refilled::Installed
            }
            Err(e) => {
                s.counters.error();
                if is_connection_fault(&e) {
                    let until = s.clock.now().saturating_add(nanos(s.reprobe_after));
                    // Relaxed: as in `begin`.
                    s.down_until.store(until, Ordering::Relaxed);
                }
                Refilled::Failed
            }
        }
    }

    /// The lease a reply `{S, I, τ, now, k, cap}` carries, on the local clock: sent at local
    /// `sent`, received at `received`, mapped with the limiter's bound on the clocks' offset
    /// narrowed by this round trip (see [`LeasedGcra`]'s docs and `lease/offset.rs`); or, for
    /// k = 0 (the key's queue is full), how long until the fewest permits asked for fit.
    ///
    /// # Errors
    ///
    /// [`Error::BadReply`] for a reply of another shape, or with another I or τ (two limiters
    /// with different rates on one prefix).
    fn lease_of(&self, value: &Value, sent: u64, received: u64) -> Result<Leased, Error> {
        let s = &self.shared;
        let [start, interval, tolerance, now, permits, cap] = ints::<6>(value)?;
        if interval != s.gcra.interval() || tolerance != s.gcra.tolerance() {
            return Err(Error::BadReply(format!(
                "lease of I = {interval} µs, τ = {tolerance} µs for a limiter of I = {} µs, τ = {} µs",
                s.gcra.interval(),
                s.gcra.tolerance()
            )));
        }
        if permits == 0 {
            // Room for the fewest permits opens when now + cap (τ + Q, or τ while
            // per-decision callers wait) reaches S + fewest·I; one I at least (the request's
            // own permits are what it waits for).
            let opens = (start + interval).saturating_sub(now + cap);
            return Ok(Leased::Full(opens.max(interval).saturating_mul(1000)));
        }
        let mut kept = s.offset.lock().unwrap_or_else(|e| e.into_inner());
        let mut lease = offset::map(
            &mut kept, start, interval, tolerance, now, permits, sent, received,
        );
        drop(kept);
        if s.planted_early {
            lease.first_slot = i64::MIN / 2;
        }
        Ok(Leased::Lease(lease))
    }

    /// A blocking connection for one round trip (a new one if none is free).
    fn connection(&self) -> SyncConnection {
        let s = &self.shared;
        let free = s.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        free.unwrap_or_else(|| SyncConnection::new(s.client.clone()))
    }

    fn put_back(&self, con: SyncConnection) {
        let mut pool = self.shared.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 8 {
            pool.push(con);
        }
    }

    /// Returns the unused permits of every idle key's lease (no grant since the previous
    /// sweep, at least `idle_after` ago) by the reservation-cancel rule, and drops the idle
    /// keys that no [`LeasedKey`](super::LeasedKey) holds. One pipelined round trip over a
    /// blocking connection; sweeps also run by themselves after a refill once `idle_after` has
    /// passed, and when the key table is full. Returns the permits given back.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let _ = limiter.try_acquire_n("k", 1);
    /// let given_back = limiter.return_idle();
    /// # let _ = given_back;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn return_idle(&self) -> u64 {
        self.sweep(false)
    }

    /// Returns the unused permits of every key's lease and drops every key no
    /// [`LeasedKey`](super::LeasedKey) holds (before a shutdown: a process that exits with
    /// leases loses them). Returns the permits given back.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let _ = limiter.try_acquire_n("k", 1);
    /// limiter.return_all();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn return_all(&self) -> u64 {
        self.sweep(true)
    }

    fn sweep_if_due(&self) {
        let s = &self.shared;
        let now = s.clock.now();
        // Relaxed: only spaces sweeps out; two at once are harmless (a key closes once).
        let last = s.last_sweep.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= s.idle_after
            && s.last_sweep
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.sweep(false);
        }
    }

    /// Closes the leases of idle keys (or of all, `all`), drops the closed keys no handle
    /// holds, and returns their unused permits.
    fn sweep(&self, all: bool) -> u64 {
        let s = &self.shared;
        // Relaxed: as in `sweep_if_due`.
        s.last_sweep.store(s.clock.now(), Ordering::Relaxed);
        let mut closed: Vec<(Vec<u8>, Lease, u64)> = Vec::new();
        let keys = s.keys.pin();
        for (key, state) in keys.iter() {
            let word = state.lease.word();
            // Relaxed (both): the sweeps' own record of the word.
            let idle = all || state.seen.swap(word, Ordering::Relaxed) == word;
            if !idle {
                continue;
            }
            // Only the map holds it: no handle, and no caller between a lookup and its take
            // past this instant finds it again (a caller that already has it finds it retired).
            let drop_key = Arc::strong_count(state) == 1;
            match state.lease.close(drop_key) {
                Closed::Busy => continue,
                Closed::Done { current, waiting } => {
                    // The waiting lease first: it is later in the server's queue.
                    let returns = waiting.map(|w| (w, 0)).into_iter().chain(current);
                    for (lease, spent) in returns {
                        closed.push((self.redis_key(key), lease, spent));
                    }
                }
            }
            if drop_key {
                s.counters.skipped(state.lease.skipped());
                keys.remove(key);
            }
        }
        drop(keys);
        self.give_back(&closed)
    }

    /// Sends the returns of `closed` leases in one pipeline; the permits given back.
    fn give_back(&self, closed: &[(Vec<u8>, Lease, u64)]) -> u64 {
        let s = &self.shared;
        if closed.is_empty() {
            return 0;
        }
        let i = s.gcra.interval();
        let mut call = Call::new(&RETURN);
        for (key, lease, spent) in closed {
            let end = lease.start + lease.permits * i;
            call.push(key, &[], &[end, lease.start + spent * i, 0]);
        }
        s.counters.round_trip();
        let deadline = Deadline::new(s.deadline);
        let mut con = self.connection();
        let unspent: u64 = closed.iter().map(|(_, l, spent)| l.permits - spent).sum();
        let replies: Replies = match call.send_blocking(&mut con, &deadline) {
            Ok(replies) => replies,
            Err(_) => {
                s.counters.error();
                // Closed and not given back: passed over.
                s.counters.skipped(unspent);
                return 0;
            }
        };
        self.put_back(con);
        let mut returned = 0;
        for ((_, lease, spent), reply) in closed.iter().zip(replies) {
            if matches!(reply, Ok(Value::Int(1))) {
                returned += lease.permits - spent;
            }
        }
        s.counters.returned(returned);
        s.counters.skipped(unspent - returned);
        returned
    }
}

//! [`LeasedGcra`]: one GCRA limit shared through Redis, decided in process at CAS speed. A
//! process takes a batch of permits (a lease) in one round trip and hands them out locally
//! with one CAS each; the limit is never exceeded, in any window, across all processes.
//!
//! The protocol and its proof are in [`LeasedGcra`]'s docs (public, for users).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hotlimit::{Clock, Decision, Denied, Quota};

use crate::connection::SyncConnection;
use crate::durable::Durable;
use crate::error::Error;
use crate::fence::Fence;
use crate::gcra::GcraScript;
use crate::policy::OnError;
use crate::sync::{AtomicU64, Ordering};

mod builder;
mod decide;
mod deprecated;
#[cfg(test)]
mod model;
mod offset;
mod refill;
mod stats;
pub(crate) mod word;

pub use builder::LeasedGcraBuilder;
pub use decide::LeasedDecide;
pub use stats::LeaseStats;

use refill::Refilled;
use stats::LeaseCounters;
use word::{KeyLease, Take};

/// A GCRA limit shared through Redis whose decisions are made in process: each key's permits
/// come in leases, taken from Redis in one round trip and granted locally with one CAS each,
/// and the limit holds exactly across all processes.
///
/// # Why it is exact
///
/// The lease script (`lua/lease.lua`) advances a key's TAT from S = max(TAT, now) to
/// S + k·I, as k grants in a row would, and returns S, I, τ and the server's time. Permit m
/// (0-based) of the lease may be granted only inside its window, in server time,
/// [S + (m + 1)·I − τ, S + m·I]: from its *slot* (the earliest time a grant at TAT S + m·I
/// passes the GCRA test) to its *deadline* (after it, a grant would start from `now`, not from
/// S + m·I). A permit granted inside its window is exactly a GCRA grant on the server's
/// sequence of TATs, so every grant g — leased or per-decision, from any process — has its TAT
/// after it in [t_g + I, t_g + τ], and those TATs are I apart. In a window [t, t + d] they lie
/// in [t + I, t + d + τ], so at most (d + τ − I)/I + 1 = b + ⌊d/I⌋ grants: the bound of
/// [`Gcra`](hotlimit::Gcra), for all processes together.
///
/// Server time reaches a process only in replies. The reply's `now` was read between the local
/// send t₀ and receive t₁, so the server's clock at local time t lies in
/// [now + (t − t₁), now + (t − t₀) + 1 µs] (its `TIME` is truncated to µs). A slot is mapped
/// late (t₁ + slot − now) and a deadline early (t₀ + deadline − now − 1 µs): the mapping's
/// error only ever shrinks a window. Each clock may run up to 500 ppm off true time (NTP's
/// largest slew), so their rates may differ by up to 1,000 ppm: the limiter keeps the tightest
/// bound on the offset between them over all its round trips, widened by 1/999 of its age, and
/// widens it by 1/999 of each lease's reach (its
/// last deadline past t₁). So a reply read late (t₁ late: its thread waited for a core) costs
/// its lease nothing when an earlier round trip bounded the offset well, and the windows
/// shrink by the best round trip plus 1 µs per ms of age and of reach. A server clock that is
/// *set* (stepped) breaks every Redis limiter's arithmetic alike (a step that leaves the old
/// bound and the new round trip's disjoint resets the bound to the round trip's own).
///
/// A window lasts τ − I = (b − 1)·I, less the round trip: leases need a burst of at least 2
/// (the builder refuses 1) and work best when (b − 1)·I is well above the round trip. A
/// permit whose deadline passes unused is skipped (lost), as is the tail of a lease that a
/// request for more permits than it has left moves past.
///
/// # The queue, and what a lost key costs
///
/// The lease script never lets a key's TAT run more than τ + Q ahead of the server's `now`
/// (Q = τ/2, the queue: leases may reserve permits past the burst, but only that far). A
/// lease that does not fit whole is cut to what fits, and refused (retry-after: until the
/// request's permits fit) when not even those do. So a process's lease never waits behind
/// seconds of other processes' leases, and every process on an over-limit key gets its turn
/// (measured in `tests/fairness.rs`: every process ≥ 3/4 of its fair share in every second).
/// A refused lease is remembered: the key asks Redis again only when the refusal said room
/// opens, so threads that keep asking cost no round trips meanwhile.
///
/// # Per-decision callers on a leased key
///
/// A per-decision grant ([`RedisLimiter`](crate::RedisLimiter)'s GCRA on the same key) passes
/// only while the bucket (τ) has room, and leases queue past it, so on an over-limit key the
/// leases would always be first. Instead, a per-decision refusal that finds the TAT past
/// now + τ (only leases put it there) marks the key *waiting* for 2τ (a key
/// `{key}` + 0xFF + `waiting`, or `key` + 0xFF + `waiting` for a key with a hash tag: in the
/// key's Redis Cluster slot), and while the mark lives leases stop at the bucket, now + τ, as
/// per-decision grants do: both kinds then take permits as they come free (measured: 2 leased
/// and 2 per-decision processes at 2,000/s, 1,590–2,106 grants each leased and 2,055–2,350
/// each per decision in 3 s; before the mark, 3–232 per decision). The mark only shortens
/// leases, so the bound is untouched. The price: leases on a key with per-decision callers
/// asking faster than the rate come one or a few permits at a time, about one round trip per
/// grant, as the per-decision calls do. A key that holds a `}` but no hash tag has no name in
/// its slot for the mark, and goes without it (its per-decision callers get what the leases
/// leave).
///
/// When the server loses a key (a restart without persistence, `FLUSHALL`, eviction), the
/// leases taken before the loss stay valid in their processes, with TATs (the GCRA sequence
/// of their permits) at most t_loss + τ + Q. A lease that finds the key missing starts it at
/// now + Q (not now), so every TAT after the loss is past now + Q ≥ t_loss + Q: the TATs
/// from before and after overlap on at most τ, at most b of them, I apart on each side. In a
/// window [t, t + d] the grants' TATs lie in [t + I, t + d + τ], so at most b + ⌊d/I⌋ from
/// each sequence's part outside the overlap and at most b more inside it: **a loss costs at
/// most b**, whatever the number of processes and the lease sizes (as it does a per-decision
/// key). The price: a leased key that was idle (missing) starts with b/2 permits at once
/// instead of b. Per-decision callers on the same key start a missing key at `now`, so a
/// mixed key's loss costs up to b + Q/I = 1.5 b; a failover to a replica that lags (the key
/// present but stale) likewise costs up to 1.5 b; [`fenced`](LeasedGcraBuilder::fenced)
/// mode makes a whole-server loss cost nothing (fence τ + Q), and
/// [`durable`](LeasedGcraBuilder::durable) leases make a failover cost nothing.
///
/// # Under-use, never over-admission
///
/// - A lease taken while the key is idle starts at S = now: its first permits' deadlines pass
///   during the round trip (⌈rtt/I⌉ permits lost per such lease).
/// - Unused permits go back only by the reservation-cancel rule (`lua/lease_return.lua`): when
///   the TAT is still the lease's end (nothing charged after it), it moves back to where the
///   spent permits leave it; otherwise their slots are lost. [`LeasedGcra::return_idle`] and
///   [`LeasedGcra::return_all`] return leases; a process that dies loses its leases.
/// - Each loss is at most one lease, and leases are sized from the key's recent grant rate
///   (× `lease_time`, capped by `max_lease`): [`LeaseStats::skipped`] counts them.
///
/// # Local state
///
/// One lease state per key (`lease/word.rs`): one atomic word `{lease, next}` (a grant is one
/// CAS, a denial none) and two lease records (the current one and one waiting). Refills start
/// when a grant leaves the lease half spent and no lease waits: one refill in flight per key,
/// made by the thread whose grant triggered it (no background thread: a refill costs that
/// caller one round trip, one grant in about k/2). While Redis cannot be reached, leased
/// permits stay valid; once they are spent the [`OnError`] policy decides.
///
/// # The sliding log is never leased
///
/// A leased log permit would be recorded in the server's log at lease time and granted later:
/// the window, counted from the recorded time, would let the next `limit` permits in while the
/// leased ones are still being granted, and up to 2·`limit` could fall in one window. GCRA
/// has no such record: its state is a time, and a permit's window says when it may be used.
///
/// Cheap to clone (one `Arc`). Connections, as everywhere in this crate (CONTRIBUTING.md,
/// "Names"): a `decide_*` call takes the caller's connection as its first argument
/// ([`decide_async`](Self::decide_async)), [`with_connection`](Self::with_connection) binds one
/// for the tower layer, and a call that takes none uses connections the limiter owns.
/// [`try_acquire_n`](Self::try_acquire_n) is such a call: its grants are local, and the refill
/// a grant may trigger goes through the limiter's own blocking connections, made from the
/// client given to [`build`](LeasedGcraBuilder::build) (a
/// [`RedisLimiter`](crate::RedisLimiter) decides every request by a round trip the caller
/// asked for, so it owns none). All of them share the same leases.
///
/// # Examples
///
/// ```no_run
/// use hotlimit::Rate;
/// use hotlimit_redis::{LeasedGcra, OnError};
///
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// let limiter = LeasedGcra::builder(Rate::per_second(10_000)?, OnError::FailClosed)
///     .burst(200)
///     .build(client)?;
/// match limiter.try_acquire_n("api", 1) {
///     Ok(()) => println!("go"),
///     Err(denied) => println!("retry after {:?}", denied.retry_after()),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LeasedGcra<C: Clock = hotlimit::QuantaClock> {
    shared: Arc<Shared<C>>,
}

impl<C: Clock> Clone for LeasedGcra<C> {
    fn clone(&self) -> Self {
        LeasedGcra {
            shared: self.shared.clone(),
        }
    }
}

/// What every clone shares.
#[derive(Debug)]
pub(crate) struct Shared<C> {
    gcra: GcraScript,
    /// I in local ns.
    interval: u64,
    quota: Quota,
    prefix: Vec<u8>,
    max_key_len: usize,
    deadline: Duration,
    reprobe_after: Duration,
    on_error: OnError,
    keys: papaya::HashMap<Box<str>, Arc<KeyState>, foldhash::fast::RandomState>,
    capacity: usize,
    max_lease: u64,
    /// ns of recent demand a refill is sized for.
    lease_time: u64,
    /// ns without a grant after which a key's lease is returned and the key dropped.
    idle_after: u64,
    clock: C,
    /// Local ns until which Redis is not asked; 0 when it is up.
    down_until: AtomicU64,
    /// Local ns of the last idle sweep.
    last_sweep: AtomicU64,
    /// The last round trip's length, ns (sizes leases and the wait while one is refilled).
    rtt: AtomicU64,
    /// The tightest bound on the server's clock against the local one so far (`lease/offset.rs`);
    /// locked once per refill.
    offset: Mutex<Option<offset::Offset>>,
    counters: LeaseCounters,
    /// Blocking connections for refills and returns, taken one per round trip.
    client: redis::Client,
    pool: Mutex<Vec<SyncConnection>>,
    /// Q, µs: how far past τ the key's TAT may run ahead of the server's now (the lease queue;
    /// τ/2). A lost key restarts at now + Q (see `lua/lease.lua`).
    queue: u64,
    /// Fenced mode: the fence (τ + Q), or none.
    fence: Option<Fence>,
    /// Durable leases: the replicas to wait for, or none.
    durable: Option<Durable>,
    /// Planted bug (tests only): every leased permit may be granted at once, before its slot.
    planted_early: bool,
}

/// A key's lease state and what the idle sweep needs.
#[derive(Debug, Default)]
pub(crate) struct KeyState {
    lease: KeyLease,
    /// The word at the previous sweep: unchanged means no grant since.
    seen: AtomicU64,
    /// Local ns at which the current lease arrived (for the demand estimate).
    arrived: AtomicU64,
    /// Local ns before which Redis has no room for a lease of one permit, as its last refusal
    /// said (0: none): a refill before it is answered locally, with no round trip.
    full_until: AtomicU64,
}

impl LeasedGcra {
    /// A builder for a leased GCRA at `rate` (burst `rate.limit()` unless set, at least 2),
    /// with `on_error` deciding once a key's leased permits are spent and Redis cannot lease
    /// more.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen).build(client)?;
    /// assert_eq!(limiter.quota().limit(), 100);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(rate: hotlimit::Rate, on_error: OnError) -> LeasedGcraBuilder {
        LeasedGcraBuilder::new(rate, on_error)
    }
}

impl<C: Clock> LeasedGcra<C> {
    /// Takes `n` permits under `key`, all or nothing, in process while the key's lease holds
    /// them. The caller whose grant leaves the lease half spent refills it (one round trip,
    /// within the deadline, after its own permits are granted); a request that finds no lease
    /// (the key's first, or one that outran its lease) waits for one refill. It never waits
    /// for a permit (hence `try_`): a permit whose slot has not come is denied with its
    /// retry-after; the round trip of a refill is bounded by the deadline.
    ///
    /// # Errors
    ///
    /// [`Denied`]: until the next leased permit's slot (exact, local); for about a round trip
    /// while another thread refills the key's lease; by the [`OnError`] policy once the lease
    /// is spent and Redis cannot lease more; never (`retry_after() == None`) when `n` exceeds
    /// the burst or the key is longer than `max_key_len`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let granted = (0..100).filter(|_| limiter.try_acquire_n("k", 1).is_ok()).count();
    /// assert!(granted <= 1000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_acquire_n(&self, key: &str, n: u32) -> Result<(), Denied> {
        self.try_acquire_n_timed(key, n).map(drop)
    }

    /// [`try_acquire_n`](Self::try_acquire_n), returning on a grant the time on the limiter's
    /// clock at which it was decided (the `now` of the check that granted it): for audits
    /// that compare grants across threads and processes (the tests'; not part of the API).
    #[doc(hidden)]
    pub fn try_acquire_n_timed(&self, key: &str, n: u32) -> Result<u64, Denied> {
        let s = &self.shared;
        if n == 0 {
            return Ok(s.clock.now());
        }
        if u64::from(n) > s.gcra.burst() {
            return Err(Denied::new(None));
        }
        let keys = s.keys.pin();
        let Some(state) = keys.get(key) else {
            drop(keys);
            let state = self.state(key)?;
            return self.take_blocking(&state, key, n);
        };
        // The hot path: one take under the map's guard, no reference count touched.
        let now = s.clock.now();
        let first = state.lease.take(u64::from(n), now, s.interval);
        if let Take::Granted { low: false } = first {
            return Ok(now);
        }
        if let Take::Wait(ns) = first {
            return Err(Denied::new(Some(Duration::from_nanos(ns))));
        }
        // A refill: a round trip, with the key's state held by its own reference.
        let state = state.clone();
        drop(keys);
        self.settle(&state, key, n, first, now)
    }

    /// A handle on `key`'s lease: its [`try_acquire_n`](LeasedKey::try_acquire_n) needs no map
    /// lookup (the cost of a hot key's grant is then one CAS, as an in-process `Gcra`'s).
    ///
    /// # Errors
    ///
    /// [`Error::KeyTooLong`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let hot = limiter.key("tenant-7")?;
    /// let _ = hot.try_acquire_n(1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self, key: &str) -> Result<LeasedKey<C>, Error> {
        self.check_key(key)?;
        let keys = self.shared.keys.pin();
        let state = keys
            .get_or_insert_with(key.into(), Default::default)
            .clone();
        Ok(LeasedKey {
            limiter: self.clone(),
            key: key.into(),
            state,
        })
    }

    /// The policy's quota: the burst b per the time it takes to refill it, b·I (the truthful
    /// quota of a GCRA; `remaining` is never above it).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    /// use std::time::Duration;
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .burst(10)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// assert_eq!((limiter.quota().limit(), limiter.quota().window()), (10, Duration::from_millis(100)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn quota(&self) -> Quota {
        self.shared.quota
    }

    /// What has been leased, returned and lost so far (a snapshot of the counters).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// assert_eq!(limiter.stats().round_trips, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> LeaseStats {
        let s = &self.shared;
        let keys = s.keys.pin();
        let skipped = keys.values().map(|k| k.lease.skipped()).sum();
        let held = keys.values().map(|k| k.lease.held()).sum();
        s.counters.snapshot(keys.len(), skipped, held)
    }

    /// The Redis key that holds `key`'s TAT: the prefix, then `key` (the same key a
    /// [`RedisLimiter::gcra`](crate::RedisLimiter::gcra) with this prefix decides on: both may
    /// run on one key together).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(100)?, OnError::FailOpen)
    ///     .prefix("rl:")
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// assert_eq!(limiter.redis_key("a"), b"rl:a");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn redis_key(&self, key: &str) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.shared.prefix.len() + key.len());
        full.extend_from_slice(&self.shared.prefix);
        full.extend_from_slice(key.as_bytes());
        full
    }

    fn check_key(&self, key: &str) -> Result<(), Error> {
        let len = self.shared.prefix.len() + key.len();
        if len > self.shared.max_key_len {
            return Err(Error::KeyTooLong {
                len,
                max: self.shared.max_key_len,
            });
        }
        Ok(())
    }

    /// The key's state, made if new; denied never for a key that is too long, and for want of
    /// room when the table is full of keys that are not idle.
    fn state(&self, key: &str) -> Result<Arc<KeyState>, Denied> {
        if self.check_key(key).is_err() {
            return Err(Denied::new(None));
        }
        let s = &self.shared;
        let keys = s.keys.pin();
        if let Some(state) = keys.get(key) {
            return Ok(state.clone());
        }
        if keys.len() >= s.capacity {
            drop(keys);
            self.return_idle();
            if s.keys.len() >= s.capacity {
                return Err(Denied::new(Some(Duration::from_nanos(s.idle_after))));
            }
            return Ok(s
                .keys
                .pin()
                .get_or_insert_with(key.into(), Default::default)
                .clone());
        }
        Ok(keys
            .get_or_insert_with(key.into(), Default::default)
            .clone())
    }

    /// Takes `n` (≥ 1, at most the burst) permits from `state`, refilling through the
    /// limiter's own connections.
    fn take_blocking(&self, state: &KeyState, key: &str, n: u32) -> Result<u64, Denied> {
        let s = &self.shared;
        let now = s.clock.now();
        let first = state.lease.take(u64::from(n), now, s.interval);
        self.settle(state, key, n, first, now)
    }

    /// What a take at `now` that returned `first` ends as, refilling through the limiter's
    /// own connections when it must.
    fn settle(
        &self,
        state: &KeyState,
        key: &str,
        n: u32,
        first: Take,
        now: u64,
    ) -> Result<u64, Denied> {
        match next(first, now) {
            Next::Done(outcome) => outcome,
            Next::Refill { granted } => {
                let refilled = self.refill_blocking(state, key, n, now);
                self.after_refill(state, key, n, granted, refilled)
            }
        }
    }

    /// After a refill: a request already granted stays granted; one that found the key dry
    /// takes again from the new lease, or is denied while another thread refills, or goes to
    /// the policy when Redis could not lease.
    fn after_refill(
        &self,
        state: &KeyState,
        key: &str,
        n: u32,
        granted: Option<u64>,
        refilled: Refilled,
    ) -> Result<u64, Denied> {
        let s = &self.shared;
        if let Some(at) = granted {
            return Ok(at);
        }
        match refilled {
            Refilled::Installed => {
                let now = s.clock.now();
                match state.lease.take(u64::from(n), now, s.interval) {
                    Take::Granted { .. } => Ok(now),
                    Take::Wait(ns) => Err(Denied::new(Some(Duration::from_nanos(ns)))),
                    Take::Dry => Err(self.busy()),
                }
            }
            Refilled::Busy => Err(self.busy()),
            Refilled::Wait(ns) => Err(Denied::new(Some(Duration::from_nanos(ns)))),
            Refilled::Failed => self.policy(key, n),
        }
    }

    /// The denial while another thread refills the key: about one round trip.
    fn busy(&self) -> Denied {
        let s = &self.shared;
        // Relaxed: an estimate.
        let rtt = s.rtt.load(Ordering::Relaxed);
        Denied::new(Some(Duration::from_nanos(rtt.max(s.interval))))
    }

    /// The policy's decision for a key whose leases are spent while Redis cannot lease more.
    fn policy(&self, key: &str, n: u32) -> Result<u64, Denied> {
        let s = &self.shared;
        s.counters.fallback();
        let outcome = s
            .on_error
            .decide(s.quota, key, n, s.reprobe_after)
            .outcome();
        outcome.map(|()| s.clock.now())
    }

    /// The decision with what headers need, once the take is known: `remaining` (permits of the
    /// current lease whose slots have come, at most b) and `reset` (when the key's TAT, as this
    /// process last leased it, is reached).
    fn decision(&self, state: &KeyState, outcome: Result<(), Denied>) -> Decision {
        let s = &self.shared;
        let now = s.clock.now();
        let (lease, spent) = state.lease.current();
        let since = i128::from(now) - i128::from(lease.first_slot);
        let reached = if since >= 0 {
            ((since as u128 / u128::from(s.interval)) as u64)
                .saturating_add(1)
                .min(lease.permits)
        } else {
            0
        };
        let remaining = reached.saturating_sub(spent).min(s.gcra.burst());
        let end =
            i128::from(lease.first_deadline) + i128::from(lease.permits) * i128::from(s.interval);
        let reset =
            Duration::from_nanos((end - i128::from(now)).clamp(0, i128::from(u64::MAX)) as u64);
        Decision::new(s.quota, outcome, remaining, reset)
    }
}

/// What follows a take at `now`: its outcome (on a grant, `now`), or a refill first
/// (`granted`: the take itself was granted at that time, and left the lease low).
enum Next {
    Done(Result<u64, Denied>),
    Refill { granted: Option<u64> },
}

fn next(first: Take, now: u64) -> Next {
    match first {
        Take::Granted { low: false } => Next::Done(Ok(now)),
        Take::Granted { low: true } => Next::Refill { granted: Some(now) },
        Take::Wait(ns) => Next::Done(Err(Denied::new(Some(Duration::from_nanos(ns))))),
        Take::Dry => Next::Refill { granted: None },
    }
}

/// A handle on one key of a [`LeasedGcra`]: grants with no map lookup. Made by
/// [`LeasedGcra::key`]. A key with a handle is not dropped from the limiter when idle (its
/// lease may still be returned).
///
/// # Examples
///
/// ```no_run
/// use hotlimit::Rate;
/// use hotlimit_redis::{LeasedGcra, OnError};
///
/// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
/// let hot = limiter.key("hot")?;
/// if hot.try_acquire_n(1).is_ok() { /* ... */ }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LeasedKey<C: Clock = hotlimit::QuantaClock> {
    limiter: LeasedGcra<C>,
    key: Box<str>,
    state: Arc<KeyState>,
}

impl<C: Clock> LeasedKey<C> {
    /// [`LeasedGcra::try_acquire_n`] on this key.
    ///
    /// # Errors
    ///
    /// As [`LeasedGcra::try_acquire_n`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use hotlimit::Rate;
    /// use hotlimit_redis::{LeasedGcra, OnError};
    ///
    /// let limiter = LeasedGcra::builder(Rate::per_second(1000)?, OnError::FailClosed)
    ///     .build(redis::Client::open("redis://127.0.0.1/")?)?;
    /// let hot = limiter.key("hot")?;
    /// let _ = hot.try_acquire_n(2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn try_acquire_n(&self, n: u32) -> Result<(), Denied> {
        let s = &self.limiter.shared;
        if n == 0 {
            return Ok(());
        }
        if u64::from(n) > s.gcra.burst() {
            return Err(Denied::new(None));
        }
        // The hot path: the clock, one take, no reference count and no lookup.
        let now = s.clock.now();
        match self.state.lease.take(u64::from(n), now, s.interval) {
            Take::Granted { low: false } => Ok(()),
            Take::Wait(ns) => Err(Denied::new(Some(Duration::from_nanos(ns)))),
            first => self.refill(n, first, now),
        }
    }

    /// The rest of a take that needs a refill (out of line).
    #[cold]
    #[inline(never)]
    fn refill(&self, n: u32, first: Take, now: u64) -> Result<(), Denied> {
        let l = &self.limiter;
        let outcome = l.settle(&self.state, &self.key, n, first, now);
        if outcome.is_err() && self.state.lease.is_retired() {
            // Dropped from the limiter in the instant this handle was made: by the map.
            return l.try_acquire_n(&self.key, n);
        }
        outcome.map(drop)
    }
}

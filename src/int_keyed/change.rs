//! Live rate changes of [`IntKeyed`]: one rate for every key, changed while requests run,
//! each key's state carried by `Gcra`'s rule.
//!
//! # Two parameter sets and a parity per slot
//!
//! A committed slot's flags say which of two parameter sets its TAT runs on (`{ COMMITTED,
//! parity }`); new states commit with the set `current` names. A change writes the new rate
//! into the other set, makes it current, waits for the commits still under way on the old one,
//! then carries every slot of the old parity by one CAS of the whole slot: `{k, old, tat}` →
//! `{k, new, carried}`. A request decides with the set its slot's parity names and installs its
//! grant by a CAS of the whole slot from the value it read, so a request that read a slot
//! before its carry fails its CAS and decides again on the new value, and one after it reads
//! the new parity: every grant is judged by the parameters its state runs on, exactly as
//! `Gcra`'s frozen-TAT change achieves for one word.
//!
//! Why the sets can be rewritten: a set is written only by a change that makes it current, and
//! the change before it carried every slot off it and waited for every commit on it, so no
//! slot holds that parity while it is written, and none can until it is current. A request
//! whose CAS succeeds read a slot that held its value throughout (no slot value repeats: a
//! carry moves the TAT up by at least 1 ns, and a re-created key starts at or above every TAT
//! it had, with a grant count of 0 that no earlier state of it at that TAT had; see
//! `insert.rs`), so its parity's set was not rewritten meanwhile: its reads of the set are
//! consistent.

use super::*;
use crate::rate::Rate;

/// One parameter set: the GCRA numbers every key on it uses, and the rate (for the getters).
#[derive(Debug)]
pub(super) struct KeyParams {
    interval: AtomicU64,
    tolerance: AtomicU64,
    /// τ − I: a one-permit request's slack.
    slack_one: AtomicU64,
    burst: AtomicU64,
    limit: AtomicU64,
    period: AtomicU64,
}

/// A parameter set as read: `(interval, tolerance, slack_one, burst)`.
pub(super) type Numbers = (u64, u64, u64, u64);

impl KeyParams {
    pub(super) fn new(p: Params, rate: Rate) -> Self {
        let set = KeyParams {
            interval: AtomicU64::new(0),
            tolerance: AtomicU64::new(0),
            slack_one: AtomicU64::new(0),
            burst: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            period: AtomicU64::new(0),
        };
        set.store(p, rate);
        set
    }

    /// Writes the set (only while no slot can hold its parity: see the module docs).
    fn store(&self, p: Params, rate: Rate) {
        // Release (all): a slot of this parity is written (SeqCst) only after, and a request
        // reads these after loading that slot (SeqCst).
        self.interval.store(p.interval, Ordering::Release);
        self.tolerance.store(p.tolerance, Ordering::Release);
        self.slack_one
            .store(p.tolerance - p.interval, Ordering::Release);
        self.burst.store(p.burst, Ordering::Release);
        self.limit.store(rate.limit(), Ordering::Release);
        self.period.store(rate.period_nanos(), Ordering::Release);
    }

    /// The numbers, read after the slot whose parity chose this set.
    #[inline(always)]
    pub(super) fn numbers(&self) -> Numbers {
        // Relaxed (all): ordered after the SeqCst load of the slot that named this set, which
        // synchronizes with the slot's writer, after whom these were written (module docs).
        (
            self.interval.load(Ordering::Relaxed),
            self.tolerance.load(Ordering::Relaxed),
            self.slack_one.load(Ordering::Relaxed),
            self.burst.load(Ordering::Relaxed),
        )
    }

    /// The rate of the set.
    pub(super) fn rate(&self) -> Rate {
        // Relaxed (both): the current set is not rewritten (see `store`).
        let limit = self.limit.load(Ordering::Relaxed);
        let period = self.period.load(Ordering::Relaxed);
        match Rate::new(limit, Duration::from_nanos(period)) {
            Ok(rate) => rate,
            // Written only from a validated `Rate`.
            Err(e) => unreachable!("a stored rate is valid: {e}"),
        }
    }
}

/// The parity bit of a committed slot's meta word.
#[inline(always)]
pub(super) fn parity(meta: u64) -> usize {
    ((meta & PARITY) >> 62) as usize
}

impl<K, C> IntKeyed<K, C> {
    /// The numbers a committed slot's meta word runs on.
    #[inline(always)]
    pub(super) fn numbers_of(&self, meta: u64) -> Numbers {
        self.params[parity(meta)].numbers()
    }

    /// The set new states commit on.
    pub(super) fn current_params(&self) -> &KeyParams {
        // SeqCst: see `enter_commit`.
        &self.params[self.current.load(Ordering::SeqCst) as usize & 1]
    }

    /// Registers a commit on the current set and returns its flags (`COMMITTED | parity`); the
    /// set stays as it is until [`leave_commit`](IntKeyed::leave_commit).
    pub(super) fn enter_commit(&self) -> (usize, u64) {
        loop {
            // SeqCst (all three): a change makes the other set current, then reads this
            // counter; we count ourselves in, then read `current` again. In the total order,
            // either our second read comes before the change's store (then its read of the
            // counter sees us and it waits for our commit), or it sees the new set and we
            // count ourselves out and take that one.
            let p = self.current.load(Ordering::SeqCst) as usize & 1;
            self.committers[p].fetch_add(1, Ordering::SeqCst);
            if self.current.load(Ordering::SeqCst) as usize & 1 == p {
                return (p, COMMITTED | ((p as u64) << 62));
            }
            self.committers[p].fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Ends a commit registered by [`enter_commit`](IntKeyed::enter_commit).
    pub(super) fn leave_commit(&self, p: usize) {
        // SeqCst: after the commit's CAS; a change waiting on the counter then sees the slot.
        self.committers[p].fetch_sub(1, Ordering::SeqCst);
    }

    /// Changes the rate (and burst: `None` for the rate's `limit`) of every key at `now` (ns on
    /// this limiter's clock), while other threads keep acquiring: each key's state is carried
    /// as [`Gcra::set_rate_at`](crate::Gcra::set_rate_at) carries its one state (the permits
    /// free before stay free, at most the new burst; time owed is never forgiven), so for
    /// every key the bound across the change is the one `Gcra` proves.
    ///
    /// Requests racing the change are judged wholly under the old rate or wholly under the new
    /// one (a request whose decision straddles its key's carry fails its CAS and decides
    /// again); new keys created during it end on the new rate. Cost: one pass over the table
    /// (every slot read, every key carried by one CAS), on the calling thread; changes take
    /// turns. For a moment some keys run on the new rate and some on the old.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming `rate` or `burst` as [`IntKeyedBuilder::build`]; nothing is
    /// changed.
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, ManualClock, Rate};
    ///
    /// let per_ip: IntKeyed<u32, _> =
    ///     IntKeyed::builder(Rate::per_second(10)?).clock(ManualClock::new()).build()?;
    /// per_ip.try_acquire_n_at(7, 4, 0).unwrap(); // 6 of 10 left
    /// per_ip.set_rate_at(Rate::per_second(100)?, None, 0)?;
    /// // Still 6 free (not 100): the change frees nothing; the rest fills at 100/s.
    /// assert_eq!(per_ip.remaining_at(7, 0), 6);
    /// assert_eq!(per_ip.rate(), Rate::per_second(100)?);
    /// assert_eq!(per_ip.remaining_at(8, 0), 100); // a new key gets the new burst
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_at(&self, rate: Rate, burst: Option<u64>, now: u64) -> Result<(), ConfigError> {
        let new = checked_params(rate, burst)?;
        crate::sync::take_turn(&self.changes);
        // SeqCst: the changes take turns, so this is the set every slot but stragglers
        // (waited for below) runs on.
        let p = self.current.load(Ordering::SeqCst) as usize & 1;
        let q = 1 - p;
        let (interval, tolerance, _, _) = self.params[p].numbers();
        self.params[q].store(new, rate);
        // SeqCst: see `enter_commit`.
        self.current.store(q as u64, Ordering::SeqCst);
        let mut contention = Contention::new();
        // SeqCst: see `enter_commit`: once it reads 0, no commit on the old set is under way or
        // can start.
        while self.committers[p].load(Ordering::SeqCst) != 0 {
            contention.wait();
        }
        let now = self.relative(now);
        let flags = COMMITTED | ((q as u64) << 62);
        for i in 0..self.table.len() * WAYS {
            let slot = self.slot(i);
            loop {
                // SeqCst: as every slot access (see `acquire`).
                let v = slot.load(Ordering::SeqCst);
                let meta = meta_of(v);
                if meta & COMMITTED == 0 || parity(meta) != p {
                    break;
                }
                let tat = meta & TAT;
                // Gcra's rule, raised to at least 1 ns past the old TAT so that no slot value
                // repeats (see the module docs).
                let carried = crate::gcra::carry_tat(
                    tat,
                    now,
                    (interval, tolerance),
                    (new.interval, new.tolerance),
                )
                .max(tat + 1)
                .min(TAT);
                // The grant count goes with the state.
                let carried = (meta & GRANTS) | carried;
                #[cfg(hotlimit_loom)]
                if self.plant() == Plant::CarryByStore {
                    // Planted: the value read, carried and stored over whatever came since.
                    let now_there = slot.load(Ordering::SeqCst);
                    let _ = slot.compare_exchange(
                        now_there,
                        pack(key_of(v), flags | carried),
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    );
                    break;
                }
                // SeqCst: as above. A grant landed first makes it fail: carry its value.
                if slot
                    .compare_exchange(
                        v,
                        pack(key_of(v), flags | carried),
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_ok()
                {
                    break;
                }
            }
        }
        crate::sync::end_turn(&self.changes);
        Ok(())
    }
}

impl<K, C: Clock> IntKeyed<K, C> {
    /// Changes the rate of every key now; the burst becomes the new rate's `limit`:
    /// [`set_rate_at`](IntKeyed::set_rate_at) with the clock read, which says what happens to
    /// the permits already granted.
    ///
    /// # Errors
    ///
    /// As [`set_rate_at`](IntKeyed::set_rate_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    /// use std::net::Ipv4Addr;
    ///
    /// let per_ip: IntKeyed<Ipv4Addr> = IntKeyed::new(Rate::per_second(100)?)?;
    /// per_ip.try_acquire(Ipv4Addr::new(192, 0, 2, 1))?;
    /// per_ip.set_rate(Rate::per_second(20)?)?; // retuned without a restart
    /// assert_eq!((per_ip.rate(), per_ip.burst()), (Rate::per_second(20)?, 20));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_rate(&self, rate: Rate) -> Result<(), ConfigError> {
        self.set_rate_at(rate, None, self.clock.now())
    }

    /// Changes the rate and the burst of every key now: [`set_rate_at`](IntKeyed::set_rate_at)
    /// with the clock read.
    ///
    /// # Errors
    ///
    /// As [`set_rate_at`](IntKeyed::set_rate_at).
    ///
    /// # Examples
    ///
    /// ```
    /// use hotlimit::{IntKeyed, Rate};
    ///
    /// let per_user: IntKeyed<u64> = IntKeyed::new(Rate::per_second(10)?)?;
    /// per_user.set_rate_and_burst(Rate::per_second(10)?, 50)?;
    /// assert_eq!(per_user.burst(), 50);
    /// assert_eq!(per_user.set_rate_and_burst(Rate::per_second(10)?, 0).unwrap_err().field(), "burst");
    /// # Ok::<(), hotlimit::ConfigError>(())
    /// ```
    pub fn set_rate_and_burst(&self, rate: Rate, burst: u64) -> Result<(), ConfigError> {
        self.set_rate_at(rate, Some(burst), self.clock.now())
    }
}

/// GCRA's parameters for `rate` and `burst`, checked as the builder checks them (the
/// tolerance must fit a slot's 60-bit TAT).
pub(super) fn checked_params(rate: Rate, burst: Option<u64>) -> Result<Params, ConfigError> {
    let p = Params::new(rate, burst)?;
    if p.tolerance > TAT {
        return Err(ConfigError::new(
            "burst",
            Value::Count(u128::from(p.burst)),
            "burst × emission interval must be under 2^60 ns (36 years)",
        ));
    }
    Ok(p)
}

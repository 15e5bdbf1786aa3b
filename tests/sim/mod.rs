//! Simulated time for the wait tests, with no real sleeping: [`SimTimer`] for async waiters
//! (a timer is a deadline on a `ManualClock`; one executor polls every task and moves the
//! clock to the next deadline when none can progress) and [`Baton`] for blocking waiters
//! (real threads, exactly one running at a time; a thread that sleeps hands the baton back
//! and the driver moves the clock to the next deadline). Both are deterministic, and both
//! pick adversarially among waiters that are due at the same time (the highest task first),
//! so arrival order cannot come from the harness.
#![allow(dead_code)] // each test file uses a part

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hotlimit::{Clock, ManualClock, Sleep};

pub(crate) const MS: u64 = 1_000_000;

/// A simulated timer on a `ManualClock`: `sleep(d)` is a future that is ready once the clock
/// reads its deadline plus a deterministic "lateness" (0 to `max_late`, varying per timer),
/// as a real runtime's timers wake late by varying amounts.
pub(crate) struct SimTimer {
    pub(crate) clock: ManualClock,
    max_late: u64,
    made: RefCell<u64>,
    deadlines: RefCell<Vec<u64>>,
}

/// One timer of a [`SimTimer`].
pub(crate) struct Timer {
    clock: ManualClock,
    fires_at: u64,
}

impl Future for Timer {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.clock.now() >= self.fires_at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// A boxed task for [`SimTimer::run`].
pub(crate) type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

impl SimTimer {
    pub(crate) fn new(clock: &ManualClock, max_late: u64) -> SimTimer {
        SimTimer {
            clock: clock.clone(),
            max_late,
            made: RefCell::new(0),
            deadlines: RefCell::new(Vec::new()),
        }
    }

    /// A timer for `d`, late by this timer's share of `max_late`.
    pub(crate) fn sleep(&self, d: Duration) -> Timer {
        let mut made = self.made.borrow_mut();
        *made += 1;
        // A fixed pseudo-random lateness per timer (splitmix-like), so runs are repeatable.
        let late = if self.max_late == 0 {
            0
        } else {
            made.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) % (self.max_late + 1)
        };
        self.at(self.clock.now() + d.as_nanos() as u64 + late)
    }

    /// A timer for `d` that fires exactly on time (for arrivals that must not move).
    pub(crate) fn sleep_exact(&self, d: Duration) -> Timer {
        self.at(self.clock.now() + d.as_nanos() as u64)
    }

    fn at(&self, fires_at: u64) -> Timer {
        self.deadlines.borrow_mut().push(fires_at);
        Timer {
            clock: self.clock.clone(),
            fires_at,
        }
    }

    /// Polls every task (in reverse order, so that polling order cannot explain the result)
    /// until all are done, moving the clock to the next timer when none can progress.
    pub(crate) fn run(&self, mut tasks: Vec<Task<'_>>) {
        let mut cx = Context::from_waker(Waker::noop());
        let mut done = vec![false; tasks.len()];
        for _round in 0..1_000_000 {
            for (i, task) in tasks.iter_mut().enumerate().rev() {
                if !done[i] && task.as_mut().poll(&mut cx).is_ready() {
                    done[i] = true;
                }
            }
            if done.iter().all(|&d| d) {
                return;
            }
            let now = self.clock.now();
            let next = self
                .deadlines
                .borrow()
                .iter()
                .copied()
                .filter(|&t| t > now)
                .min();
            match next {
                Some(t) => self.clock.set(Duration::from_nanos(t)),
                None => panic!("tasks pending with no timer to wait for"),
            }
        }
        panic!("the simulation did not finish");
    }
}

/// Blocking waiters on simulated time: `run(n, body)` starts `n` real threads, and exactly
/// one of them runs at any moment. A thread that sleeps (through its [`BatonSleeper`], a
/// [`Sleep`] on the shared `ManualClock`) parks with its deadline; when every thread is
/// parked or finished, the driver moves the clock to the earliest deadline and wakes that
/// thread alone (among equal deadlines, the highest task first).
pub(crate) struct Baton {
    pub(crate) clock: ManualClock,
    state: Mutex<BatonState>,
    turn: Condvar,
}

#[derive(Default)]
struct BatonState {
    /// `(task, deadline)` of every parked thread.
    parked: Vec<(usize, u64)>,
    /// The task that holds the baton; `None`: the driver.
    running: Option<usize>,
    finished: usize,
}

/// One thread's sleeper on a [`Baton`]: its clock is the baton's, and sleeping hands the
/// baton back until the driver wakes this task.
pub(crate) struct BatonSleeper<'a> {
    baton: &'a Baton,
    task: usize,
}

impl Clock for BatonSleeper<'_> {
    fn now(&self) -> u64 {
        self.baton.clock.now()
    }
}

impl Sleep for BatonSleeper<'_> {
    fn sleep_until(&self, deadline: u64) {
        if self.baton.clock.now() < deadline {
            self.baton.park(self.task, deadline);
        }
    }
}

/// Marks its task finished (also when the task panics), handing the baton back.
struct Finished<'a>(&'a Baton);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        st.finished += 1;
        st.running = None;
        self.0.turn.notify_all();
    }
}

impl Baton {
    pub(crate) fn new(clock: &ManualClock) -> Baton {
        Baton {
            clock: clock.clone(),
            state: Mutex::new(BatonState::default()),
            turn: Condvar::new(),
        }
    }

    /// Parks `task` until `deadline`, handing the baton back; returns when the driver wakes it.
    fn park(&self, task: usize, deadline: u64) {
        let mut st = self.state.lock().unwrap();
        st.parked.push((task, deadline));
        st.running = None;
        self.turn.notify_all();
        while st.running != Some(task) {
            st = self.turn.wait(st).unwrap();
        }
    }

    /// Runs `body(task, sleeper)` on `n` threads, one at a time, until all have finished.
    /// Each thread starts parked at the current time.
    pub(crate) fn run<F>(&self, n: usize, body: F)
    where
        F: Fn(usize, &BatonSleeper<'_>) + Sync,
    {
        let start = self.clock.now();
        std::thread::scope(|s| {
            for task in 0..n {
                let body = &body;
                s.spawn(move || {
                    let _finished = Finished(self);
                    self.park(task, start);
                    body(task, &BatonSleeper { baton: self, task });
                });
            }
            self.drive(n);
        });
    }

    /// The driver: whenever no thread runs and every thread is parked or finished, wake the
    /// parked thread with the earliest deadline (the highest task among equals).
    fn drive(&self, n: usize) {
        let mut st = self.state.lock().unwrap();
        for _step in 0..1_000_000 {
            while st.running.is_some() || st.parked.len() + st.finished < n {
                st = self.turn.wait(st).unwrap();
            }
            if st.finished == n {
                return;
            }
            let (i, &(task, deadline)) = st
                .parked
                .iter()
                .enumerate()
                .min_by_key(|&(_, &(task, deadline))| (deadline, std::cmp::Reverse(task)))
                .unwrap();
            st.parked.swap_remove(i);
            if deadline > self.clock.now() {
                self.clock.set(Duration::from_nanos(deadline));
            }
            st.running = Some(task);
            self.turn.notify_all();
        }
        panic!("the simulation did not finish");
    }
}

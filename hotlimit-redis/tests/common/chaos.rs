//! The chaos suite's shared tools: the real-time clock (the clock of Redis's `TIME` on this
//! machine), 4 "processes" hammering one key, the audit of every window, and a loopback TCP
//! proxy the test controls (a network cut, and a failover's switch of server).

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hotlimit::Clock;

/// Nanoseconds of the system's real-time clock: on one machine, the clock of Redis's `TIME`,
/// so that a grant's time on it is its time on the server's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealTime;

impl Clock for RealTime {
    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("a clock after 1970")
            .as_nanos() as u64
    }
}

/// Every grant of a run, in ns on [`RealTime`].
pub struct Grants {
    pub times: Vec<u64>,
    /// Grants after the fault's instant.
    pub after_fault: usize,
    /// The fault's instant (ns).
    pub fault_time: u64,
}

impl Grants {
    /// Grants in the `ms` milliseconds from the fault's instant (a refusal window shows as
    /// fewer than the rate's).
    pub fn within_after_fault(&self, ms: u64) -> usize {
        let end = self.fault_time + ms * 1_000_000;
        self.times
            .iter()
            .filter(|&&t| t > self.fault_time && t <= end)
            .count()
    }
}

/// How long a run goes on past its time while no grant has come after the fault.
pub const RECOVERY: Duration = Duration::from_secs(10);

/// Runs `processes` (each a closure that tries one grant and returns its time, or how long to
/// wait), one thread each, for `millis`; calls `fault` on this thread `fault_at` ms in (it may
/// block: its return is the fault's end). The run lasts at least `millis − fault_at` after the
/// fault's end, so that a fault that a loaded machine slows (a restart, a fill) still leaves
/// the run its time to serve again (issue 43's stress: a restart that ended near the run's
/// end left no grant after it), and then goes on while no grant has come after the fault, up
/// to [`RECOVERY`] more: the audits ask that service comes back, not how fast (a 50 ms
/// deadline on a machine at load 20, two stress runs beside a build, missed every round trip
/// of the 700 ms after a restart in about 1 run in 10). Each thread sleeps a denial's
/// retry-after (at most 2 ms).
pub fn hammer(
    processes: Vec<Box<dyn FnMut() -> Result<u64, Duration> + Send>>,
    millis: u64,
    fault_at: u64,
    fault: impl FnOnce(),
) -> Grants {
    hammer_for(processes, millis, fault_at, RECOVERY, fault)
}

/// [`hammer`], waiting at most `recovery` for a grant after the fault (zero for a run that
/// cannot serve after it: durable grants once the replica is gone).
pub fn hammer_for(
    processes: Vec<Box<dyn FnMut() -> Result<u64, Duration> + Send>>,
    millis: u64,
    fault_at: u64,
    recovery: Duration,
    fault: impl FnOnce(),
) -> Grants {
    let start = RealTime.now();
    let end = Arc::new(AtomicU64::new(start + millis * 1_000_000));
    // The latest grant's time (0: none yet).
    let latest = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = processes
        .into_iter()
        .map(|mut p| {
            let (end, latest) = (end.clone(), latest.clone());
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                // Relaxed: the run's end, only ever moved later; a stale read ends a thread's
                // run no earlier than the first end.
                while RealTime.now() < end.load(Ordering::Relaxed) {
                    match p() {
                        Ok(at) => {
                            mine.push(at);
                            // Relaxed: a progress flag; the grants go back through `join`.
                            latest.fetch_max(at, Ordering::Relaxed);
                        }
                        Err(wait) => std::thread::sleep(wait.min(Duration::from_millis(2))),
                    }
                }
                mine
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(fault_at));
    let fault_time = RealTime.now();
    fault();
    let served = RealTime.now() + millis.saturating_sub(fault_at) * 1_000_000;
    // Relaxed: as the threads' loads.
    end.fetch_max(served, Ordering::Relaxed);
    let give_up = served + recovery.as_nanos() as u64;
    loop {
        let now = RealTime.now();
        // Relaxed: as above; a stale read extends the run by one more step.
        if latest.load(Ordering::Relaxed) > fault_time || now >= give_up {
            break;
        }
        if now + 50_000_000 > end.load(Ordering::Relaxed) {
            // Relaxed: as the threads' loads.
            end.fetch_max(now + 100_000_000, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut times: Vec<u64> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a process"))
        .collect();
    times.sort_unstable();
    let after_fault = times.iter().filter(|&&t| t > fault_time).count();
    Grants {
        times,
        after_fault,
        fault_time,
    }
}

/// The largest excess of any window over the GCRA bound: max over every pair of grants
/// i ≤ j (sorted) of (j − i + 1) − (b + ⌊(t_j − t_i + slack)/I⌋), and 0 if none is over.
/// `slack` widens every window (the uncertainty of a grant's time; 0 for leased grants,
/// stamped with the time their check read).
pub fn excess(times: &[u64], interval_ns: u64, burst: u64, slack: u64) -> u64 {
    let mut worst = 0i64;
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as i64;
            let bound = (burst + (times[j] - times[i] + slack) / interval_ns) as i64;
            worst = worst.max(count - bound);
        }
    }
    worst as u64
}

/// The planted twin of an audit: `times` with `allowed + b + ⌊slack/I⌋ + 1` grants more at one
/// instant (a window of length 0, widened by `slack`, holds at most b + ⌊slack/I⌋): an audit
/// that allows `allowed` must see it over.
pub fn planted(times: &[u64], allowed: u64, burst: u64, slack: u64, interval_ns: u64) -> Vec<u64> {
    let at = times.get(times.len() / 2).copied().unwrap_or(1);
    let mut twin = times.to_vec();
    let extra = allowed + burst + slack / interval_ns + 1;
    twin.extend(std::iter::repeat_n(at, extra as usize));
    twin.sort_unstable();
    twin
}

/// A loopback TCP proxy to a server's unix socket: the limiters connect to its port; the test
/// cuts it (every connection dropped, new ones closed at once) and heals it, or points it at
/// another server. Stopped on drop.
pub struct Proxy {
    pub port: u16,
    shared: Arc<ProxyShared>,
    accept: Option<std::thread::JoinHandle<()>>,
}

struct ProxyShared {
    target: Mutex<PathBuf>,
    cut: AtomicBool,
    stop: AtomicBool,
    live: Mutex<Vec<TcpStream>>,
}

impl Proxy {
    pub fn new(target: PathBuf) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(ProxyShared {
            target: Mutex::new(target),
            cut: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            live: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                if s.cut.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let target = s.target.lock().unwrap().clone();
                let Ok(server) = UnixStream::connect(&target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                s.live.lock().unwrap().push(client.try_clone().unwrap());
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe_back(server, client);
            }
        });
        Proxy {
            port,
            shared,
            accept: Some(accept),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    /// Drops every connection; new ones are closed at once until [`heal`](Proxy::heal).
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        self.drop_live();
    }

    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }

    /// Points new connections at `target` and drops the live ones.
    pub fn retarget(&self, target: PathBuf) {
        *self.shared.target.lock().unwrap() = target;
        self.drop_live();
    }

    fn drop_live(&self) {
        for c in self.shared.live.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

fn pipe(mut from: TcpStream, mut to: UnixStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

fn pipe_back(mut from: UnixStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.drop_live();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

//! A `redis-server` of the test's own on a temporary unix socket (or loopback TCP port for
//! cluster nodes), killed when the guard drops.

#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
pub mod chaos;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const INSTALL: &str = "redis-server is needed by these tests and was not found or would not \
start. Install it (Debian/Ubuntu: `apt-get update && apt-get install -y redis-server`, \
macOS: `brew install redis`) so that `redis-server` and `redis-cli` are on the PATH";

/// One running server; killed (and its directory removed) on drop.
pub struct RedisServer {
    child: Option<Child>,
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn fresh_dir() -> PathBuf {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hotlimit-redis-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// A free loopback port (bound, then released for the server to take).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl RedisServer {
    /// A server on a unix socket only (`--port 0`).
    pub fn start() -> RedisServer {
        RedisServer::launch(0, &[])
    }

    /// A cluster node on a free loopback TCP port (and its own unix socket).
    pub fn cluster_node() -> RedisServer {
        RedisServer::launch_tcp(&["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"])
    }

    /// A server in a fresh directory, on its own unix socket and on `port` (0: none), started
    /// with the extra arguments `args`.
    pub fn launch(port: u16, args: &[&str]) -> RedisServer {
        let mut s = RedisServer::unstarted(port);
        s.spawn(args);
        s
    }

    /// A server as [`launch`](RedisServer::launch), also on a free loopback TCP port. A port
    /// found free can be taken before the server binds it (another test process asked the
    /// kernel for one at the same moment: issue 43's stress run, four copies at once, saw a
    /// server exit that way and the test wait 30 s for it); a server that exits before it
    /// answers is started again on a new port, up to five times.
    pub fn launch_tcp(args: &[&str]) -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            let mut s = RedisServer::unstarted(free_port());
            match s.try_spawn(args) {
                Ok(()) => return s,
                Err(e) => last = e,
            }
        }
        panic!("{INSTALL} ({last}, five ports in a row)");
    }

    fn unstarted(port: u16) -> RedisServer {
        let dir = fresh_dir();
        let socket = dir.join("redis.sock");
        RedisServer {
            child: None,
            dir,
            socket,
            port,
        }
    }

    fn spawn(&mut self, extra: &[&str]) {
        if let Err(e) = self.try_spawn(extra) {
            panic!("{INSTALL} ({e})");
        }
    }

    /// Starts the server and waits until it answers `PING`; an error says why it did not (it
    /// exited, or gave no answer within 30 s).
    fn try_spawn(&mut self, extra: &[&str]) -> Result<(), String> {
        let port = self.port.to_string();
        let child = Command::new("redis-server")
            .args(["--save", "", "--appendonly", "no", "--port", &port])
            .args(["--bind", "127.0.0.1", "--unixsocket"])
            .arg(&self.socket)
            .arg("--dir")
            .arg(&self.dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => panic!("{INSTALL} ({e})"),
        };
        self.child = Some(child);
        let start = Instant::now();
        // 30 s: a machine loaded far past its cores (issue 43's stress, beside two builds)
        // once kept a starting server from answering within 10.
        while start.elapsed() < Duration::from_secs(30) {
            if self.socket.exists()
                && let Ok(mut c) = self.client().get_connection()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return Ok(());
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                return Err(format!(
                    "redis-server exited before answering ({status}; port {})",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
        Err(format!(
            "no answer on {} within 30 s",
            self.socket.display()
        ))
    }

    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("a valid unix socket URL")
    }

    pub fn con(&self) -> redis::Connection {
        self.client()
            .get_connection()
            .expect("connect to the test server")
    }

    /// Kills the server (SIGKILL: no goodbye to clients) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Stops the server with SIGSTOP: connections stay open and connects still succeed (the
    /// kernel queues them), but nothing is answered until [`resume`](RedisServer::resume).
    pub fn stop(&self) {
        self.signal("-STOP");
    }

    /// Lets a stopped server run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running server").id()
    }

    fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(sig)
            .arg(self.pid().to_string())
            .status()
            .expect("kill(1)");
        assert!(status.success(), "kill {sig} {}", self.pid());
    }

    /// Starts it again on the same socket.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn(&[]);
    }

    /// Starts it again on the same socket with the extra arguments `args`.
    pub fn restart_with(&mut self, args: &[&str]) {
        self.kill();
        self.spawn(args);
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A key no other test case uses.
pub fn unique_key(tag: &str) -> String {
    format!("{tag}:{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

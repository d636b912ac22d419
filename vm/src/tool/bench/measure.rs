//! One measurement: `capvm run FILE --tools CHAIN --tier T --report R.json` as a child
//! process of the current executable, so that peak memory is that run's own. Wall time
//! from spawn to exit; CPU time and peak RSS from `wait4`'s rusage (exact, per child).
//!
//! Each run has a wall-time and a memory limit ([`Limits`]). A watcher thread polls the
//! child's resident set (`/proc/PID/statm`) and the clock and kills it with `SIGKILL`
//! past either; a run whose peak RSS (`ru_maxrss`) ended above the memory limit between
//! two polls counts as over it too. The limit is on the resident set, not on address
//! space: `RLIMIT_AS` would also count what the runtime reserves without touching
//! (thread stacks, allocator arenas, the JIT's code regions), and a run that hits it
//! fails in whichever allocation comes first (a refused thread is a guest runtime
//! error, exit 70), so it could not be told apart from a real failure.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::run::Tier;

/// How often the watcher samples the child's RSS and the clock.
const POLL: Duration = Duration::from_millis(20);

/// The per-run limits of `capvm bench` (`--time-limit`, `--mem-limit`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Wall time from spawn.
    pub time: Duration,
    /// Peak resident set, in bytes.
    pub mem_bytes: u64,
}

/// How a run ended with respect to the limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran to its end within both limits (its exit code may still be wrong).
    Finished,
    /// Killed at the wall-time limit.
    TimeLimit,
    /// Its resident set exceeded the memory limit (killed, or ended above it).
    Oom,
}

impl Status {
    /// Whether the run hit a limit.
    pub fn limited(self) -> bool {
        self != Status::Finished
    }

    /// The cell text of a limited run: `>60s` or `OOM`; `None` when finished.
    pub fn mark(self, limits: &Limits) -> Option<String> {
        match self {
            Status::Finished => None,
            Status::TimeLimit => Some(format!(">{}s", limits.time.as_secs_f64())),
            Status::Oom => Some("OOM".into()),
        }
    }
}

/// What the child did.
#[derive(Clone, Debug)]
pub struct ChildRun {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: u64,
    pub status: Status,
    /// The exit code; `None` when a signal ended it (`signal`).
    pub exit: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The `--report` document, if the child wrote a readable one.
    pub report: Option<serde_json::Value>,
}

/// Scratch files of the measurements (removed on drop).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    pub fn new() -> io::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!("capvm-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch { dir })
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `exe run file --tools chain --tier tier` under `limits` and measure it, with
/// `--report …` when `stats` (the run then counts what it decides inline and takes
/// the passes' statistics at its end). The child's stdout and stderr go to scratch
/// files (no reader thread competes with it).
pub fn run_child(
    exe: &Path,
    file: &Path,
    chain: &str,
    tier: Tier,
    limits: &Limits,
    scratch: &Scratch,
    stats: bool,
) -> io::Result<ChildRun> {
    let report = scratch.path("report.json");
    let out_path = scratch.path("stdout");
    let err_path = scratch.path("stderr");
    let _ = std::fs::remove_file(&report);
    let stdout = std::fs::File::create(&out_path)?;
    let stderr = std::fs::File::create(&err_path)?;
    let mut cmd = Command::new(exe);
    cmd.arg("run")
        .arg(file)
        .args(["--tools", chain, "--tier", &tier.to_string()]);
    if stats {
        cmd.arg("--report").arg(&report);
    }
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let m = measure(cmd, limits)?;
    let read = |p: &Path| {
        std::fs::read(p)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(ChildRun {
        wall_s: m.wall_s,
        cpu_s: m.cpu_s,
        max_rss_kib: m.max_rss_kib,
        status: m.status,
        exit: m.exit,
        signal: m.signal,
        stdout: read(&out_path),
        stderr: read(&err_path),
        report: std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
    })
}

/// The numbers of one child process.
#[derive(Clone, Copy, Debug)]
struct Measured {
    wall_s: f64,
    cpu_s: f64,
    max_rss_kib: u64,
    status: Status,
    exit: Option<i32>,
    signal: Option<i32>,
}

/// Spawn `cmd`, watch it against `limits`, reap it.
fn measure(mut cmd: Command, limits: &Limits) -> io::Result<Measured> {
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    // `true` once the child has ended (a zombie, not yet reaped): from then on the
    // watcher must not signal `pid`. The flag is set under the lock the watcher holds
    // while it signals, and the child is reaped only after, so the pid it signals
    // cannot have been reused.
    let ended = Arc::new((Mutex::new(false), Condvar::new()));
    let watcher = {
        let ended = Arc::clone(&ended);
        let limits = *limits;
        std::thread::spawn(move || watch(pid, start, &limits, &ended))
    };
    let waited = wait_exited(pid);
    let wall_s = start.elapsed().as_secs_f64();
    {
        let (lock, cv) = &*ended;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }
    let killed = watcher.join().unwrap_or(None);
    waited?;
    let (status, usage) = wait4(pid)?;
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let (exit, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    // Linux reports ru_maxrss in KiB.
    let max_rss_kib = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    let status =
        if killed == Some(Status::Oom) || max_rss_kib.saturating_mul(1024) > limits.mem_bytes {
            Status::Oom
        } else {
            killed.unwrap_or(Status::Finished)
        };
    Ok(Measured {
        wall_s,
        cpu_s: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib,
        status,
        exit,
        signal,
    })
}

/// The watcher thread: until `ended`, every [`POLL`], kill `pid` if its RSS is above
/// the memory limit or the time is up. Returns the limit it killed the child for.
fn watch(
    pid: libc::pid_t,
    start: Instant,
    limits: &Limits,
    ended: &(Mutex<bool>, Condvar),
) -> Option<Status> {
    let (lock, cv) = ended;
    let deadline = start + limits.time;
    let mut done = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if *done {
            return None;
        }
        let over = if rss_bytes(pid).is_some_and(|r| r > limits.mem_bytes) {
            Some(Status::Oom)
        } else if Instant::now() >= deadline {
            Some(Status::TimeLimit)
        } else {
            None
        };
        if let Some(why) = over {
            // SAFETY: plain syscall; `pid` is our unreaped child (see `measure`).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Some(why);
        }
        let wait = POLL.min(deadline.saturating_duration_since(Instant::now()));
        done = cv
            .wait_timeout(done, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The resident set of `pid` from `/proc/PID/statm` (`None` if unreadable).
fn rss_bytes(pid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages.saturating_mul(u64::try_from(page).ok()?))
}

/// Block until `pid` has ended, without reaping it (`waitid` with `WNOWAIT`).
fn wait_exited(pid: libc::pid_t) -> io::Result<()> {
    let id = libc::id_t::try_from(pid).map_err(io::Error::other)?;
    loop {
        // SAFETY: siginfo_t is plain old data; all-zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid for writes; `pid` is our own unreaped child.
        let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reap `pid` and return its wait status and resource usage. The `Child` handle is
/// not waited on afterwards (dropping it does not wait).
fn wait4(pid: libc::pid_t) -> io::Result<(libc::c_int, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid for writes; `pid` is our own child,
        // not reaped before (std only reaps on `wait`, which we never call).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::zombie_processes, reason = "reaped by wait4")]
    fn wait4_reports_exit_code_and_usage() {
        let child = Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .expect("sh");
        let (status, usage) = wait4(libc::pid_t::try_from(child.id()).unwrap()).unwrap();
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 3);
        assert!(usage.ru_maxrss > 0);
    }

    const ROOMY: Limits = Limits {
        time: Duration::from_secs(600),
        mem_bytes: 1 << 40,
    };

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_run_within_the_limits_is_finished_with_its_exit_code() {
        let m = measure(sh("exit 5"), &ROOMY).unwrap();
        assert_eq!(m.status, Status::Finished);
        assert_eq!((m.exit, m.signal), (Some(5), None));
    }

    #[test]
    fn the_time_limit_kills_the_run() {
        let limits = Limits {
            time: Duration::from_millis(100),
            ..ROOMY
        };
        let m = measure(sh("sleep 30"), &limits).unwrap();
        assert_eq!(m.status, Status::TimeLimit);
        assert_eq!((m.exit, m.signal), (None, Some(libc::SIGKILL)));
        assert!(m.wall_s < 30.0);
    }

    #[test]
    fn the_memory_limit_kills_the_run_or_marks_its_peak() {
        // Any process has more than 4 KiB resident: killed at the first poll, or,
        // if it ended before, over the limit by its ru_maxrss.
        let limits = Limits {
            mem_bytes: 4096,
            ..ROOMY
        };
        let m = measure(sh("sleep 30"), &limits).unwrap();
        assert_eq!(m.status, Status::Oom);
        assert_eq!(m.signal, Some(libc::SIGKILL));
        let m = measure(sh("exit 0"), &limits).unwrap();
        assert_eq!(m.status, Status::Oom);
    }

    #[test]
    fn marks() {
        let l = Limits {
            time: Duration::from_millis(1500),
            mem_bytes: 1 << 30,
        };
        assert_eq!(Status::TimeLimit.mark(&l).as_deref(), Some(">1.5s"));
        assert_eq!(Status::Oom.mark(&l).as_deref(), Some("OOM"));
        assert_eq!(Status::Finished.mark(&l), None);
        assert!(!Status::Finished.limited() && Status::Oom.limited());
    }
}

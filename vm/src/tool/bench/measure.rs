//! One measurement: `capvm run FILE --tools CHAIN --tier T --report R.json` as a child
//! process of the current executable, so that peak memory is that run's own. Wall time
//! from spawn to reaping; CPU time and peak RSS from `wait4`'s rusage (exact, per child).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::run::Tier;

/// What the child did.
#[derive(Clone, Debug)]
pub struct ChildRun {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: u64,
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

/// Run `exe run file --tools chain --tier tier --report …` and measure it. The child's
/// stdout and stderr go to scratch files (no reader thread competes with it).
pub fn run_child(
    exe: &Path,
    file: &Path,
    chain: &str,
    tier: Tier,
    scratch: &Scratch,
) -> io::Result<ChildRun> {
    let report = scratch.path("report.json");
    let out_path = scratch.path("stdout");
    let err_path = scratch.path("stderr");
    let _ = std::fs::remove_file(&report);
    let stdout = std::fs::File::create(&out_path)?;
    let stderr = std::fs::File::create(&err_path)?;
    let start = Instant::now();
    let child = Command::new(exe)
        .arg("run")
        .arg(file)
        .args(["--tools", chain, "--tier", &tier.to_string(), "--report"])
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()?;
    let (status, usage) = wait4(child.id())?;
    let wall_s = start.elapsed().as_secs_f64();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let (exit, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    let read = |p: &Path| {
        std::fs::read(p)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(ChildRun {
        wall_s,
        cpu_s: tv(usage.ru_utime) + tv(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        exit,
        signal,
        stdout: read(&out_path),
        stderr: read(&err_path),
        report: std::fs::read(&report)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok()),
    })
}

/// Reap `pid` and return its wait status and resource usage. The `Child` handle is
/// not waited on afterwards (dropping it does not wait).
fn wait4(pid: u32) -> io::Result<(libc::c_int, libc::rusage)> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
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
        let (status, usage) = wait4(child.id()).unwrap();
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 3);
        assert!(usage.ru_maxrss > 0);
    }
}

"""Timing one process, shared by the bench scripts (`trace_throughput.py`,
`slp_table.py`): wall time from start to exit with no wrapper process (a wrapper's own
start would count in every wall time, which matters for runs of a few milliseconds),
and the peak RSS from GNU `/usr/bin/time` in a run of its own (a child forked from
Python would count the Python process's pages as its own)."""
import os
import re
import subprocess
import sys
import tempfile
import time


def run(cmd):
    """Wall seconds, CPU seconds (user + system, the child's `rusage`), exit code, stderr."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    return wall, ru.ru_utime + ru.ru_stime, p.returncode, text


def peak_rss(cmd):
    """Peak RSS in MB of one more run of `cmd`."""
    p = subprocess.run(["/usr/bin/time", "-f", "@@maxrss %M", *cmd],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    m = re.search(r"@@maxrss ([0-9]+)", p.stderr)
    if not m:
        sys.exit(f"no figure from /usr/bin/time for {' '.join(cmd)}")
    return int(m.group(1)) / 1024

#!/usr/bin/env python3
"""Bare JIT vs interpreter vs plain Rust on three compute kernels.

Usage (from the repository root):
    cargo build --release -p vm
    python3 benches/kernels/measure.py

Builds the Rust versions with rustc -O into target/kernels/, then reports the best of
N runs of user+system CPU time for each (CPU time, not wall time, so a busy machine
distorts the ratios less). All ratios come from this one run.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "benches", "kernels")
CAPVM = os.path.join(ROOT, "target", "release", "capvm")
OUT = os.path.join(ROOT, "target", "kernels")


def cpu_ms(cmd, reps):
    best = float("inf")
    for _ in range(reps):
        pid = os.fork()
        if pid == 0:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(cmd[0], cmd)
        _, status, ru = os.wait4(pid, 0)
        if status != 0:
            sys.exit(f"{' '.join(cmd)} failed with status {status}")
        best = min(best, ru.ru_utime + ru.ru_stime)
    return best * 1000.0


def main():
    if not os.path.exists(CAPVM):
        sys.exit("build capvm first: cargo build --release -p vm")
    os.makedirs(OUT, exist_ok=True)
    kernels = [("loop10m", "loop"), ("matmul", "matmul"), ("series", "series")]
    for _, r in kernels:
        subprocess.run(["rustc", "-O", "-o", os.path.join(OUT, r), os.path.join(HERE, r + ".rs")], check=True)
    print(f"{'kernel':10} {'interp ms':>10} {'jit ms':>8} {'rust ms':>8} {'interp/jit':>11} {'jit/rust':>9}")
    for k, r in kernels:
        cj = os.path.join(HERE, k + ".cj")
        i = cpu_ms([CAPVM, "run", cj, "--tier", "interp", "--tools", "none"], 3)
        j = cpu_ms([CAPVM, "run", cj, "--tier", "jit", "--tools", "none"], 5)
        rs = cpu_ms([os.path.join(OUT, r)], 5)
        print(f"{k:10} {i:10.1f} {j:8.1f} {rs:8.1f} {i / j:10.1f}x {j / rs:8.2f}x")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Throughput of `capvm analyze` on a long generated trace (README, "Measured results").

    cargo build --release -p vm
    cargo run --release -p analyses --features testing --example gen_long_trace > /tmp/t.std
    python3 benches/trace_throughput.py /tmp/t.std [--reps 5] [--capvm target/release/capvm]
        [--tools none,fasttrack,djit,goldilocks,eraser,hb,fasttrack@single] [--single-thread]

Runs `wc -l TRACE` and `capvm analyze --tools T --stats TRACE` for each T, `--reps`
times each, interleaved, and prints a Markdown table: median wall time, median CPU
time (user + system), events per second (of the wall time), peak RSS (GNU
`/usr/bin/time`'s `%M`, one more run) and the wall-time ratios to `wc -l` and to `fasttrack` of the
same run. A tool written `T@single` runs with `--single-thread`
(reader and analysis on one thread), so both modes can be compared in one run.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

from proctime import peak_rss, run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--capvm", default="target/release/capvm")
    ap.add_argument("--tools", default="none,fasttrack,djit,goldilocks,eraser,hb")
    ap.add_argument("--single-thread", action="store_true")
    a = ap.parse_args()
    tools = a.tools.split(",")
    extra = ["--single-thread"] if a.single_thread else []
    def analyze(t):
        tool, _, mode = t.partition("@")
        flags = ["--single-thread"] if mode == "single" else extra
        return [a.capvm, "analyze", "--tools", tool, "--stats", *flags, a.trace]

    configs = [("wc -l", ["wc", "-l", a.trace])] + [(t, analyze(t)) for t in tools]
    walls = {name: [] for name, _ in configs}
    cpus = {name: [] for name, _ in configs}
    rss = {name: 0.0 for name, _ in configs}
    events = None
    for _ in range(a.reps):
        for name, cmd in configs:
            wall, cpu, code, err = run(cmd)
            if code not in (0, 66):
                sys.exit(f"{' '.join(cmd)} exited {code}:\n{err}")
            walls[name].append(wall)
            cpus[name].append(cpu)
            for line in err.splitlines():
                if line.startswith("throughput: "):
                    events = int(line.split()[1])
    for name, cmd in configs:
        rss[name] = peak_rss(cmd)
    if events is None:
        # A capvm without the throughput line: count the event lines.
        with open(a.trace, "rb") as f:
            events = sum(1 for l in f if l.strip() and not l.lstrip().startswith(b"#"))
    med = {k: statistics.median(v) for k, v in walls.items()}
    base = med.get("fasttrack")
    print(f"{events} events, {os.path.getsize(a.trace) / 1e6:.1f} MB, median of {a.reps} runs")
    print()
    print("| command | wall | CPU | M events/s | peak RSS | vs `wc -l` | vs `fasttrack` |")
    print("|---|---|---|---|---|---|---|")
    for name, _ in configs:
        m = med[name]
        tool, _, mode = name.partition("@")
        single = " --single-thread" if mode == "single" or a.single_thread else ""
        label = "`wc -l`" if name == "wc -l" else f"`capvm analyze --tools {tool}{single}`"
        rate = f"{events / m / 1e6:.1f}" if events and name != "wc -l" else ""
        vs_ft = f"{m / base:.2f}×" if base and name != "wc -l" else ""
        print(
            f"| {label} | {m * 1000:.0f} ms | {statistics.median(cpus[name]) * 1000:.0f} ms "
            f"| {rate} | {rss[name]:.0f} MB | "
            f"{m / med['wc -l']:.1f}× | {vs_ft} |"
        )


if __name__ == "__main__":
    main()

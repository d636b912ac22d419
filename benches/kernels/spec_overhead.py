#!/usr/bin/env python3
"""Slowdown of the specification checkers vs the bare JIT.

Runs every deterministic kernel of corpus/bench (small size) bare (`--tools none`), under
`fasttrack`, `singletrack:fasttrack` and `atomicity:fasttrack`, all on the JIT tier, and
prints the best-of-N CPU time of each and the ratios to the bare run from this one run.

Usage (from the repository root): cargo build --release -p vm && python3 benches/kernels/spec_overhead.py
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import CAPVM, ROOT, cpu_ms  # noqa: E402

CHAINS = ["none", "fasttrack", "singletrack:fasttrack", "atomicity:fasttrack"]


def main():
    bench = os.path.join(ROOT, "corpus", "bench")
    kernels = sorted(
        f[:-3]
        for f in os.listdir(bench)
        if f.endswith(".cj") and not f.endswith("_large.cj")
        and "deterministic" in open(os.path.join(bench, f)).read()
    )
    print(f"{'kernel':14} {'bare ms':>8} " + " ".join(f"{c:>22}" for c in CHAINS[1:]))
    logs = {c: [] for c in CHAINS[1:]}
    for k in kernels:
        path = os.path.join(bench, k + ".cj")
        t = {c: cpu_ms([CAPVM, "run", path, "--tier", "jit", "--tools", c], 3) for c in CHAINS}
        row = f"{k:14} {t['none']:8.1f} "
        for c in CHAINS[1:]:
            r = t[c] / t["none"]
            logs[c].append(math.log(r))
            row += f"{r:21.1f}x "
        print(row)
    print(f"{'geomean':14} {'':8} " + " ".join(f"{math.exp(sum(v) / len(v)):21.1f}x" for v in logs.values()))


if __name__ == "__main__":
    main()

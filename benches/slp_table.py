#!/usr/bin/env python3
"""Compressed traces side by side (README, "Compressed traces"): for each STD trace,
`capvm analyze T.std --tools fasttrack` (and `eraser`) against `capvm compress T.std`
followed by `capvm analyze T.slp --tools hb` (and `eraser`), with the grammar sizes of
capvm's compressor and of classic Sequitur over the same labels. Runs are interleaved
and repeated; the table shows medians of wall time and peak RSS (GNU time, one run).

    python3 benches/slp_table.py loop.std rand.std [--reps 5] [--capvm target/release/capvm]
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

from proctime import peak_rss, run


RSS = {}


def timed(cmd):
    """Wall seconds, peak RSS in MB (one more run per distinct command), stderr
    (`proctime`)."""
    wall, _, code, text = run(cmd)
    if code not in (0, 66):
        sys.exit(f"failed ({code}): {' '.join(cmd)}\n{text}")
    key = tuple(cmd)
    if key not in RSS:
        RSS[key] = peak_rss(cmd)
    return wall, RSS[key], text


def ratio(base, t):
    """`t` against `base` in words."""
    return f"{base / t:.2f}× faster" if t <= base else f"{t / base:.1f}× slower"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--capvm", default="target/release/capvm")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    rows = []
    for t in a.traces:
        slp = os.path.join(tmp, os.path.basename(t) + ".slp")
        runs = {k: [] for k in ["none", "ft", "er_std", "compress", "hb", "er_slp"]}
        sizes = None
        for _ in range(a.reps):
            runs["none"].append(timed([a.capvm, "analyze", t, "--tools", "none"]))
            runs["ft"].append(timed([a.capvm, "analyze", t, "--tools", "fasttrack"]))
            s, mb, err = timed([a.capvm, "compress", t, "-o", slp])
            runs["compress"].append((s, mb, err))
            runs["hb"].append(timed([a.capvm, "analyze", slp, "--tools", "hb"]))
            runs["er_std"].append(timed([a.capvm, "analyze", t, "--tools", "eraser"]))
            runs["er_slp"].append(timed([a.capvm, "analyze", slp, "--tools", "eraser"]))
            if sizes is None:
                _, _, err = timed([a.capvm, "compress", t, "-o", slp, "--sequitur"])
                m = re.search(r"(\d+) events, (\d+) labels, (\d+) rules, grammar size (\d+) \((\d+) bytes\)", err)
                q = re.search(r"sequitur: grammar size (\d+)", err)
                sizes = (int(m.group(1)), int(m.group(4)), int(m.group(5)), int(q.group(1)))
        med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
               for k, v in runs.items()}
        rows.append((os.path.basename(t), sizes, med))
    print("| trace | events | grammar (capvm) | Sequitur | .slp bytes | reading .std (`none`) | `fasttrack` on .std | "
          "`compress` | `hb` on .slp | compress + `hb` vs `fasttrack` | `hb` vs `fasttrack` | "
          "`eraser` .std | `eraser` .slp |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (ev, size, nbytes, seq), m in rows:
        ft, c, hb = m["ft"][0], m["compress"][0], m["hb"][0]
        print(f"| {name} | {ev:,} | {size:,} | {seq:,} | {nbytes:,} | {m['none'][0]:.2f} s | "
              f"{ft:.2f} s, {m['ft'][1]:.0f} MB | {c:.2f} s, {m['compress'][1]:.0f} MB | "
              f"{hb:.3f} s, {m['hb'][1]:.0f} MB | {ratio(ft, c + hb)} | "
              f"{(f'{ft / hb:.0f}× faster') if hb < ft else f'{hb / ft:.1f}× slower'} | "
              f"{m['er_std'][0]:.2f} s | {m['er_slp'][0]:.3f} s |")


if __name__ == "__main__":
    main()

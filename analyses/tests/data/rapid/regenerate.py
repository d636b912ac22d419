#!/usr/bin/env python3
"""Recompute expected.json from RAPID's own output (see README.md beside this file).

usage: regenerate.py RAPID_CLASSPATH [--check]

RAPID_CLASSPATH is the classpath of a RAPID build (its compiled classes and lib/*.jar).
With --check the result is compared with expected.json and nothing is written.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RACE = re.compile(r"^Race detected at event (\d+) : ([^|]+)\|(\w+)\(([^)]*)\)\|")


def rapid(cp, engine, trace, *extra):
    cmd = ["java", "-cp", cp, engine, "-f", "std", "-p", trace, *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.splitlines()


def racy(cp, engine, trace):
    """Every flagged event (1-based line) and the first flagged event per variable."""
    events, first = [], {}
    for line in rapid(cp, engine, trace, "-v", "1"):
        m = RACE.match(line)
        if m:
            n, var = int(m.group(1)), m.group(4)
            events.append(n)
            first.setdefault(var, n)
    return events, first


def velodrome(cp, trace):
    lines = rapid(cp, "Velodrome", trace)
    if not any("Atomicity violation detected" in l for l in lines):
        return None
    for l in lines:
        m = re.match(r"Number of events analyzed = (\d+)", l)
        if m:
            return int(m.group(1))
    raise SystemExit(f"{trace}: Velodrome reported a violation but no event count")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    cp, check = sys.argv[1], "--check" in sys.argv[2:]
    old = json.load(open(os.path.join(HERE, "expected.json")))
    new = []
    for entry in old:
        name = entry["trace"]
        path = os.path.join(HERE, name)
        text = open(path).read()
        hb_events, hb_first = racy(cp, "HB", path)
        for engine in ("HBEpoch", "Goldilocks"):
            _, first = racy(cp, engine, path)
            if first != hb_first:
                raise SystemExit(f"{name}: {engine} disagrees with HB on the first race per variable")
        _, ls_first = racy(cp, "LockSet", path)
        e = {
            "trace": name,
            "events": sum(1 for l in text.splitlines() if l.strip()),
            "hb_first_race_per_variable": dict(sorted(hb_first.items(), key=lambda kv: int(kv[0][1:]) if kv[0][1:].isdigit() else kv[0])),
            "hb_racy_events": hb_events,
            "lockset_first_violation_per_variable": dict(sorted(ls_first.items(), key=lambda kv: int(kv[0][1:]) if kv[0][1:].isdigit() else kv[0])),
        }
        if re.search(r"\|begin\|", text):
            e["atomicity_first_violation_event"] = velodrome(cp, path)
        new.append(e)
    if check:
        bad = [o["trace"] for o, n in zip(old, new) if o != n]
        for o, n in zip(old, new):
            if o != n:
                print("differs:", o["trace"], "\n  file :", o, "\n  RAPID:", n)
        print(f"{len(new) - len(bad)} of {len(new)} traces agree with RAPID")
        sys.exit(1 if bad else 0)
    json.dump(new, open(os.path.join(HERE, "expected.json"), "w"))


if __name__ == "__main__":
    main()

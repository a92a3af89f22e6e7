#!/usr/bin/env python3
"""bench/suite_real_summary.py DIR OLD NEW: the figures of
bench/suite_real.sh from the files it keeps in DIR (KEEP=DIR): the
reports aa.json, ab1.json, ab2.json and fixed20.json, their wall times
(NAME.secs) and benchstat.txt."""
import json
import re
import sys

d, old, new = sys.argv[1:4]
THRESHOLD = 5.0  # the defaults' practical threshold, in %


def load(n):
    return {m["name"]: m for m in json.load(open(f"{d}/{n}.json"))["metrics"] if m["unit"] in ("ns/op", "sec/op")}


def secs(n):
    return float(open(f"{d}/{n}.secs").read())


def changed(r, threshold=0.0):
    """The benchmarks reported changed (with |Δ| ≥ threshold)."""
    return {n: m["verdict"] for n, m in r.items()
            if m["verdict"] in ("regression", "improvement") and abs(m["decision"]["delta_pct"] or 0) >= threshold}


def rounds(r):
    ns = sorted(m["decision"]["n"] for m in r.values())
    return f"{ns[0]}-{ns[-1]} rounds (median {ns[len(ns) // 2]})"


def verdicts(r):
    return {v: sum(m["verdict"] == v for m in r.values()) for v in sorted({m["verdict"] for m in r.values()})}


def mde(r):
    ms = sorted(m["decision"]["mde_pct"] for m in r.values() if m["decision"].get("mde_pct") is not None)
    return f"MDE median {ms[len(ms) // 2]:.1f}%" if ms else "no MDE"


def direction(v):
    return {"regression": 1, "improvement": -1}.get(v, 0)


def show(c):
    return ", ".join(f"{n} {v}" for n, v in sorted(c.items())) or "none"


aa, a, b, f = load("aa"), load("ab1"), load("ab2"), load("fixed20")
print(f"A/A {new} (defaults): {len(changed(aa))} of {len(aa)} benchmarks reported changed ({show(changed(aa))}); {rounds(aa)}; {secs('aa'):.0f} s")
for name, r, key in (("seed 1", a, "ab1"), ("seed 2", b, "ab2")):
    c = changed(r)
    print(f"A/B {old} -> {new}, {name} (defaults): {len(c)} of {len(r)} changed ({show(c)}); {rounds(r)}; {secs(key):.0f} s")
for name, r in (("A/A", aa), ("seed 1", a), ("seed 2", b), ("20 fixed", f)):
    print(f"  {name}: {verdicts(r)}; {mde(r)}")
both = [n for n in a if n in b]
agree = [n for n in both if direction(a[n]["verdict"]) == direction(b[n]["verdict"])]
print(f"agreement of seeds 1 and 2 (ElastiBench: the same direction, or none in either): {len(agree)} of {len(both)} benchmarks ({100 * len(agree) / max(1, len(both)):.1f}%)")
for label, thr in (("any size", 0.0), (f"|Δ| ≥ {THRESHOLD:g}%, the defaults' threshold", THRESHOLD)):
    cf = changed(f, thr)
    print(f"A/B 20 fixed rounds (seed 3, signed-rank), changes of {label}: {len(cf)} ({show(cf)}); {secs('fixed20'):.0f} s")
    for name, r in (("seed 1", a), ("seed 2", b)):
        found = [n for n in cf if r.get(n, {}).get("verdict") == cf[n]]
        print(f"  of those, the defaults' {name} found {len(found)} in the same direction")
sig, rows, section = 0, 0, ""
for line in open(f"{d}/benchstat.txt"):
    if "(p=" not in line:
        for unit in ("sec/op", "B/op", "allocs/op", "B/s"):
            if unit in line:
                section = unit
        continue
    if section == "sec/op":
        rows += 1
        sig += bool(re.search(r"[-+][0-9.]+%\s+\(p=", line))
print(f"sequential go test -count 10 on {old}, then on {new}, + benchstat: {sig} of {rows} benchmarks changed (p < 0.05, benchstat's own test, no correction); {secs('seq'):.0f} s")
slowest = max(secs(k) for k in ("aa", "ab1", "ab2"))
print(f"the slowest default run took {slowest / secs('seq'):.2f} of the sequential workflow's time")

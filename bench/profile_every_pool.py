"""bench/profile_every_pool.py SESSION...: do the profiled rounds of
--profile-every sessions disturb the unprofiled rounds right after them?
Pooled over the sessions, per metric (wall_ms, user_ms):

- each unprofiled round's distance from its session's median log(B/A),
  in units of the session's median distance (sessions' spreads differ
  tenfold on a shared host): the rounds right after a profiled round
  against the others, the ratio of their medians with a 95% bootstrap
  interval (sessions resampled whole), and what that ratio would do to
  the verdicts' interval: a third of the rounds (K = 4) spread f times as
  much widens it about sqrt((2 + f^2) / 3) times;
- the first trial after a profiled round against the median of its
  build's other unprofiled trials in the session.

Within a session the host is the same for both groups, so the load's
swings between sessions cancel out.
"""
import json
import math
import random
import statistics
import sys


def rounds_of(path, metric):
    """The session's counted rounds {round: {arm: (index, value)}} and its profiled rounds."""
    rounds, prof = {}, set()
    for line in open(path):
        e = json.loads(line)
        t = e.get("trial")
        if e.get("type") != "trial" or not t or t.get("warmup") or t.get("status") != "ok":
            continue
        v = next(m["value"] for m in t["metrics"] if m["name"] == metric)
        rounds.setdefault(t["round"], {})[t["arm"]] = (t["index"], v)
        if t.get("profile_round"):
            prof.add(t["round"])
    return rounds, prof


def session_groups(path, metric):
    """(after, other, first): scaled distances after a profiled round and
    elsewhere, and the first trials' log ratios to their build's median."""
    rounds, prof = rounds_of(path, metric)
    ratio = {r: math.log(a["treatment"][1] / a["control"][1])
             for r, a in rounds.items() if len(a) == 2 and r not in prof}
    med = statistics.median(ratio.values())
    mad = statistics.median(abs(x - med) for x in ratio.values()) or 1e-12
    after = [abs(x - med) / mad for r, x in ratio.items() if r - 1 in prof]
    other = [abs(x - med) / mad for r, x in ratio.items() if r - 1 not in prof]
    rest = {}
    for r, a in rounds.items():
        if r not in prof:
            for arm, (_, v) in a.items():
                rest.setdefault(arm, []).append(v)
    first = []
    for r, a in rounds.items():
        if r not in prof and r - 1 in prof:
            arm = min(a, key=lambda k: a[k][0])
            first.append(math.log(a[arm][1] / statistics.median(rest[arm])))
    return after, other, first


def spread_ratio(groups):
    after = [x for g in groups for x in g[0]]
    other = [x for g in groups for x in g[1]]
    return statistics.median(after) / statistics.median(other)


def main():
    paths = sys.argv[1:]
    rng = random.Random(1)
    for metric in ("wall_ms", "user_ms"):
        groups = [session_groups(p, metric) for p in paths]
        f = spread_ratio(groups)
        boot = sorted(spread_ratio([rng.choice(groups) for _ in groups]) for _ in range(2000))
        lo, hi = boot[49], boot[1949]
        widen = lambda f: math.sqrt((2 + f * f) / 3)
        first = sorted(x for g in groups for x in g[2])
        fb = sorted(statistics.median(rng.choice(first) for _ in first) for _ in range(2000))
        pct = lambda x: 100 * (math.exp(x) - 1)
        print("%s, %d sessions: rounds after a profiled round spread %.2f times the others [%.2f, %.2f] (%d and %d rounds):"
              " the verdicts' interval %.2f times [%.2f, %.2f]; first trial after one %+.1f%% [%+.1f%%, %+.1f%%] against its build's others"
              % (metric, len(paths), f, lo, hi, sum(len(g[0]) for g in groups), sum(len(g[1]) for g in groups),
                 widen(f), widen(lo), widen(hi), pct(statistics.median(first)), pct(fb[49]), pct(fb[1949])))


main()

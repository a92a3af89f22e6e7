#!/usr/bin/env python3
"""bench/cpuof.py: CPU time figures for bench/run_overhead.sh and
bench/report_vs_benchstat.sh.

  cpuof.py run OUT -- CMD [ARG...]
                                 runs CMD (stdin, stdout and stderr
                                 inherited) and writes its wall time and the
                                 CPU time (user + sys) of it and every
                                 descendant it waited for, in seconds, to
                                 the file OUT; exits with CMD's status
  cpuof.py session FILE          prints the CPU time (user_ms + sys_ms) of
                                 the trials' commands recorded in a perflab
                                 session, in seconds
  cpuof.py hyperfine FILE        the same for a hyperfine --export-json file
                                 (its mean user and system time times runs)
  cpuof.py phases FILE WALL      where a perflab run of WALL seconds spent
                                 its time, from its session FILE: per trial
                                 the command (wall_ms), the trial's own work
                                 around it (duration_s - wall_ms: reset,
                                 capture, leftovers), the work between
                                 trials (the step between two trials' t
                                 less duration_s: recording, the runner),
                                 all in µs, then the rest of WALL in ms
                                 (start-up, setup, the first trial's wait,
                                 final sync, exit)
  cpuof.py hfphases FILE WALL    the same for hyperfine: its mean run (µs)
                                 and the rest of WALL (ms): all it does
                                 outside its runs, start-up included

A harness's own CPU time is its total (run) minus its commands' (session,
hyperfine, or what bench/goexec --children-cpu prints): CPU time, unlike
wall time, is barely moved by other load on a shared host.
"""
import json
import resource
import subprocess
import sys
import time


def main(argv):
    if len(argv) >= 4 and argv[0] == "run" and argv[2] == "--":
        t0 = time.perf_counter()
        code = subprocess.call(argv[3:])
        wall = time.perf_counter() - t0
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(argv[1], "w") as f:
            print(f"{wall:.6f} {r.ru_utime + r.ru_stime:.6f}", file=f)
        return code
    if len(argv) == 2 and argv[0] == "session":
        total, n = 0.0, 0
        for _, ev in events(argv[1]):
            if ev.get("type") != "trial":
                continue
            n += 1
            for m in ev["trial"].get("metrics") or []:
                if m["name"] in ("user_ms", "sys_ms"):
                    total += m["value"] / 1000
        if n == 0:
            sys.exit(f"cpuof: {argv[1]}: no trial events")
        print(f"{total:.6f}")
        return 0
    if len(argv) == 2 and argv[0] == "hyperfine":
        with open(argv[1]) as f:
            r = json.load(f)["results"][0]
        print(f"{(r['user'] + r['system']) * len(r['times']):.6f}")
        return 0
    if len(argv) == 3 and argv[0] == "phases":
        wall_total = float(argv[2])
        cmd, dur, ts = [], [], []
        for lineno, ev in events(argv[1]):
            if ev.get("type") != "trial":
                continue
            tr = ev["trial"]
            w = [m["value"] / 1000 for m in tr.get("metrics") or [] if m["name"] == "wall_ms"]
            if not w:
                sys.exit(f"cpuof: {argv[1]}:{lineno}: trial without wall_ms")
            cmd.append(w[0])
            dur.append(tr["duration_s"])
            ts.append(ev["t"])
        n = len(ts)
        if n < 2:
            sys.exit(f"cpuof: {argv[1]}: fewer than 2 trial events")
        step = (ts[-1] - ts[0]) / (n - 1)
        c, d = sum(cmd) / n, sum(dur) / n
        rest = wall_total - n * step
        print(f"{c * 1e6:.2f} {(d - c) * 1e6:.2f} {(step - d) * 1e6:.2f} {rest * 1e3:.3f}")
        return 0
    if len(argv) == 3 and argv[0] == "hfphases":
        with open(argv[1]) as f:
            times = json.load(f)["results"][0]["times"]
        run = sum(times) / len(times)
        print(f"{run * 1e6:.2f} {(float(argv[2]) - sum(times)) * 1e3:.3f}")
        return 0
    sys.exit(__doc__)


def events(path):
    """Yields (line number, event) of a session file, exiting with
    FILE:LINE on a line that is not JSON."""
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            try:
                yield lineno, json.loads(line)
            except ValueError as e:
                sys.exit(f"cpuof: {path}:{lineno}: {e}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

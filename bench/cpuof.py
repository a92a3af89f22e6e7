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
        with open(argv[1]) as f:
            for lineno, line in enumerate(f, 1):
                try:
                    ev = json.loads(line)
                except ValueError as e:
                    sys.exit(f"cpuof: {argv[1]}:{lineno}: {e}")
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
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

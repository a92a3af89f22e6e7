# bench/profile_lib.sh: what the profile studies on real programs share,
# sourced from the repository's top. prof_setup builds perflab into
# $tmp/perflab ($tmp a new folder, removed on exit unless KEEP is set);
# verdicts SESSION prints each metric's verdict and interval on one line;
# ranked SESSION FUNCTION [PROFILE FLAGS] prints the first function of
# perflab profile's table, FUNCTION's rank and verdict; free_port prints a
# free loopback port (never adb's 5037 or the emulators' 5554–5585).
prof_setup() {
	tmp=$(mktemp -d)
	trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
	go build -o "$tmp/perflab" .
}

# report SESSION: perflab report --json (whose exit status 3, a
# regression found, is no failure here).
report() { "$tmp/perflab" report "$1" --json 2> /dev/null || [ $? -eq 3 ]; }

verdicts() { report "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
out = []
for m in r["metrics"]:
    s = "%s %s" % (m["name"], m["verdict"])
    pr = m.get("paired") or {}
    if pr.get("ci_low_pct") is not None:
        s += " [%+.1f%%, %+.1f%%] ±%.1f%%" % (pr["ci_low_pct"], pr["ci_high_pct"], (pr["ci_high_pct"] - pr["ci_low_pct"]) / 2)
    if m["name"] == "sys_ms":
        s += " (A %.1f B %.1f ms)" % (m["a"]["median"], m["b"]["median"])
    out.append(s)
print("; ".join(out) + "; pairs %s" % (r["metrics"][0].get("paired") or {}).get("n"))'; }

# words SESSION: the metrics' verdict words alone, to compare two runs.
words() { report "$1" | python3 -c '
import json, sys
print(" ".join("%s=%s" % (m["name"], m["verdict"]) for m in json.load(sys.stdin)["metrics"]))'; }

ranked() { "$tmp/perflab" profile "$1" --json "${@:3}" | python3 -c '
import json, sys
r, want = json.load(sys.stdin), sys.argv[1]
fs = r["functions"]
rank = next((i + 1 for i, f in enumerate(fs) if f["name"] == want), None)
f = fs[rank - 1] if rank else {}
ci = ""
if f.get("ci_low_pct") is not None:
    ci = " [%+.1f%%, %+.1f%%]" % (f["ci_low_pct"], f["ci_high_pct"])
print("first %s; %s rank %s %s %+.1f%%%s; %d pairs, %d tested" % (fs[0]["name"] if fs else "-", want, rank,
      f.get("verdict", "absent"), f.get("delta_pct") or 0, ci, r["pairs"], r["tested"]))' "$2"; }

free_port() { python3 -c '
import socket
while True:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    if p != 5037 and not 5554 <= p <= 5585:
        print(p)
        break'; }

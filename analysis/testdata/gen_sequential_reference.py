# Run: /usr/bin/python3 analysis/testdata/gen_sequential_reference.py > analysis/testdata/sequential_reference.json
# Reference for analysis/sequential.go's closed-form Bayes factor (Rouder et al. 2009, eq. 1, fixed g):
# BF10(t; n, g) = E_{δ~N(0,g)}[ nct.pdf(t, ν, δ√n) ] / t.pdf(t, ν), ν = n−1, by numeric integration (scipy.integrate.quad).
import json, math
from scipy import integrate, stats
cases = []
for n in (3, 5, 10, 30, 100):
    for t in (0.0, 0.5, 1.5, 3.0):
        for g in (0.25, 1.0):
            nu = n - 1
            f = lambda d: stats.nct.pdf(t, nu, d * math.sqrt(n)) * stats.norm.pdf(d, 0, math.sqrt(g))
            num, _ = integrate.quad(f, -12 * math.sqrt(g), 12 * math.sqrt(g), epsabs=0, epsrel=1e-11, limit=400)
            if not math.isfinite(num) or num <= 0:
                continue  # nct.pdf underflows at this corner; skip rather than record a bad value
            cases.append({"n": n, "t": t, "g": g, "log_bf": math.log(num / stats.t.pdf(t, nu))})
print(json.dumps(cases))

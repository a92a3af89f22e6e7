#!/bin/sh
# changepoint_oracle.sh: what the change-point detector's step test could
# find if it knew what it has to estimate (docs/history.md, "What the data
# allow"). For every true step of at least 2σ in the study's step family
# (internal/cpstudy: 200 builds, AR(1) noise, outliers, a spike, a
# one-build outlier near a step), at φ 0, 0.3, 0.5 and 0.7, the recall of
#   - the detector itself (perflab history changepoints' defaults);
#   - the step test between the true neighbouring steps, at the likeliest
#     split under AR(1), with ρ estimated around the true segments as the
#     detector estimates it and its error allowed for as the detector does
#     (the test that keeps false steps at about 1 per 100 series);
#   - the same, the estimate taken as exact;
#   - the same with the true φ.
#
#   sh bench/changepoint_oracle.sh [SERIES] [SEED] [ALPHA]
#     default 1000 series, seed 1, the detector's default alpha; ~10 s
set -eu
cd "$(dirname "$0")/.."
series=${1:-1000}
seed=${2:-1}
alpha=${3:+-oracle-alpha=$3}
go test ./analysis/changepoint -run '^TestOracle$' -count=1 -v -args -oracle "$series" -oracle-seed "$seed" $alpha |
	grep -v -e '^=== ' -e '^--- ' -e '^PASS' -e '^ok '

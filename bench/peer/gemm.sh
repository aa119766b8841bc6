#!/usr/bin/env bash
# gemm.sh compares sdk/model/gemm's Sgemm with OpenBLAS's cblas_sgemm on
# DLRM's products (every layer's forward, weight gradient and input
# gradient of the small and scratchpipe presets), one thread each,
# alternating the two ROUNDS times in one loop, and prints per product the
# median GFLOP/s of each and their ratio. Ratios, not absolute rates, are
# the figure on a loaded machine.
#
#   bench/peer/gemm.sh [ROUNDS] [FILTER]   (default 3 rounds, every preset;
#                                          FILTER a preset prefix: small)
#   FLOWRUN_PEER_INSTALL=1 ...       apt-get install gcc libopenblas-dev first
#   FLOWRUN_GEMM_BASE=REV ...        also run sdk/model/gemm as of git
#                                    revision REV (with this tree's
#                                    benchmark files), alternated with the
#                                    others, for a before/after in one run
#   FLOWRUN_CPU_TIME=1 ...           rates from the thread's CPU time, not
#                                    wall time (Linux): on a machine shared
#                                    with other jobs a one-thread product's
#                                    CPU time is its own work, its wall time
#                                    mostly the scheduler's share
#
# Besides the per-product table it prints per preset the time-weighted
# ratio: OpenBLAS's time for all the preset's products over sdk/model/gemm's.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
filter=${2:-}
if [[ ${FLOWRUN_PEER_INSTALL:-0} == 1 ]]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y gcc libopenblas-dev >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/openblas" bench/peer/sgemm_openblas.c -lopenblas
go test -c -o "$tmp/gemm.test" ./sdk/model/gemm
impls=(gemm)
unit=GFLOP/s
if [[ ${FLOWRUN_CPU_TIME:-0} == 1 ]]; then
	unit=cpu-GFLOP/s
fi
if [[ -n ${FLOWRUN_GEMM_BASE:-} ]]; then
	mkdir "$tmp/base"
	git archive "$FLOWRUN_GEMM_BASE" | tar -x -C "$tmp/base"
	cp sdk/model/gemm/bench_test.go sdk/model/gemm/cputime*_test.go "$tmp/base/sdk/model/gemm/"
	(cd "$tmp/base" && go test -c -o "$tmp/base.test" ./sdk/model/gemm)
	impls=(base gemm)
fi
for r in $(seq "$rounds"); do
	OPENBLAS_NUM_THREADS=1 "$tmp/openblas" 0.2 | grep "^$filter" | sed 's/^/openblas /' >>"$tmp/out"
	for impl in "${impls[@]}"; do
		"$tmp/$impl.test" -test.run '^$' -test.bench "DLRM/$filter.*/.*/.*/.*/gemm\$" -test.cpu 1 -test.benchtime 0.2s |
			awk -v impl="$impl" -v unit="$unit" '/GFLOP/ {
				n = $1; sub(/^BenchmarkDLRM\//, "", n); sub(/\/gemm$/, "", n)
				for (i = 2; i < NF; i++) if ($(i + 1) == unit) print impl, n, $i
			}' >>"$tmp/out"
	done
	echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
python3 - "$tmp/out" <<'PY'
import collections, re, statistics, sys
rates = collections.defaultdict(lambda: collections.defaultdict(list))
order, impls = [], []
for line in open(sys.argv[1]):
    impl, name, rate = line.split()
    if name not in rates:
        order.append(name)
    if impl != "openblas" and impl not in impls:
        impls.append(impl)
    rates[name][impl].append(float(rate))
print(f"{'product':48} {'OpenBLAS':>9}" + "".join(f" {i + ' GFLOP/s':>12} {'ratio':>6}" for i in impls))
times = collections.defaultdict(collections.Counter)  # preset -> impl -> seconds per call
for name in order:
    m, n, k = map(int, re.search(r"m(\d+)_n(\d+)_k(\d+)", name).groups())
    flops, preset = 2.0 * m * n * k, name.split("-")[0]
    o = statistics.median(rates[name]["openblas"])
    times[preset]["openblas"] += flops / o
    row = f"{name:48} {o:9.1f}"
    for i in impls:
        g = statistics.median(rates[name][i])
        times[preset][i] += flops / g
        row += f" {g:12.1f} {g / o:6.2f}"
    print(row)
for preset, t in times.items():
    print(f"time-weighted ratio, {preset}: " + ", ".join(f"{i} {t['openblas'] / t[i]:.2f}" for i in impls))
PY

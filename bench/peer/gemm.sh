#!/usr/bin/env bash
# gemm.sh compares sdk/model/gemm's Sgemm with OpenBLAS's cblas_sgemm on
# DLRM's products (every layer's forward, weight gradient and input
# gradient of the small and scratchpipe presets), one thread each,
# alternating the two ROUNDS times in one loop, and prints per product the
# median GFLOP/s of each and their ratio. Ratios, not absolute rates, are
# the figure on a loaded machine.
#
#   bench/peer/gemm.sh [ROUNDS]      (default 3)
#   FLOWRUN_PEER_INSTALL=1 ...       apt-get install gcc libopenblas-dev first
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
if [[ ${FLOWRUN_PEER_INSTALL:-0} == 1 ]]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y gcc libopenblas-dev >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -o "$tmp/openblas" bench/peer/sgemm_openblas.c -lopenblas
go test -c -o "$tmp/gemm.test" ./sdk/model/gemm
for r in $(seq "$rounds"); do
	OPENBLAS_NUM_THREADS=1 "$tmp/openblas" 0.2 | sed 's/^/openblas /' >>"$tmp/out"
	"$tmp/gemm.test" -test.run '^$' -test.bench 'DLRM/.*/.*/.*/.*/gemm$' -test.cpu 1 -test.benchtime 0.2s |
		awk '/GFLOP/ { n = $1; sub(/^BenchmarkDLRM\//, "", n); sub(/\/gemm$/, "", n); print "gemm", n, $(NF-1) }' >>"$tmp/out"
	echo "round $r done" >&2
done
python3 - "$tmp/out" <<'PY'
import collections, statistics, sys
rates = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for line in open(sys.argv[1]):
    impl, name, rate = line.split()
    if name not in rates:
        order.append(name)
    rates[name][impl].append(float(rate))
print(f"{'product':48} {'gemm GFLOP/s':>12} {'OpenBLAS':>9} {'ratio':>6}")
for name in order:
    g, o = statistics.median(rates[name]["gemm"]), statistics.median(rates[name]["openblas"])
    print(f"{name:48} {g:12.1f} {o:9.1f} {g / o:6.2f}")
PY

#!/usr/bin/env bash
# Starts a 3-node nats-server cluster on loopback, for running flowrun on a
# cluster by hand: flowrun run GRAPH --nats "$(scripts/nats-cluster.sh urls)".
#
#   scripts/nats-cluster.sh start   # builds bin/nats-server if missing, starts n0..n2
#   scripts/nats-cluster.sh urls    # the client URLs, comma-separated
#   scripts/nats-cluster.sh stop    # stops the three nodes
#
# Client ports 4222-4224, route ports 6222-6224, monitoring 8222-8224
# (override with BASE_CLIENT, BASE_ROUTE, BASE_MONITOR); logs and pids in
# ${CLUSTER_DIR:-/tmp/flowrun-nats-cluster}. No authentication: loopback
# only, for one user's experiments (the embedded server authenticates).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${CLUSTER_DIR:-/tmp/flowrun-nats-cluster}
client=${BASE_CLIENT:-4222}
route=${BASE_ROUTE:-6222}
monitor=${BASE_MONITOR:-8222}

urls() {
	local out=()
	for i in 0 1 2; do out+=("nats://127.0.0.1:$((client + i))"); done
	(IFS=,; echo "${out[*]}")
}

case "${1:-}" in
start)
	[ -x bin/nats-server ] || go build -o bin/nats-server github.com/nats-io/nats-server/v2
	mkdir -p "$dir"
	routes=$(for i in 0 1 2; do printf 'nats://127.0.0.1:%d,' $((route + i)); done)
	for i in 0 1 2; do
		bin/nats-server -a 127.0.0.1 -p $((client + i)) -m $((monitor + i)) -n "n$i" \
			--cluster_name flowrun --cluster "nats://127.0.0.1:$((route + i))" --routes "${routes%,}" \
			>"$dir/n$i.log" 2>&1 &
		echo $! >"$dir/n$i.pid"
	done
	for i in 0 1 2; do
		for _ in $(seq 100); do
			curl -sf "http://127.0.0.1:$((monitor + i))/varz" | grep -q '"routes": 2' && break
			sleep 0.1
		done
	done
	echo "cluster up: $(urls)"
	;;
urls) urls ;;
stop)
	for i in 0 1 2; do
		[ -f "$dir/n$i.pid" ] && kill "$(cat "$dir/n$i.pid")" 2>/dev/null || true
		rm -f "$dir/n$i.pid"
	done
	;;
*)
	echo "usage: $0 start|urls|stop" >&2
	exit 2
	;;
esac

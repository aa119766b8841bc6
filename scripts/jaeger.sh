#!/usr/bin/env bash
# Jaeger v2 for reading flowrun's traces, and for the end-to-end trace test.
#
#   scripts/jaeger.sh install   build (or reuse) the pinned Jaeger v2 binary; print its path
#   scripts/jaeger.sh start     run it in the background, in-memory storage, every
#                               listener on 127.0.0.1; print its ports and pid
#   scripts/jaeger.sh stop      stop the instance that start left running
#   scripts/jaeger.sh config    print the YAML that start runs it with
#
# Jaeger is never added to flowrun's go.mod. Its module source comes through
# the Go module proxy (`go mod download`) and `./cmd/jaeger` is built in that
# source's own module, into a cache outside the repository that every later
# call reuses. `go install …@latest` cannot do this: Jaeger's go.mod has a
# replace directive. The build takes about ten minutes on two cores.
#
# Jaeger tags each release twice, v1.N (the Go module version, the only one
# the proxy serves: v2.x tags are not valid for a module path without /v2)
# and v2.M (the v2 binary's release). JAEGER_MODULE_VERSION is the former.
#
# Environment:
#   FLOWRUN_JAEGER        use this Jaeger v2 binary instead of building one
#                         (install then only checks it and prints its path)
#   FLOWRUN_JAEGER_CACHE  where built binaries go
#                         (default ${XDG_CACHE_HOME:-$HOME/.cache}/flowrun)
#   JAEGER_OTLP_GRPC_PORT, JAEGER_OTLP_HTTP_PORT, JAEGER_QUERY_HTTP_PORT,
#   JAEGER_QUERY_GRPC_PORT
#                         the ports of start and config (defaults 4317, 4318,
#                         16686 for the UI and HTTP API, 16685)
#   JAEGER_RUN_DIR        where start keeps its config, log and pid
#                         (default $FLOWRUN_JAEGER_CACHE/run)
set -euo pipefail

JAEGER_MODULE=github.com/jaegertracing/jaeger
JAEGER_MODULE_VERSION=v1.76.0 # = Jaeger v2.13.0 (2025-12-03)
JAEGER_VERSION=v2.13.0

cache_root="${FLOWRUN_JAEGER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flowrun}"
bin_dir="$cache_root/jaeger-$JAEGER_VERSION"
bin="$bin_dir/jaeger"
run_dir="${JAEGER_RUN_DIR:-$cache_root/run}"

otlp_grpc_port="${JAEGER_OTLP_GRPC_PORT:-4317}"
otlp_http_port="${JAEGER_OTLP_HTTP_PORT:-4318}"
query_http_port="${JAEGER_QUERY_HTTP_PORT:-16686}"
query_grpc_port="${JAEGER_QUERY_GRPC_PORT:-16685}"

die() { echo "jaeger.sh: $*" >&2; exit 1; }
log() { echo "jaeger.sh: $*" >&2; }

# jaeger_bin prints the binary start runs: FLOWRUN_JAEGER, else the cached build.
jaeger_bin() {
  if [ -n "${FLOWRUN_JAEGER:-}" ]; then
    [ -x "$FLOWRUN_JAEGER" ] || die "FLOWRUN_JAEGER=$FLOWRUN_JAEGER is not an executable"
    echo "$FLOWRUN_JAEGER"
  elif [ -x "$bin" ]; then
    echo "$bin"
  else
    die "no Jaeger binary at $bin: run scripts/jaeger.sh install first"
  fi
}

install() {
  if [ -n "${FLOWRUN_JAEGER:-}" ]; then
    jaeger_bin
    return
  fi
  if [ -x "$bin" ]; then
    log "reusing Jaeger $JAEGER_VERSION at $bin"
    echo "$bin"
    return
  fi
  command -v go >/dev/null || die "go is not on PATH; it is needed to build Jaeger"
  log "downloading $JAEGER_MODULE@$JAEGER_MODULE_VERSION (Jaeger $JAEGER_VERSION) through $(go env GOPROXY)"
  local dir
  # Outside any module, so that nothing here touches flowrun's go.mod.
  dir=$(cd / && GOWORK=off go mod download -json "$JAEGER_MODULE@$JAEGER_MODULE_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p') ||
    die "go mod download $JAEGER_MODULE@$JAEGER_MODULE_VERSION failed"
  [ -n "$dir" ] && [ -d "$dir/cmd/jaeger" ] ||
    die "go mod download gave no source with cmd/jaeger for $JAEGER_MODULE@$JAEGER_MODULE_VERSION"
  mkdir -p "$bin_dir"
  local tmp="$bin.tmp.$$" start=$SECONDS
  # Its dependencies first, in one quiet step: go build would print a
  # "go: downloading" line for each of some three hundred modules.
  log "downloading Jaeger's dependencies"
  (cd "$dir" && GOWORK=off GOFLAGS= go mod download) || die "downloading Jaeger's dependencies failed"
  log "building $dir/cmd/jaeger into $bin (about ten minutes on two cores)"
  # A line a minute, so that a long build is not taken for a hung one.
  (while sleep 60; do log "still building Jaeger ($(((SECONDS - start) / 60)) min)"; done) &
  local ticker=$!
  trap 'rm -f "$tmp"; kill $ticker 2>/dev/null' EXIT
  local v=$JAEGER_MODULE/internal/version
  (cd "$dir" && GOWORK=off GOFLAGS= CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X $v.latestVersion=$JAEGER_VERSION -X $v.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    -o "$tmp" ./cmd/jaeger) || die "building Jaeger $JAEGER_VERSION from $dir failed"
  kill $ticker 2>/dev/null || true
  mv "$tmp" "$bin"
  trap - EXIT
  log "built Jaeger $JAEGER_VERSION in $((SECONDS - start))s"
  echo "$bin"
}

# config prints the Jaeger v2 (OpenTelemetry Collector) configuration: OTLP
# gRPC and HTTP in, in-memory storage, the query service (HTTP API, UI and
# gRPC). Every listener is on 127.0.0.1: Jaeger's own defaults bind the query
# ports and its metrics to every interface. Its own metrics and traces are
# switched off (the query service would send its traces to localhost:4317,
# which may be another collector, and wait for it on shutdown); no other
# extension (health check, pprof, remote sampling) is started.
config() {
  cat <<YAML
# Jaeger $JAEGER_VERSION for flowrun (written by scripts/jaeger.sh).
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    traces:
      level: none
    logs:
      level: info

extensions:
  jaeger_storage:
    backends:
      flowrun_memory:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: flowrun_memory
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:$query_http_port
    grpc:
      endpoint: 127.0.0.1:$query_grpc_port

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:$otlp_grpc_port
      http:
        endpoint: 127.0.0.1:$otlp_http_port

exporters:
  jaeger_storage_exporter:
    trace_storage: flowrun_memory
YAML
}

# port_open reports whether something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# running prints the pid of the Jaeger that start left running, if any.
running() {
  local pid
  pid=$(cat "$run_dir/jaeger.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

start() {
  local jaeger pid
  jaeger=$(jaeger_bin)
  if pid=$(running); then
    die "Jaeger is already running (pid $pid); scripts/jaeger.sh stop first"
  fi
  local ports=("$otlp_grpc_port" "$otlp_http_port" "$query_http_port" "$query_grpc_port") p
  for p in "${ports[@]}"; do
    ! port_open "$p" || die "127.0.0.1:$p is already in use (set the JAEGER_*_PORT variables)"
  done
  mkdir -p "$run_dir"
  config >"$run_dir/jaeger.yaml"
  # setsid: the server outlives this script and the terminal's Ctrl-C.
  setsid "$jaeger" --config "file:$run_dir/jaeger.yaml" >"$run_dir/jaeger.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$run_dir/jaeger.pid"
  # The collector starts its receivers last: once every port answers, the
  # query service and the storage behind them are up.
  local deadline=$((SECONDS + 60))
  for p in "${ports[@]}"; do
    until port_open "$p"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$run_dir/jaeger.pid"
        tail -n 30 "$run_dir/jaeger.log" >&2
        die "Jaeger exited during start-up; log: $run_dir/jaeger.log"
      fi
      if [ $SECONDS -ge $deadline ]; then
        kill "$pid" 2>/dev/null || true
        rm -f "$run_dir/jaeger.pid"
        die "Jaeger did not listen on 127.0.0.1:$p within 60s; log: $run_dir/jaeger.log"
      fi
      sleep 0.2
    done
  done
  cat <<EOF
Jaeger $JAEGER_VERSION running, pid $pid, in-memory storage, 127.0.0.1 only
  UI and HTTP API  http://127.0.0.1:$query_http_port
  OTLP gRPC        flowrun run GRAPH --trace otlp-grpc://127.0.0.1:$otlp_grpc_port
  OTLP HTTP        flowrun run GRAPH --trace otlp-http://127.0.0.1:$otlp_http_port
  query gRPC       127.0.0.1:$query_grpc_port
  config, log      $run_dir/jaeger.yaml, $run_dir/jaeger.log
stop it with scripts/jaeger.sh stop
EOF
}

stop() {
  local pid i
  if ! pid=$(running); then
    rm -f "$run_dir/jaeger.pid"
    log "no Jaeger running (from $run_dir)"
    return
  fi
  kill "$pid"
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "Jaeger (pid $pid) ignored SIGTERM for 10s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$run_dir/jaeger.pid"
  log "stopped Jaeger (pid $pid)"
}

main() {
  case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  config) config ;;
  *) die "usage: $0 install|start|stop|config" ;;
  esac
}

# One line, so that bash never reads past it: editing this file while it
# runs (a ten-minute build) cannot make the running copy execute the edit.
main "$@"; exit

#!/usr/bin/env bash
# The test command: vet, format check, build every binary, run every test.
# Integration tests that need the built binaries find them in bin/ through
# FLOWRUN_BIN; FLOWRUN_INTEGRATION=1 turns on the tests that start external
# processes (a separate nats-server, plugin subprocesses killed mid-run).
#
# The end-to-end trace test (cmd/flowrun/jaeger_test.go, TestJaegerTrace)
# runs against a real Jaeger v2, built once into a cache outside the
# repository (about ten minutes on two cores the first time) and reused
# after. The build runs alongside the Go tests, at a lower priority, and
# the trace test runs once both are done, so the whole takes about the
# longer of the two. A line at least once a minute says what is running.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
say() { printf 'test.sh [%dm%02ds] %s\n' $(((SECONDS - t0) / 60)) $(((SECONDS - t0) % 60)) "$*"; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

say "downloading modules"
go mod download
say "checking formatting"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi

# Jaeger from here on, beside everything else. Its log (the download and
# the build, never the ~300 "go: downloading" lines) goes to a file whose
# last line the heartbeat shows.
say "building Jaeger in the background (log: $work/jaeger.log)"
nice -n 10 scripts/jaeger.sh install >"$work/jaeger.path" 2>"$work/jaeger.log" &
jaeger_pid=$!
pids+=("$jaeger_pid")
(
  while sleep 60; do
    state="done"
    kill -0 "$jaeger_pid" 2>/dev/null && state="$(tail -n 1 "$work/jaeger.log" 2>/dev/null)"
    say "still running: $(cat "$work/step" 2>/dev/null); Jaeger: ${state:-starting}"
  done
) &
pids+=("$!")
step() { echo "$*" >"$work/step"; say "$*"; }

step "go vet ./..."
go vet ./...
step "scripts/build.sh (flowrun and the plugin binaries)"
scripts/build.sh
export FLOWRUN_BIN="$PWD/bin"
export FLOWRUN_INTEGRATION="${FLOWRUN_INTEGRATION:-1}"

# Every test but the trace test, which skips without FLOWRUN_JAEGER_E2E.
step "go test ./... (each package's line comes when it is done)"
env -u FLOWRUN_JAEGER_E2E go test -count=1 -timeout 20m ./...

step "waiting for the Jaeger build"
if ! wait "$jaeger_pid"; then
  cat "$work/jaeger.log" >&2
  echo "test.sh: scripts/jaeger.sh install failed" >&2
  exit 1
fi
FLOWRUN_JAEGER="$(cat "$work/jaeger.path")"
export FLOWRUN_JAEGER FLOWRUN_JAEGER_E2E=1
step "the end-to-end trace test against Jaeger ($FLOWRUN_JAEGER)"
go test -count=1 -timeout 10m -run '^TestJaegerTrace$' ./cmd/flowrun/
say "all tests passed"

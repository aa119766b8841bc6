#!/usr/bin/env bash
# The test command: vet, format check, build every binary, run every test.
# Integration tests that need the built binaries find them in bin/ through
# FLOWRUN_BIN; FLOWRUN_INTEGRATION=1 turns on the tests that start external
# processes (a separate nats-server, plugin subprocesses killed mid-run).
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
go vet ./...
scripts/build.sh
export FLOWRUN_BIN="$PWD/bin"
export FLOWRUN_INTEGRATION="${FLOWRUN_INTEGRATION:-1}"
# The end-to-end trace test (cmd/flowrun/jaeger_test.go) runs against a real
# Jaeger v2, built once into a cache outside the repository (about ten
# minutes on two cores the first time) and reused after.
FLOWRUN_JAEGER="$(scripts/jaeger.sh install)"
export FLOWRUN_JAEGER FLOWRUN_JAEGER_E2E=1
go test -count=1 -timeout 20m ./...

#!/usr/bin/env bash
# Builds flowrun and every plugin binary into bin/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/ ./cmd/flowrun ./plugins/caches/*/cmd/* ./plugins/kernels/*/cmd/* \
  ./plugins/models/*/cmd/* ./plugins/devices/*/cmd/*
go build -o bin/flowrun-cache-clock ./examples/cache-plugin
# A separate nats-server for the --nats tests, built from the same module the
# embedded server comes from (no download beyond the Go module proxy).
go build -o bin/nats-server github.com/nats-io/nats-server/v2
echo "built: $(ls bin | tr '\n' ' ')"

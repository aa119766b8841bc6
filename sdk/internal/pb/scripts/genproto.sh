#!/usr/bin/env bash
# Regenerates the Go code for sdk/internal/pb/flowrun.proto.
#
# Needs protoc (3.21 or later), protoc-gen-go and protoc-gen-go-grpc on PATH
# (go install google.golang.org/protobuf/cmd/protoc-gen-go@latest
#  go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@latest).
set -euo pipefail

cd "$(dirname "$0")/.."
PATH="$PATH:$(go env GOPATH)/bin"

protoc \
	--proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	flowrun.proto

gofmt -l -w ./*.go >/dev/null

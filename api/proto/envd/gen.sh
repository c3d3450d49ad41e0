#!/bin/sh
# Regenerates the envd Go code. Needs protoc, protoc-gen-go, protoc-gen-connect-go.
set -e
cd "$(dirname "$0")"
protoc -I. -I/usr/include --go_out=. --go_opt=paths=source_relative \
  --connect-go_out=. --connect-go_opt=paths=source_relative \
  process/process.proto filesystem/filesystem.proto

#!/usr/bin/env bash
# Generates abi's MessagePack codec into $1 (default abi/zz_generated_msgp.go).
# msgp reads one package per directory, so it runs on a scratch copy of abi/
# without test files.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-abi/zz_generated_msgp.go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp abi/*.go "$tmp"/
rm -f "$tmp"/*_test.go "$tmp"/zz_generated_msgp.go
(cd "$tmp" && go run github.com/tinylib/msgp@v1.6.5 -file . -o zz_generated_msgp.go -io=false -tests=false >/dev/null)
# Decode strings without copying them (abi/strings.go says why and what it asks of callers).
sed 's/msgp\.ReadStringBytes(/readStringBytes(/g' "$tmp"/zz_generated_msgp.go >"$out"

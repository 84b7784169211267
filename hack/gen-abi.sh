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
# Then try the inlined short reader before each reader call (abi/read.go says why):
#   X, bts, err = R(bts)   becomes   if X, bts, err = S(bts); err != nil { X, bts, err = R(bts) }
short() { # reader short-reader
	printf 's/^(\t+)([^=]+), bts, err = %s\(bts\)$/\\1if \\2, bts, err = %s(bts); err != nil {\\n\\1\\t\\2, bts, err = %s(bts)\\n\\1}/\n' \
		"${1//./\\.}" "$2" "$1"
}
sed -E -e 's/msgp\.ReadStringBytes\(/readStringBytes(/g' \
	-e "$(short readStringBytes readShortString)" \
	-e "$(short msgp.ReadMapKeyZC readShortKey)" \
	-e "$(short msgp.ReadMapHeaderBytes readShortMapHeader)" \
	-e "$(short msgp.ReadArrayHeaderBytes readShortArrayHeader)" \
	"$tmp"/zz_generated_msgp.go >"$tmp"/rewritten.go
gofmt "$tmp"/rewritten.go >"$out"

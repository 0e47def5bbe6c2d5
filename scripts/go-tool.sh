#!/usr/bin/env bash
# Prints the path of a Go tool built from MODULE@VERSION with `go install`, building it once into
# .cache/tools/<name>-<version>/ (keyed by version: a new version is a new build; an old one stays
# usable offline). Usage: scripts/go-tool.sh NAME MODULE VERSION [BUILD-TAGS] (comma-separated tags go
# into the cache key too).
# Go: /usr/local/go/bin/go, else `go` on PATH, else Debian's golang-go; each tool needs a Go new enough
# for its go.mod (kustomize v5.7 and promtool v0.31x want Go >= 1.24): an older one fails loudly.
set -euo pipefail
name=$1 module=$2 version=$3 tags=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/tools/$name-$version${tags:+-$tags}"
if [[ -x "$dir/$name" ]]; then
  echo "$dir/$name"
  exit 0
fi
go=""
for candidate in /usr/local/go/bin/go "$(command -v go || true)"; do
  if [[ -n "$candidate" && -x "$candidate" ]]; then go=$candidate; break; fi
done
if [[ -z "$go" ]]; then
  echo "go-tool: no Go on this machine; installing Debian's golang-go" >&2
  apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >&2
  go=$(command -v go)
fi
echo "go-tool: building $module@$version${tags:+ (tags $tags)} with $("$go" version) (once; cached in $dir)" >&2
t0=$SECONDS
mkdir -p "$dir.tmp"
# GOFLAGS=-mod=mod: install the module as its go.mod pins it, whatever directory this runs from.
if ! GOBIN="$dir.tmp" GOFLAGS=-mod=mod CGO_ENABLED=0 "$go" install -tags "$tags" "$module@$version" >&2; then
  echo "go-tool: go install $module@$version failed (is $("$go" version) new enough for it?)" >&2
  exit 1
fi
mv "$dir.tmp/$name" "$dir.tmp/$name.bin" 2>/dev/null || true
mkdir -p "$dir" && mv "$dir.tmp/$name.bin" "$dir/$name" && rm -rf "$dir.tmp"
echo "go-tool: $name $version built in $((SECONDS - t0)) s" >&2
echo "$dir/$name"

#!/usr/bin/env bash
# Fetches the pinned NIXL wheel (nixl-cu12) without its Python dependencies, checks its sha256 and
# unpacks it under .cache/nixl/. Idempotent, and offline once the cache holds the unpacked wheel.
# Prints the NIXL home (the unpacked wheel's root) on its last line.
set -euo pipefail

NIXL_VERSION=1.5.1
NIXL_WHEEL=nixl_cu12-${NIXL_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl
NIXL_SHA256=341d0dfa499f941c054614252f1d8047d1380e33f29c87707372ff5ec7d3779a

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${PD_NIXL_CACHE:-$root/.cache/nixl}
home=$cache/nixl-cu12-$NIXL_VERSION
marker=$home/.unpacked-ok

if [ -f "$marker" ]; then
  echo "$home"
  exit 0
fi

mkdir -p "$cache"
wheel=$cache/$NIXL_WHEEL
if [ ! -f "$wheel" ] || ! echo "$NIXL_SHA256  $wheel" | sha256sum -c --status; then
  python=$(command -v python3 || true)
  [ -n "$python" ] || { echo "fetch-nixl: python3 with pip is needed to download $NIXL_WHEEL" >&2; exit 1; }
  # The wheel's native libraries do not depend on the Python version; pinning the tag keeps the
  # download the same file on every machine whatever its python3 is.
  "$python" -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --disable-pip-version-check -q \
    -d "$cache" "nixl-cu12==$NIXL_VERSION" >&2
fi
if ! echo "$NIXL_SHA256  $wheel" | sha256sum -c --status; then
  echo "fetch-nixl: sha256 of $wheel is not $NIXL_SHA256; refusing to use it" >&2
  exit 1
fi

rm -rf "$home.tmp"
mkdir -p "$home.tmp"
python3 -m zipfile -e "$wheel" "$home.tmp"
for f in .nixl_cu12.mesonpy.libs/libnixl_capi.so .nixl_cu12.mesonpy.libs/libnixl.so \
         .nixl_cu12.mesonpy.libs/plugins/libplugin_UCX.so; do
  [ -f "$home.tmp/$f" ] || { echo "fetch-nixl: $f missing from $NIXL_WHEEL" >&2; exit 1; }
done
ls "$home.tmp"/nixl_cu12.libs/libucp-*.so* >/dev/null 2>&1 \
  || { echo "fetch-nixl: bundled UCX (libucp) missing from $NIXL_WHEEL" >&2; exit 1; }
rm -rf "$home"
mv "$home.tmp" "$home"
touch "$marker"
echo "$home"

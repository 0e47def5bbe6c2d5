#!/usr/bin/env bash
# Runs src/test/python/router_openai_client.py (the unmodified OpenAI Python client, pinned, from
# PyPI, in its own venv under .cache/, installed once) against a router and a reference instance.
#   scripts/openai-client.sh ROUTER_URL REFERENCE_URL   (both on 127.0.0.1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OPENAI_VERSION=3.51.0
venv=${PD_OPENAI_VENV:-$root/.cache/openai-venv}
if [ "$("$venv/bin/python" -c 'import openai; print(openai.__version__)' 2>/dev/null)" != "$OPENAI_VERSION" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "openai==$OPENAI_VERSION"
fi
exec "$venv/bin/python" "$root/src/test/python/router_openai_client.py" "$@"

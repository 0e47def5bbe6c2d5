#!/usr/bin/env bash
# Sourced by scripts/run, scripts/test and .ci/run: makes a fresh Debian machine able to build and
# run pd-connector. Idempotent; installs only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail

export JAVA_HOME=${PD_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
if ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[2-9]|[3-9][0-9])'; then
  echo "setup: no Java 22+ at JAVA_HOME=$JAVA_HOME (found under /usr/lib/jvm: $(ls /usr/lib/jvm 2>/dev/null | tr '\n' ' '))." >&2
  echo "setup: install a Temurin 25 JDK there, or set PD_JAVA_HOME to one." >&2
  exit 1
fi
export PATH="$JAVA_HOME/bin:$PATH"

missing=()
command -v gcc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
# scripts/gpu-bundle.sh packs what travels to a GPU machine as tar.zst.
command -v zstd >/dev/null || missing+=(zstd)
command -v spin >/dev/null || missing+=(spin)
if command -v python3 >/dev/null && ! python3 -m pip --version >/dev/null 2>&1; then
  missing+=(python3-pip)
fi
# scripts/fuzz-api.sh installs schemathesis into a venv; Debian's python3 needs python3-venv for that.
if command -v python3 >/dev/null && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
# EtcdStoreIT runs the etcd registry store against real etcd clusters, and makes its TLS certificates with openssl.
command -v etcd >/dev/null || missing+=(etcd-server)
command -v etcdctl >/dev/null || missing+=(etcd-client)
command -v openssl >/dev/null || missing+=(openssl)
# NetworkFaultsIT puts P and D in network namespaces of its own (ip, tc) and drops packets with nftables.
command -v ip >/dev/null || missing+=(iproute2)
command -v tc >/dev/null || missing+=(iproute2)
command -v nft >/dev/null || missing+=(nftables)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

#!/usr/bin/env bash
# Builds Dockerfile.jvm with buildah and runs the image's own entrypoint, as CI can on this kind of
# machine: no image registry is reachable and `podman run` is refused here, so the base image is made here
# (a minimal Debian root file system by mmdebstrap from Debian's packages, plus a Java runtime made by
# jlink from the JDK on the machine) and the container runs with `buildah run --isolation chroot`, in the
# host's network namespace, listening on 127.0.0.1 only. Checks: the image's user is not root; NIXL loads
# and /q/health/ready is up; a prefill and a pull of its KV are served and the KV is the reference's; the
# running JVM's user is the image's; nothing was written outside /tmp and the state dir (so the root file
# system can be read-only). Prints the image size and each step's time.
# Needs the packaged app (target/quarkus-app; built if missing) and the NIXL wheel (scripts/fetch-nixl.sh).
# The base is cached in .cache/image/ under a key of its inputs (Debian suite and packages, the JDK's
# release file, the jlink modules, this script's base recipe); a new key builds a new base.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$SECONDS
step() { echo "image-check: $* ($((SECONDS - started)) s)"; }

export JAVA_HOME=${PD_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
SUITE=bookworm
PACKAGES=libstdc++6,libgcc-s1,zlib1g,libssl3
# What the app uses of the JDK (jdeps over target/quarkus-app, plus the charsets, the EC crypto and the
# DNS resolver a JVM service needs at run time without naming them).
MODULES=java.base,java.compiler,java.desktop,java.instrument,java.logging,java.management,java.naming,java.net.http,java.security.jgss,java.sql,java.xml,jdk.charsets,jdk.crypto.ec,jdk.localedata,jdk.management,jdk.naming.dns,jdk.unsupported,jdk.zipfs

missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v curl >/dev/null || missing+=(curl)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ]; then
  echo "image-check: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
step "tools: $(buildah --version), mmdebstrap $(mmdebstrap --version | awk '{print $2}')"

[ -f target/quarkus-app/quarkus-run.jar ] || ./mvnw -B -ntp package -DskipTests
nixl=$(bash scripts/fetch-nixl.sh | tail -1)
case "$nixl" in
  "$root"/*) nixl_dir=${nixl#"$root"/} ;;
  *) echo "image-check: the NIXL wheel ($nixl) must be inside the build context $root (unset PD_NIXL_CACHE)" >&2; exit 1 ;;
esac

work=$root/.cache/image
store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
mkdir -p "$work"
key=$( { echo "$SUITE $PACKAGES $MODULES"; cat "$JAVA_HOME/release"; sed -n '/^# base:begin/,/^# base:end/p' "$0"; } \
  | sha256sum | cut -c1-16)
base=localhost/pd-ci-base:$key

# base:begin
if ! buildah "${store[@]}" inspect --type image "$base" >/dev/null 2>&1; then
  rm -rf "$work/base.tmp" && mkdir -p "$work/base.tmp"
  mmdebstrap --quiet --variant=minbase --include="$PACKAGES" "$SUITE" "$work/base.tmp/rootfs.tar"
  "$JAVA_HOME/bin/jlink" --add-modules "$MODULES" --strip-debug --no-man-pages --no-header-files \
    --compress=zip-6 --output "$work/base.tmp/jre"
  ctr=$(buildah "${store[@]}" from scratch)
  buildah "${store[@]}" add "$ctr" "$work/base.tmp/rootfs.tar" / >/dev/null
  buildah "${store[@]}" copy "$ctr" "$work/base.tmp/jre" /opt/java/openjdk >/dev/null
  buildah "${store[@]}" config --env JAVA_HOME=/opt/java/openjdk \
    --env PATH=/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah "${store[@]}" commit --quiet --rm "$ctr" "$base" >/dev/null
  rm -rf "$work/base.tmp"
  step "base $base made (Debian $SUITE minbase + $PACKAGES, jlink runtime)"
else
  step "base $base cached"
fi
# base:end

image=localhost/pd-connector:image-check
buildah "${store[@]}" bud --quiet --isolation chroot --pull-never -f Dockerfile.jvm \
  --ignorefile Dockerfile.jvm.dockerignore --build-arg BASE_IMAGE="$base" --build-arg NIXL_DIR="$nixl_dir" -t "$image" . >/dev/null
size=$(buildah "${store[@]}" images --format '{{.Size}}' "$image" | head -1)
step "built $image from Dockerfile.jvm: $size (base $(buildah "${store[@]}" images --format '{{.Size}}' "$base" | head -1))"

config=$(buildah "${store[@]}" inspect --type image "$image" | jq '.OCIv1.config')
user=$(jq -r '.User // ""' <<<"$config")
mapfile -t entrypoint < <(jq -r '.Entrypoint[]' <<<"$config")
if [[ -z "$user" || "$user" == 0 || "$user" == root ]]; then
  echo "image-check: FAIL: the image runs as '${user:-root}', not as a user of its own" >&2
  exit 1
fi

port=$(python3 "$root/scripts/free_port.py") # below the ephemeral range: nothing else takes it before the bind
run=$(mktemp -d /tmp/pd-image-check.XXXXXX)
mkdir -p "$run/tmp" "$run/state" "$run/shm"
chown "$user" "$run/tmp" "$run/state" "$run/shm"
chmod 1777 "$run/tmp"
ctr=$(buildah "${store[@]}" from --pull-never "$image")
mnt=$(buildah "${store[@]}" mount "$ctr")
touch "$run/marker"
jvm=""
# Every process running inside this container (its root is the container's mount), by pid.
container_pids() {
  local p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/root" 2>/dev/null)" == "$mnt" ]] && echo "${p#/proc/}"
  done
  return 0
}
# The processes under a pid, children first (buildah run -> buildah-chroot-exec -> sh -> java).
descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    descendants "$child"
    echo "$child"
  done
}
cleanup() {
  local pid
  # By root and by parentage: under chroot isolation a process's root need not read back as the mount,
  # and a JVM left running keeps P's KV file locked for the next run (HELPER_FILE_IN_USE).
  for pid in $(container_pids) ${runner:+$(descendants "$runner")}; do kill "$pid" 2>/dev/null || true; done
  [ -n "${runner:-}" ] && wait "$runner" 2>/dev/null || true
  buildah "${store[@]}" umount "$ctr" >/dev/null 2>&1 || true
  buildah "${store[@]}" rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$run"
}
trap cleanup EXIT

# The image's entrypoint, user and environment; the test only binds it to loopback on a free port.
buildah "${store[@]}" run --isolation chroot --user "$user" \
  --volume "$run/tmp:/tmp" --volume "$run/state:/var/lib/pd-connector" --volume "$run/shm:/dev/shm" \
  --env QUARKUS_HTTP_HOST=127.0.0.1 --env QUARKUS_HTTP_PORT="$port" --env PD_ADVERTISED_PORT="$port" \
  "$ctr" -- "${entrypoint[@]}" >"$run/../pd-image-check-$port.log" 2>&1 &
runner=$!
log=/tmp/pd-image-check-$port.log
url=http://127.0.0.1:$port
# A quiet 2-core machine starts it in under 10 s; one shared with other builds took 117 s.
deadline=$((SECONDS + ${PD_IMAGE_START_SECONDS:-300}))
until curl -sf "$url/q/health/ready" -o "$run/ready.json"; do
  if (( SECONDS > deadline )) || ! kill -0 "$runner" 2>/dev/null; then
    echo "image-check: FAIL: not ready within ${PD_IMAGE_START_SECONDS:-300} s; the container's log:" >&2
    tail -50 "$log" >&2
    exit 1
  fi
  sleep 1
done
jvm=$(ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
step "ready on $url (JVM pid $jvm, uid $(stat -c %u /proc/"$jvm"))"
[[ "$(stat -c %u /proc/"$jvm")" == "$user" ]] || { echo "image-check: FAIL: the JVM does not run as $user" >&2; exit 1; }
jq -e '.checks[] | select(.name == "transfer-engine" and .status == "UP")' "$run/ready.json" >/dev/null \
  || { echo "image-check: FAIL: NIXL not loaded: $(cat "$run/ready.json")" >&2; exit 1; }
jq -e '.checks[] | select(.name == "connector" and .status == "UP")' "$run/ready.json" >/dev/null \
  || { echo "image-check: FAIL: connector not ready: $(cat "$run/ready.json")" >&2; exit 1; }

prompt="the quick brown fox jumps over the lazy dog"
curl -sf --max-time 30 "$url/v1/producer/prefill" -H 'content-type: application/json' -d "{
  \"request_id\": \"image-check\", \"prompt\": \"$prompt\", \"kv_transfer_params\": {\"do_remote_decode\": true}}" \
  -o "$run/prefill.json" || { echo "image-check: FAIL: prefill refused" >&2; tail -30 "$log" >&2; exit 1; }
curl -sf --max-time 30 "$url/v1/consumer/pull?matches_reference=true" -H 'content-type: application/json' -d "{
  \"request_id\": \"image-check\", \"prompt\": \"$prompt\",
  \"kv_transfer_params\": $(jq .kv_transfer_params "$run/prefill.json")}" -o "$run/pull.json" \
  || { echo "image-check: FAIL: pull refused" >&2; tail -30 "$log" >&2; exit 1; }
jq -e '.state == "received" and .matches_reference == true' "$run/pull.json" >/dev/null \
  || { echo "image-check: FAIL: pull answered $(cat "$run/pull.json")" >&2; exit 1; }
curl -sf --max-time 30 "$url/v1/consumer/requests/image-check/kv" -o "$run/kv.bin"
step "prefill and pull served: $(jq -c '{state, bytes, matches_reference}' "$run/pull.json"), $(stat -c %s "$run/kv.bin") KV bytes read out"

kill "$jvm"
deadline=$((SECONDS + 30))
while kill -0 "$runner" 2>/dev/null; do
  (( SECONDS < deadline )) || { echo "image-check: FAIL: the JVM did not stop within 30 s of SIGTERM" >&2; exit 1; }
  sleep 0.5
done
jvm=""
# Files only (a directory's time moves with what buildah itself writes into it); /etc/hosts, /etc/hostname
# and /etc/resolv.conf are buildah run's, written before the entrypoint starts.
written=$(cd "$mnt" && find . -xdev -newer "$run/marker" -not -type d -not -path './proc/*' -not -path './dev/*' \
  -not -path './sys/*' -not -path './tmp/*' -not -path './var/lib/pd-connector/*' -not -path './run/*' \
  -not -path ./etc/hosts -not -path ./etc/hostname -not -path ./etc/resolv.conf | head -20)
if [[ -n "$written" ]]; then
  echo "image-check: FAIL: the service wrote outside /tmp and its state dir: $written" >&2
  exit 1
fi
ls "$run/tmp" | grep -q . || { echo "image-check: FAIL: nothing unpacked into /tmp" >&2; exit 1; }
step "stopped on SIGTERM; wrote only /tmp ($(ls "$run/tmp" | tr '\n' ' ')) and the state dir ($(ls "$run/state" | tr '\n' ' '))"
rm -f "$log"
buildah "${store[@]}" rmi "$image" >/dev/null 2>&1 || true
echo "image-check: passed in $((SECONDS - started)) s; image size $size"

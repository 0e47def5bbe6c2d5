#!/usr/bin/env bash
# model/check.sh -- model-check the lease protocol (model/lease.pml) and D's epoch tables (model/epochs.pml)
# with Spin.
#
#   bash model/check.sh                 full model (safety + liveness, 6 configurations) and every mutation
#   bash model/check.sh --lazy-flood    also re-run the safety checks with a lazy flood (about +40 s CPU)
#   JOBS=1 bash model/check.sh          run the checks one at a time (default: 2 at a time)
#
# Builds in a temporary directory; writes only model/trails/MUT_*.txt and EPOCH_*.txt in the repository.
# Prints one line per check and ends with "N passed, M failed"; exits non-zero if anything failed.
set -euo pipefail

case "${BASH_SOURCE[0]}" in */*) HERE="${BASH_SOURCE[0]%/*}" ;; *) HERE=. ;; esac
HERE="$(cd "$HERE" && pwd)"
MODEL="$HERE/lease.pml"
TRAILS="$HERE/trails"
JOBS="${JOBS:-2}"
LAZY=0
for arg in "$@"; do
  case "$arg" in
    --lazy-flood) LAZY=1 ;;
    *) echo "usage: bash model/check.sh [--lazy-flood]" >&2; exit 2 ;;
  esac
done

if ! command -v spin >/dev/null 2>&1; then
  echo "error: 'spin' is not installed (Debian/Ubuntu: apt-get install -y spin). Not installing it from here." >&2
  exit 1
fi
if ! command -v gcc >/dev/null 2>&1; then
  echo "error: 'gcc' is needed to compile Spin's verifier (pan.c)." >&2
  exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/lease-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$TRAILS" "$WORK/results"

CONFIGS=(CFG_REUSE CFG_RESTART CFG_TWO CFG_SCARCE CFG_LIFE CFG_GRANT)
DEPTH=10000              # pan -m: far above the deepest path (< 120); a run that reaches it fails
T_ALL=$(date +%s%N)

secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
states() { awk '/states, stored/ { print $1; exit }' "$1" 2>/dev/null || true; }
errors() { awk '/errors:/ { for (i = 1; i <= NF; i++) if ($i == "errors:") { print $(i + 1); exit } }' "$1" 2>/dev/null || true; }
depth_ok() { ! grep -q "max search depth too small" "$1"; }

# build DIR CFLAGS SPIN-DEFINES... : generate and compile pan in $WORK/DIR
# (PML=<file> build ...: another model than lease.pml)
build() {
  local dir="$WORK/$1" cflags="$2" model="${PML:-$MODEL}"
  shift 2
  mkdir -p "$dir"
  cp "$model" "$dir/"
  if ! (cd "$dir" && spin "$@" -a "${model##*/}" >spin.out 2>&1 && gcc $cflags -o pan pan.c >gcc.out 2>&1); then
    cat "$dir/spin.out" "$dir/gcc.out" 2>/dev/null | head -5 | sed 's/^/    /' >&2
    return 1
  fi
}

# the property a pan error stands for
property() {
  local f="$1" txt
  if grep -q "acceptance cycle" "$f"; then echo "liveness 'drained' (acceptance cycle)"; return; fi
  txt="$(grep -m1 "assertion violated" "$f" | sed 's/.*assertion violated *//; s/ (at depth.*//')"
  case "$txt" in
    *hbFrom*)       echo "hb_own_attempt, assert $txt" ;;
    *born\[*)       echo "lifetime_bounded, assert $txt" ;;
    *bad\[*)        echo "received_own_bytes, assert $txt" ;;
    *dOwner\[dblk*) echo "read_into_own_dblock, assert $txt" ;;
    *l==*)          echo "notif_own_attempt, assert $txt" ;;
    *earlyFrom*)    echo "notif_own_attempt, assert $txt" ;;
    *"==(3+"*)      echo "copy_into_granted_block, assert $txt" ;;
    *.lost*)        echo "no_spurious_decline, assert $txt" ;;
    *.slot==255*)   echo "notif_own_attempt, assert $txt" ;;
    *)              echo "model sanity, assert $txt" ;;
  esac
}

# readable schedule from `spin -t -p`: step, process and the model's "@ ..." event lines
schedule() {
  awk '
    /^ *[0-9]+:[ \t]+proc/ {
      step = $1; sub(":", "", step)
      p = $0; sub(/^[^(]*\(/, "", p); sub(/:.*/, "", p); proc = p
      next
    }
    /^ *@ / { line = $0; sub(/^ *@ /, "", line); printf "%5s  %-15s %s\n", step, proc, line; next }
    /START OF CYCLE/ { print "       ---- start of cycle: repeats forever, nothing else can happen ----"; next }
    /assertion violated|text of failed assertion|acceptance cycle/ { sub(/^ */, ""); print "       " $0 }
  ' "$1"
}

# ------------------------------------------------------------------ full model
# full KIND CFG : KIND = safety | liveness | lazy
full() {
  local kind="$1" cfg="$2" t0 dir out name
  t0=$(date +%s%N)
  dir="full-$kind-$cfg"
  out="$WORK/$dir/pan.txt"
  case "$kind" in
    safety)   name="full-safety";            build "$dir" "-O1 -DSAFETY -DNOCLAIM" -D"$cfg" -DSANITY || { echo "FAIL $name $cfg: build"; return; } ;;
    lazy)     name="full-safety-lazy-flood"; build "$dir" "-O1 -DSAFETY -DNOCLAIM" -D"$cfg" -DSANITY -DLAZY_FLOOD || { echo "FAIL $name $cfg: build"; return; } ;;
    liveness) name="full-liveness-drained";  build "$dir" "-O1" -D"$cfg" -DSANITY || { echo "FAIL $name $cfg: build"; return; } ;;
  esac
  if [ "$kind" = liveness ]; then
    (cd "$WORK/$dir" && ./pan -a -N drained -m$DEPTH >pan.txt 2>&1) || true
  else
    (cd "$WORK/$dir" && ./pan -m$DEPTH >pan.txt 2>&1) || true
  fi
  if [ "$(errors "$out")" = "0" ] && depth_ok "$out"; then
    echo "PASS $name $cfg ($(states "$out") states, $(secs "$t0") s)"
  else
    echo "FAIL $name $cfg: $(grep -m1 -E 'pan:1|too small' "$out" || echo 'no result from pan')"
  fi
}

# ------------------------------------------------------------------- mutations
# name | kind (safety|liveness) | defines | config to try first | what the mutation does
MUTATIONS=(
  "L1|safety|-DMUT_L1|CFG_RESTART|no epoch: the nonce sequence restarts with P, so nonces repeat"
  "L2|safety|-DMUT_L2|CFG_REUSE|a request can finish and export its lease before its slot is written on every rank"
  "L2B|safety|-DMUT_L2B|CFG_REUSE|within a step a worker applies slot writes before slot clears"
  "L2B_L4|safety|-DMUT_L2B -DMUT_L4|CFG_SCARCE|L2b and L4 removed together"
  "L3|safety|-DMUT_L3|CFG_REUSE|a rank reports finished-sending first and zeroes its slot later"
  "L4|safety|-DMUT_L4|CFG_SCARCE|the slot returns to the pool when the release starts, before every rank reported finished-sending"
  "L5|safety|-DMUT_L5|CFG_REUSE|the slot READ is posted with the block READs and can complete before them"
  "L6|safety|-DMUT_L6|CFG_REUSE|D notifies P as soon as the block READs completed, before the slot check"
  "L6B|safety|-DMUT_L6B|CFG_REUSE|P counts a notification for the request id's current lease without comparing the nonce"
  "L7|safety|-DMUT_L7|CFG_REUSE|a mismatch, a failed slot READ or missing lease fields do not fail the load"
  "L8|safety|-DMUT_L8|CFG_REUSE|a heartbeat revives a zeroed (RELEASING or FREED) lease: live again, nonce rewritten"
  "L8B|liveness|-DMUT_L8B|CFG_REUSE|the reaper does not sweep: leases never expire"
  "L9|safety|-DMUT_L9|CFG_REUSE|D decides as soon as one source rank's READs are terminal"
  "L11|safety|-DMUT_L11|CFG_REUSE|P counts a read notification without a nonce for a lease with a slot"
  "L12|safety|-DMUT_L12|CFG_REUSE|P applies a heartbeat to the request id's live lease whatever its nonce"
  "L12B|safety|-DMUT_L12B|CFG_LIFE|heartbeats extend a lease past its maximum lifetime"
  "L13|safety|-DMUT_L13|CFG_REUSE|D frees the D block of a pull that ends early at once, though a block READ of it is in flight"
  "G1|safety|-DMUT_G1|CFG_GRANT|P answers a grant before every rank wrote its slots' nonces"
  "G2|safety|-DMUT_G2|CFG_GRANT|the engine hands out a request's params before its copy into the blocks completed"
  "G3|safety|-DMUT_G3|CFG_GRANT|a closing grant's blocks are freed at once, before its unbound slots are zeroed"
  "G4|safety|-DMUT_G4|CFG_GRANT|an early read kept on the grant counts at the commit whatever request id it names"
  "G5|safety|-DMUT_G5|CFG_GRANT|the engine binds a request to one grant's slot and another grant's block (P still refuses such a commit)"
  "G6|safety|-DMUT_G6|CFG_GRANT|the engine copies into a grant's blocks past its own deadline, when P may have expired and reclaimed the grant"
  "G7|liveness|-DMUT_G7|CFG_GRANT|P applies a commit to a grant that already closed (expired or returned), though its slot is being zeroed or back in the pool"
)
# mutations whose rule the model shows not to be needed on its own (README.md, Findings)
declare -A EXPECTED_FINDING=(
  [L2B]="L2b (clears before writes within a step) not needed on its own: under L3+L4 a slot's clear is applied before its finished-sending report, which precedes the slot's reuse, so no step holds a clear and a write of the same slot (see L2B_L4)"
)

# run one mutation in one config: prints the pan error count
mutrun() {
  local m="$1" kind="$2" defs="$3" cfg="$4" bfs="$5" dir="mut-$1-$4-$5" cflags="-O0 -DSAFETY -DNOCLAIM"
  [ "$bfs" = bfs ] && cflags="$cflags -DBFS"
  [ "$kind" = liveness ] && cflags="-O0"
  # shellcheck disable=SC2086
  build "$dir" "$cflags" -D"$cfg" $defs || { echo "build-failed"; return; }
  if [ "$kind" = liveness ]; then
    (cd "$WORK/$dir" && ./pan -a -N drained -m$DEPTH >pan.txt 2>&1) || true
  else
    (cd "$WORK/$dir" && ./pan -m$DEPTH >pan.txt 2>&1) || true
  fi
  errors "$WORK/$dir/pan.txt"
}

mutation() {
  local m="$1" kind="$2" defs="$3" first="$4" what="$5" t0 caught="" e cfg dir prop n mode
  t0=$(date +%s%N)
  mode=bfs                                   # BFS: the shortest counterexample, as regression schedule
  [ "$kind" = liveness ] && mode=dfs
  [ -n "${EXPECTED_FINDING[$m]:-}" ] && mode=dfs   # nothing to shorten: explore depth-first (faster)
  e="$(mutrun "$m" "$kind" "$defs" "$first" "$mode")"
  if [ -n "$e" ] && [ "$e" != "0" ] && [ "$e" != build-failed ]; then
    caught="$first"
    [ "$mode" = dfs ] && [ "$kind" = safety ] && mutrun "$m" "$kind" "$defs" "$first" bfs >/dev/null
  else
    for cfg in "${CONFIGS[@]}"; do           # then every other configuration, depth-first (faster)
      [ "$cfg" = "$first" ] && continue
      [[ "$m" == G* ]] && break              # the engine path's switches change nothing outside CFG_GRANT
      e="$(mutrun "$m" "$kind" "$defs" "$cfg" dfs)"
      if [ -n "$e" ] && [ "$e" != "0" ] && [ "$e" != build-failed ]; then
        caught="$cfg"
        [ "$kind" = safety ] && mutrun "$m" "$kind" "$defs" "$cfg" bfs >/dev/null
        break
      fi
    done
  fi
  if [ "$e" = build-failed ] || [ -z "$e" ]; then
    echo "FAIL mutation $m: no result from spin/pan"
    return
  fi

  if [ -z "$caught" ]; then
    rm -f "$TRAILS/MUT_$m.txt"
    if [ -n "${EXPECTED_FINDING[$m]:-}" ]; then
      echo "FINDING ${EXPECTED_FINDING[$m]} (no error in any of the ${#CONFIGS[@]} configurations, $(secs "$t0") s)"
    else
      echo "FAIL mutation $m NOT caught in any configuration: $what"
    fi
    return
  fi

  dir="$WORK/mut-$m-$caught-bfs"
  [ -d "$dir" ] || dir="$WORK/mut-$m-$caught-dfs"
  prop="$(property "$dir/pan.txt")"
  n="$(states "$dir/pan.txt")"
  # shellcheck disable=SC2086
  (cd "$dir" && spin -D"$caught" $defs -t -p lease.pml >replay.txt 2>&1) || true
  {
    echo "# MUT_$m: $what"
    echo "# configuration: $caught    violated: $prop"
    echo "# found by: spin -D$caught $defs -a lease.pml; pan $([ "$kind" = safety ] && echo 'compiled -DSAFETY -DBFS (a shortest trail)' || echo '-a -N drained') after $n states"
    echo "# replay:   spin -D$caught $defs -t -p lease.pml   (below: the model's '@' events of that replay)"
    echo "# a0 = request 0 attempt 1, a1 = request 0 attempt 2, a2 = request 1 attempt 1; P<r>/D<r> = P/D rank r;"
    echo "# block content: a+1 = written by attempt a, 9 = flood (another prompt); slot READ: 1 match, 2 mismatch, 3 failed"
    [ "$caught" = CFG_GRANT ] && echo "# CFG_GRANT: g0/g1 = P's grants to the engine, E = the engine; a0's lease row is g0's placeholder until the commit"
    echo "#"
    echo "# step  process         event"
    schedule "$dir/replay.txt"
  } >"$TRAILS/MUT_$m.txt"
  if [ -n "${EXPECTED_FINDING[$m]:-}" ]; then
    echo "FAIL mutation $m caught ($prop; $caught) but README records it as a finding: update the README"
  elif ! grep -q "^ *[0-9]" "$TRAILS/MUT_$m.txt"; then
    echo "FAIL mutation $m caught ($prop; $caught) but its trail did not replay"
  else
    echo "PASS mutation $m caught ($prop; $caught, $n states, $(secs "$t0") s) -> model/trails/MUT_$m.txt"
  fi
}

# ------------------------------------------------------- D's epoch tables (epochs.pml)
# name | what the mutation does; each must make the engine trust a copy holding a later pull's bytes
EPOCH_MUTATIONS=(
  "E1|D stamps a block's epoch after a later pull's bytes landed in it, not before"
  "E2|the engine reads the block's epoch before its copy, not after"
  "E3|a restarted D's epochs start where its predecessor's did"
  "E4|the engine maps the epoch table and the blocks separately, each at the file the path names when it looks"
)

# epochs full | epochs E<n> WHAT : the epoch model without or with one mutation
epochs() {
  local m="$1" what="${2:-}" t0 dir out n defs=""
  t0=$(date +%s%N)
  dir="$WORK/epochs-$m"
  out="$dir/pan.txt"
  [ "$m" = full ] || defs="-DMUT_$m"
  # shellcheck disable=SC2086
  if ! PML="$HERE/epochs.pml" build "epochs-$m" "-O0 -DSAFETY -DNOCLAIM -DBFS" $defs; then
    echo "FAIL epochs $m: build"
    return
  fi
  (cd "$dir" && ./pan -m$DEPTH >pan.txt 2>&1) || true
  n="$(states "$out")"
  if [ "$m" = full ]; then
    if [ "$(errors "$out")" = "0" ] && depth_ok "$out"; then
      echo "PASS epochs-full ($n states, $(secs "$t0") s)"
    else
      echo "FAIL epochs-full: $(grep -m1 -E 'pan:1|too small' "$out" || echo 'no result from pan')"
    fi
    return
  fi
  if [ -z "$(errors "$out")" ] || [ "$(errors "$out")" = "0" ]; then
    rm -f "$TRAILS/EPOCH_$m.txt"
    echo "FAIL mutation $m NOT caught: $what"
    return
  fi
  # shellcheck disable=SC2086
  (cd "$dir" && spin $defs -t -p epochs.pml >replay.txt 2>&1) || true
  {
    echo "# EPOCH_$m: $what"
    echo "# violated: $(grep -m1 "assertion violated" "$out" | sed 's/.*assertion violated *//; s/ (at depth.*//')"
    echo "# found by: spin $defs -a epochs.pml; pan compiled -DSAFETY -DBFS (a shortest trail) after $n states"
    echo "# replay:   spin $defs -t -p epochs.pml   (below: the model's '@' events of that replay)"
    echo "#"
    echo "# step  process         event"
    schedule "$dir/replay.txt"
  } >"$TRAILS/EPOCH_$m.txt"
  echo "PASS mutation $m caught ($n states, $(secs "$t0") s) -> model/trails/EPOCH_$m.txt"
}

# ----------------------------------------------------------------- job runner
i=0
launch() {                                   # launch FUNCTION ARGS... : at most $JOBS at once
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  i=$((i + 1))
  local res
  res="$WORK/results/$(printf %03d "$i")"
  ( "$@" >"$res" 2>"$res.err" || echo "FAIL $* (internal error)" >"$res" ) &
}

# the largest runs first, so that two jobs end at about the same time
for cfg in CFG_TWO CFG_REUSE CFG_RESTART CFG_SCARCE CFG_LIFE CFG_GRANT; do launch full liveness "$cfg"; done
for cfg in CFG_TWO CFG_REUSE CFG_RESTART CFG_SCARCE CFG_LIFE CFG_GRANT; do launch full safety "$cfg"; done
if [ "$LAZY" = 1 ]; then
  for cfg in CFG_TWO CFG_REUSE CFG_RESTART CFG_SCARCE CFG_LIFE CFG_GRANT; do launch full lazy "$cfg"; done
fi
for entry in "${MUTATIONS[@]}"; do
  IFS='|' read -r m kind defs first what <<<"$entry"
  launch mutation "$m" "$kind" "$defs" "$first" "$what"
done
launch epochs full
for entry in "${EPOCH_MUTATIONS[@]}"; do
  IFS='|' read -r m what <<<"$entry"
  launch epochs "$m" "$what"
done
wait

passed=0
failed=0
for res in "$WORK"/results/[0-9][0-9][0-9]; do
  line="$(head -n1 "$res")"
  [ -n "$line" ] || line="FAIL $(basename "$res"): no result"
  echo "$line"
  case "$line" in
    PASS*|FINDING*) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)); sed 's/^/    /' "$res.err" 2>/dev/null | head -5 ;;
  esac
done
times >"$WORK/times"                           # no pipe: `times` in a subshell would report the subshell
cpu="$(tail -n1 "$WORK/times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')"
echo "total $(secs "$T_ALL") s wall, ${cpu} s CPU, JOBS=$JOBS, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

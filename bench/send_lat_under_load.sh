#!/usr/bin/env bash
# send_lat under load (issue 19's last goal row): softib_perf send_lat (RC SEND 8 B,
# t_typical one-way) in one node (softibd's default node: two CAs cabled, both user
# processes on it) and across the default fabric (host-0002 -> leaf -> spine -> leaf ->
# host-0004, one softibd, --sm internal), each next to the futex ping-pong floor between two
# processes (softib_bench_floors), first idle, then with LOOPS busy-looping processes beside
# it that this script starts and kills by pid. Same run; nobody is pinned (the scheduler
# shares the CPUs between the loops, the two softib_perf processes and softibd's threads).
# Prints a table of figures and the ratios to the floor; asserts no timing.
#
#   send_lat_under_load.sh SOFTIBD SOFTIB_PERF SOFTIB_BENCH_FLOORS [ITERATIONS] [LOOPS]
softibd=$1
perf=$2
floors=$3
iters=${4:-2000}
nloops=${5:-2}
source "$(dirname "$0")/../tools/softibd/tests/daemons.sh"

loops=()
start_loops() {
  local i
  for ((i = 0; i < nloops; i++)); do
    "${tied[@]}" /bin/sh -c 'while :; do :; done' &
    loops+=($!)
  done
}
stop_loops() {
  local pid
  for pid in "${loops[@]}"; do kill -KILL "$pid" 2>/dev/null && { wait "$pid" 2>/dev/null || true; }; done
  loops=()
}
trap 'stop_loops; cleanup' EXIT

# The functions below run in this shell itself, never in a $(...) or <(...) subshell:
# "${tied[@]}" ties the server to this shell. Each appends one figure to $work/figures.
# send_lat SERVER_RUN CLIENT_RUN: t_typical (µs) of the client's JSON result.
send_lat() {
  local oob="unix:$work/oob-$RANDOM.sock"
  "${tied[@]}" "$perf" send_lat -s 8 -n "$iters" --run-dir "$1" --oob "$oob" --timeout 60 \
    >"$work/server.out" 2>&1 &
  local server=$!
  "$perf" send_lat -s 8 -n "$iters" --run-dir "$2" --oob "$oob" --connect --timeout 60 --json \
    >"$work/client.out" 2>"$work/client.err" ||
    fail "send_lat $2 -> $1: $(cat "$work/client.out" "$work/client.err" "$work/server.out")"
  wait "$server" || fail "send_lat server: $(cat "$work/server.out")"
  grep -oE '"t_typical_us": *[0-9.e+-]+' "$work/client.out" | head -1 | sed -E 's/.*: *//' \
    >>"$work/figures"
}
futex_floor() {
  "$floors" --only futex -n "$iters" --csv >"$work/floor.out" 2>&1 ||
    fail "softib_bench_floors: $(cat "$work/floor.out")"
  awk -F, '$1 == "futex-pingpong" {print $5}' "$work/floor.out" >>"$work/figures"
}
# One figure per line: floor, in one node, across the fabric.
phase() {
  : >"$work/figures"
  futex_floor
  send_lat "$work/node" "$work/node"
  send_lat "$work/fabric/host-0004" "$work/fabric/host-0002"
}

start_daemon node --run-dir "$work/node"
start_daemon fabric --run-dir "$work/fabric" --fabric default --sm internal
for _ in $(seq 200); do [[ -s "$work/fabric/sm.summary" ]] && break; sleep 0.05; done
grep -q 'subnet up' "$work/fabric/sm.summary" 2>/dev/null ||
  fail "the fabric's SM: $(cat "$work/fabric.log")"

phase
mapfile -t idle <"$work/figures"
[[ ${#idle[@]} -eq 3 ]] || fail "idle phase: ${idle[*]}"
start_loops
load_during=$(cut -d' ' -f1 /proc/loadavg)
phase
mapfile -t loaded <"$work/figures"
stop_loops
[[ ${#loaded[@]} -eq 3 ]] || fail "loaded phase: ${loaded[*]}"

echo "$(nproc) CPUs; load average with the loops ${load_during}; $iters iterations; nobody pinned"
printf '%-44s %12s %12s %10s %10s\n' "8 B, one-way t_typical (us)" "idle" \
  "$nloops loops" "idle/flr" "load/flr"
labels=("futex ping-pong, two processes (floor)" "send_lat in one node (softibd, 2 CAs)"
  "send_lat host-0002 -> host-0004 (fabric)")
for i in 0 1 2; do
  printf '%-44s %12.2f %12.2f %10s %10s\n' "${labels[$i]}" "${idle[$i]}" "${loaded[$i]}" \
    "$(awk -v a="${idle[$i]}" -v b="${idle[0]}" 'BEGIN {printf "%.1fx", a / b}')" \
    "$(awk -v a="${loaded[$i]}" -v b="${loaded[0]}" 'BEGIN {printf "%.1fx", a / b}')"
done

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
# The whole set runs once per SOFTIB_SPIN mode in MODES (default "always auto": before and
# after the spin gate, same run), each with fresh daemons.
#
#   send_lat_under_load.sh SOFTIBD SOFTIB_PERF SOFTIB_BENCH_FLOORS [ITERATIONS] [LOOPS] [MODES]
softibd=$1
perf=$2
floors=$3
iters=${4:-2000}
nloops=${5:-2}
modes=${6:-always auto}
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

# measure MODE: both daemons started with SOFTIB_SPIN=MODE (the softib_perf processes get it
# too), an idle phase and a phase beside the loops; their figures in $work/MODE.{idle,load}.
measure() {
  export SOFTIB_SPIN=$1
  start_daemon "node-$1" --run-dir "$work/node"
  start_daemon "fabric-$1" --run-dir "$work/fabric" --fabric default --sm internal
  for _ in $(seq 200); do [[ -s "$work/fabric/sm.summary" ]] && break; sleep 0.05; done
  grep -q 'subnet up' "$work/fabric/sm.summary" 2>/dev/null ||
    fail "the fabric's SM: $(cat "$work/fabric-$1.log")"
  phase
  cp "$work/figures" "$work/$1.idle"
  start_loops
  loadavg=$(cut -d' ' -f1 /proc/loadavg)
  phase
  stop_loops
  cp "$work/figures" "$work/$1.load"
  stop_daemons
  rm -rf "$work/node" "$work/fabric"
  unset SOFTIB_SPIN
}

for mode in $modes; do measure "$mode"; done

echo "$(nproc) CPUs; load average $loadavg (1 min, with the loops); $iters iterations; nobody pinned"
echo "SOFTIB_SPIN: always = spin before sleeping whatever the load (as before the spin gate);"
echo "auto = spin only while a CPU is free (hca/rings/spin_gate.h)"
printf '%-46s %-7s %10s %10s %9s %9s\n' "8 B, one-way t_typical (us)" "spin" "idle" \
  "$nloops loops" "idle/flr" "load/flr"
labels=("futex ping-pong, two processes (floor)" "send_lat in one node (softibd, 2 CAs)"
  "send_lat host-0002 -> host-0004 (fabric)")
for mode in $modes; do
  mapfile -t idle <"$work/$mode.idle"
  mapfile -t loaded <"$work/$mode.load"
  [[ ${#idle[@]} -eq 3 && ${#loaded[@]} -eq 3 ]] || fail "$mode: ${idle[*]} / ${loaded[*]}"
  for i in 0 1 2; do
    printf '%-46s %-7s %10.2f %10.2f %9s %9s\n' "${labels[$i]}" "$mode" "${idle[$i]}" \
      "${loaded[$i]}" \
      "$(awk -v a="${idle[$i]}" -v b="${idle[0]}" 'BEGIN {printf "%.1fx", a / b}')" \
      "$(awk -v a="${loaded[$i]}" -v b="${loaded[0]}" 'BEGIN {printf "%.1fx", a / b}')"
  done
done

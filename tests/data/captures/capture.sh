#!/usr/bin/env bash
# Takes the captures in this folder, the packet seeds of the fuzz corpora
# (tests/fuzz/make_seeds.py): a fabric brought up from nothing, as the wire carried it.
#   tests/data/captures/capture.sh [BUILD_DIR]     # default build/default
# softibd --fabric default --sm external (3 switches, 4 hosts, every port in Init); both
# cables of host-0001 are captured while softib-sm, a user process of host-0001, discovers the
# subnet by directed route, assigns LIDs, programs the LFTs, activates the ports and stays on
# as the SA; then softib_perf finds a server on host-0003 by service ID (SA ServiceRecord and
# PathRecord with RMPP, CM REQ/REP/RTU, DREQ/DREP) and runs RC SEND, RDMA WRITE and READ and
# atomics; and a UD SEND ping-pong. Everything started here is stopped by its pid.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../../build/default}" && pwd)
softibd=$build/tools/softibd/softibd
softib=$build/tools/softib/softib
sm=$build/ulp/sm/softib-sm
perf=$build/tools/softib_perf/softib_perf
work=$(mktemp -d /tmp/softib-capture.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkfifo "$work/ready"
"$softibd" --run-dir "$work/fab" --fabric default --sm external --ready-fd 3 3>"$work/ready" \
  >"$work/softibd.log" 2>&1 &
pids+=($!)
timeout 30 head -n1 "$work/ready" | grep -q ready
fabric() { "$softib" fabric --run-dir "$work/fab" "$@"; }
fabric links
fabric capture host-0001:1 "$here/bringup_host1_port1.erf"
fabric capture host-0003:1 "$here/traffic_host3_port1.erf"

"$sm" --run-dir "$work/fab/host-0001" -q --sweep-interval 0 >"$work/sm.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "subnet up" "$work/sm.out" && break; sleep 0.1; done
grep "subnet up" "$work/sm.out"

service_id=0x50f7c0ffee
run_pair() {
  "$perf" "$@" --run-dir "$work/fab/host-0003" --service-id "$service_id" --timeout 20 \
    >/dev/null 2>&1 &
  local server=$!
  "$perf" "$@" --run-dir "$work/fab/host-0001" --service-id "$service_id" --connect --timeout 20
  wait "$server"
}
run_pair send_lat -s 64 -n 20 --validate
run_pair write_bw -s 8192 -n 20 -t 4 --validate
run_pair read_lat -s 256 -n 20
run_pair atomic_bw -n 20 -t 4
# UD and UC have no CM path in softib_perf: their QP numbers cross a Unix socket.
oob="unix:$work/oob.sock"
"$perf" send_lat -c UD -s 128 -n 20 --run-dir "$work/fab/host-0003" --oob "$oob" --timeout 20 \
  >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do [ -S "$work/oob.sock" ] && break; sleep 0.05; done
"$perf" send_lat -c UD -s 128 -n 20 --run-dir "$work/fab/host-0001" --oob "$oob" --connect \
  --timeout 20
wait "$server"

fabric capture-stop host-0001:1
fabric capture-stop host-0003:1
ls -l "$here"/*.erf

#!/usr/bin/env bash
# The main job: build what it needs, start a node (softibd: two HCAs cabled back to back)
# in a private run directory, and run perftest-style tests between two user processes on
# it with softib_perf — a ping-pong (send_lat) and a bandwidth test (write_bw), payloads
# validated on the receiving side. softibd is stopped by its pid and everything is removed
# on exit. Then a whole fabric in one softibd (--fabric default: three switches, four hosts,
# each host a node, every port in Init): softib-sm brings it up (discovery by directed
# route, LIDs, LFTs, activation), ibnetdiscover prints it, and the same tests run between
# hosts behind different leaves; then softib-sm stays on as the SA (on host-0001, through
# its AL) and two applications on host-0001 and host-0003 find each other by service ID
# (ServiceRecord and PathRecord from the SA, REQ/REP/RTU through the CM, no out-of-band
# channel) and run the same tests. Then IPoIB (issue 18): softibd --fabric default --sm
# internal, `softib ipoib up` on host-0002 and host-0004 into two network namespaces,
# ping and a short iperf3 over it. Then the MAD tool, briefly: encode, decode, and tshark's
# dissector on a capture.
#
# Exit code 0 only when every step passed. Until the Access Layer maps the speed path's
# rings (MapCqRing/MapQpRings), the user-process runs fail with that message; the job then
# shows the same tests between kernel clients of an in-process node and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SOFTIB_JOBS:-2}

# SOFTIB_BUILD_DIR: an already configured build tree to use instead of the default preset's.
if [[ -n "${SOFTIB_BUILD_DIR:-}" ]]; then
  build=$SOFTIB_BUILD_DIR
  cmake --build "$build" -j "$jobs" --target softibd softib_perf softib softib-sm
else
  cmake --preset default >/dev/null
  cmake --build --preset default -j "$jobs" --target softibd softib_perf softib softib-sm
  build=build/default
fi
softibd=$build/tools/softibd/softibd
perf=$build/tools/softib_perf/softib_perf
softib=$build/tools/softib/softib
sm=$(cd "$build" && pwd)/ulp/sm/softib-sm  # absolute: it runs from a private directory

# "${tied[@]}": what this script starts dies with it, however it ends (the cleanup below
# still stops it in order).
source tests/support/tied.sh
work=$(mktemp -d /tmp/softib-main.XXXXXX)
daemon_pid=""
server_pid=""
sm_pid=""
cleanup() {
  # Only what this script started, by pid.
  for pid in "$server_pid" "$sm_pid"; do
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || continue
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ -n "$daemon_pid" ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

step() { printf '\n=== %s ===\n' "$*"; }
failed=0

step "softibd: one node, two HCAs cabled back to back, run directory $work/run"
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon_pid=$!
if ! timeout 20 head -n1 "$work/ready" | grep -q ready; then
  echo "softibd did not become ready:"; cat "$work/softibd.log"; exit 1
fi
cat "$work/softibd.log"

# One server + client pair of softib_perf processes; the client prints.
#   run_pair SERVER_RUN_DIR CLIENT_RUN_DIR TEST ARGS...
run_pair() {
  local server_dir=$1 client_dir=$2 test=$3
  shift 3
  local oob="unix:$work/oob-$test-$RANDOM.sock"
  "${tied[@]}" "$perf" "$test" "$@" --run-dir "$server_dir" --oob "$oob" --timeout 20 \
    >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  local rc=0
  "$perf" "$test" "$@" --run-dir "$client_dir" --oob "$oob" --connect --timeout 20 || rc=$?
  local server_rc=0
  wait "$server_pid" || server_rc=$?
  server_pid=""
  if [[ $rc -ne 0 || $server_rc -ne 0 ]]; then
    cat "$work/server.err" >&2
    echo "softib_perf $test: client exit $rc, server exit $server_rc" >&2
    return 1
  fi
}

step "send_lat: RC SEND ping-pong between two user processes, 8 bytes, validated"
user_ok=1
run_pair "$work/run" "$work/run" send_lat -s 8 -n 10000 --validate || user_ok=0
if [[ $user_ok -eq 1 ]]; then
  step "write_bw: RC RDMA WRITE bandwidth between two user processes, 4 KiB ... 1 MiB"
  run_pair "$work/run" "$work/run" write_bw -a --min-size 4096 --max-size 1048576 -n 500 -t 16 \
    --validate || user_ok=0
fi

if [[ $user_ok -eq 0 ]]; then
  failed=1
  step "the user-process speed path is not available: the same tests between kernel clients"
  "$perf" send_lat --kernel -s 8 -n 2000 --validate
  "$perf" write_bw --kernel -a --min-size 4096 --max-size 65536 -n 100 -t 16 --validate
fi

step "softibd: stop (SIGTERM to pid $daemon_pid)"
kill -TERM "$daemon_pid"
daemon_rc=0
wait "$daemon_pid" || daemon_rc=$?
daemon_pid=""
echo "softibd exited with $daemon_rc"
[[ $daemon_rc -eq 0 ]] || failed=1

step "softibd --fabric default: 3 switches (a spine, two leaves) and 4 hosts, each host a node; every port in Init"
ibsim_name="softib-main-$$"
mkfifo "$work/fabric-ready"
"${tied[@]}" "$softibd" --run-dir "$work/fabric" --fabric default --sm external \
  --ibsim "$ibsim_name" --ready-fd 3 3>"$work/fabric-ready" >"$work/fabric.log" 2>&1 &
daemon_pid=$!
if ! timeout 30 head -n1 "$work/fabric-ready" | grep -q ready; then
  echo "softibd --fabric did not become ready:"; cat "$work/fabric.log"; exit 1
fi
grep '^softibd:' "$work/fabric.log"
# softib-sm reaches the fabric as a user program at host-0001's port (the ibsim client
# protocol that softibd serves; ibsim-run preloads Debian's libumad2sim.so). Run it in a
# private directory: umad2sim writes a fake sysfs tree under the current one.
mkdir -p "$work/sm"
sim() { (cd "$work/sm" && env -u LD_PRELOAD IBSIM_SOCKNAME="$ibsim_name" timeout 60 ibsim-run "$@"); }
step "softib-sm: discover by directed route, assign LIDs, program LFTs, activate the ports"
if ! sim "$sm" --once --verify 2>"$work/sm.err"; then
  cat "$work/sm.err"; failed=1
fi
step "ibnetdiscover (infiniband-diags, unmodified) of the fabric softib-sm brought up"
sim ibnetdiscover 2>/dev/null || failed=1
step "send_lat host-0001 -> host-0003: leaf, spine, leaf (validated)"
run_pair "$work/fabric/host-0003" "$work/fabric/host-0001" send_lat -s 8 -n 2000 --validate ||
  failed=1
step "write_bw host-0002 -> host-0004 across the spine, 4 KiB ... 256 KiB (validated)"
run_pair "$work/fabric/host-0004" "$work/fabric/host-0002" write_bw -a --min-size 4096 \
  --max-size 262144 -n 200 -t 16 --validate || failed=1
step "softib-sm as the SA: MASTER on host-0001's port (through its AL), answering SA queries"
"${tied[@]}" /usr/bin/stdbuf -oL "$sm" --run-dir "$work/fabric/host-0001" -q \
  --sweep-interval 0 >"$work/sa.out" 2>&1 &
sm_pid=$!
for _ in $(seq 300); do grep -q "subnet up" "$work/sa.out" && break; sleep 0.1; done
grep "subnet up" "$work/sa.out" || { cat "$work/sa.out"; failed=1; }
# Server on host-0003, client on host-0001: found by service ID through the SA, connected by
# the CM; both print what they found and did (stderr), the client the figures.
#   run_service_pair TEST ARGS...
service_id=$(printf '0x%x' $((0x50F7000000 + $$)))
run_service_pair() {
  local test=$1
  shift
  "${tied[@]}" "$perf" "$test" "$@" --run-dir "$work/fabric/host-0003" \
    --service-id "$service_id" --timeout 20 >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  local rc=0 server_rc=0
  "$perf" "$test" "$@" --run-dir "$work/fabric/host-0001" --service-id "$service_id" --connect \
    --timeout 20 || rc=$?
  wait "$server_pid" || server_rc=$?
  server_pid=""
  cat "$work/server.err"
  if [[ $rc -ne 0 || $server_rc -ne 0 ]]; then
    echo "softib_perf $test --service-id: client exit $rc, server exit $server_rc" >&2
    return 1
  fi
}
step "send_lat host-0001 -> host-0003 by service ID $service_id: SA ServiceRecord + PathRecord, CM connection (validated)"
run_service_pair send_lat -s 8 -n 1000 --validate || failed=1
step "write_bw host-0001 -> host-0003 by service ID $service_id, 4 KiB ... 256 KiB (validated)"
run_service_pair write_bw -a --min-size 4096 --max-size 262144 -n 100 -t 16 --validate ||
  failed=1
kill -TERM "$sm_pid" 2>/dev/null || true
wait "$sm_pid" 2>/dev/null || true
sm_pid=""

step "softibd --fabric: stop (SIGTERM to pid $daemon_pid)"
kill -TERM "$daemon_pid"
daemon_rc=0
wait "$daemon_pid" || daemon_rc=$?
daemon_pid=""
echo "softibd exited with $daemon_rc"
[[ $daemon_rc -eq 0 ]] || failed=1

step "IPoIB: softibd --fabric default --sm internal; softib ipoib up on host-0002 and host-0004 in two namespaces"
# The SM and SA inside softibd (the broadcast group is joined through the SA); each host's
# interface is a TAP that softibd holds, moved into a namespace of this job's own.
ipoib_ns_a=sibm-$$-a
ipoib_ns_b=sibm-$$-b
ipoib_cleanup() {
  ip netns delete "$ipoib_ns_a" 2>/dev/null || true
  ip netns delete "$ipoib_ns_b" 2>/dev/null || true
}
trap 'ipoib_cleanup; cleanup' EXIT INT TERM
if [[ $(id -u) != 0 ]]; then
  echo "IPoIB needs root (TAP devices, network namespaces): skipped"; failed=1
else
  tied_netns_add "$ipoib_ns_a"
  tied_netns_add "$ipoib_ns_b"
  rm -f "$work/ipoib-ready"
  mkfifo "$work/ipoib-ready"
  "${tied[@]}" "$softibd" --run-dir "$work/ipoib" --fabric default --sm internal --ready-fd 3 \
    3>"$work/ipoib-ready" >"$work/ipoib.log" 2>&1 &
  daemon_pid=$!
  timeout 30 head -n1 "$work/ipoib-ready" | grep -q ready || { cat "$work/ipoib.log"; exit 1; }
  if ! "$softib" ipoib up --run-dir "$work/ipoib/host-0002" --name ib0 --netns "$ipoib_ns_a" \
    --addr 198.18.0.1/24 2>"$work/ipoib-up.err"; then
    cat "$work/ipoib-up.err"
    failed=1
  else
    "$softib" ipoib up --run-dir "$work/ipoib/host-0004" --name ib0 --netns "$ipoib_ns_b" \
      --addr 198.18.0.2/24 || failed=1
    for _ in $(seq 100); do
      ip -n "$ipoib_ns_b" -o link show dev ib0 | grep -q LOWER_UP && break
      sleep 0.1
    done
    ip -n "$ipoib_ns_a" address show dev ib0
    step "ping 198.18.0.2 (host-0004) from host-0002's namespace over IPoIB"
    ip netns exec "$ipoib_ns_a" ping -c 5 -i 0.2 -W 2 198.18.0.2 || failed=1
    step "iperf3 TCP over IPoIB, host-0002 -> host-0004, 2 s"
    "${tied[@]}" ip netns exec "$ipoib_ns_b" iperf3 -s -1 -B 198.18.0.2 --forceflush \
      >"$work/iperf3-server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 100); do grep -q "Server listening" "$work/iperf3-server.log" && break; sleep 0.05; done
    ip netns exec "$ipoib_ns_a" iperf3 -c 198.18.0.2 -t 2 || failed=1
    wait "$server_pid" || true
    server_pid=""
    "$softib" ipoib show --run-dir "$work/ipoib/host-0002"
  fi
  kill -TERM "$daemon_pid"
  wait "$daemon_pid" || failed=1
  daemon_pid=""
  ipoib_cleanup
fi

step "MAD tool: SA PathRecord GetResp as a UD packet on QP1 in an ERF capture"
"$softib" mad encode --layout PathRecord --class SubnAdm --method GetResp --tid 0x42 \
  DLID=3 SLID=1 SL=0 MTU=5 Rate=7 P_Key=0xffff NumbPath=1 --erf "$work/sa.erf" --dlid 1 --slid 3
"$softib" mad decode --erf "$work/sa.erf"
if command -v tshark >/dev/null; then
  tshark -r "$work/sa.erf" 2>/dev/null -T fields -E header=y -E separator=' ' \
    -e infiniband.lrh.dlid -e infiniband.lrh.slid -e infiniband.bth.destqp \
    -e infiniband.mad.mgmtclass -e infiniband.mad.method -e infiniband.mad.attributeid \
    -e infiniband.pathrecord.dlid -e infiniband.pathrecord.slid
fi

if [[ $failed -ne 0 ]]; then
  echo "main job: FAILED (see above)"
  exit 1
fi
echo "main job done"

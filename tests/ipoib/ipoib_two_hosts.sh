# shellcheck shell=bash
# Sourced by the IPoIB fault tests (label ipoib): a work directory, two namespaces of this
# test's own (sibi-<pid>-a/-b), softibd --fabric default (SOFTIBD_ARGS, default --sm
# internal) tied to the test, `softib ipoib up` on host-0002 (198.18.0.1, fd00:5b18::1 in
# $ns_a) and host-0004 (198.18.0.2, fd00:5b18::2 in $ns_b), carrier waited for; all
# removed at exit. Needs $softibd $softib; sets $work $run $ns_a $ns_b $daemon; gives fail,
# received, wait_carrier, iperf3_run, json_get, ipoib_counter.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-faults.XXXXXX)
ns_a=sibi-$$-a
ns_b=sibi-$$-b
daemon=""
server=""
extra_pids=()
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  for pid in "${extra_pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for log in "$work"/*.log; do  # what the daemons said (a crash's message, an SM's state)
    [[ -f $log ]] && { echo "--- $log (tail)"; tail -n 25 "$log"; } >&2
  done
  # What each interface's driver holds (carrier, groups, neighbours, counters).
  for host in host-0002 host-0004; do
    [[ -S $run/$host/ipoib.ctl ]] || continue
    echo "--- softib ipoib show ($host)" >&2
    "$softib" ipoib show --run-dir "$run/$host" 2>&1 | head -n 40 >&2 || true
  done
  exit 1
}
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
ip -n "$ns_a" link set lo up
ip -n "$ns_b" link set lo up
run=$work/run

# start_softibd RUN_DIR ARGS...: a softibd tied to this shell, ready on return; pid in $!-like
# $started.
start_softibd() {
  local dir=$1
  shift
  rm -f "$work/ready"
  mkfifo "$work/ready"
  "${tied[@]}" "$softibd" --run-dir "$dir" --fabric default "$@" --ready-fd 3 \
    3>"$work/ready" >"$dir.log" 2>&1 &
  started=$!
  timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$dir.log")"
}

# ipoib_up RUN_DIR/HOST NS N: the interface sibi0 with 198.18.0.N/24 and fd00:5b18::N/64.
ipoib_up() {
  "$softib" ipoib up --run-dir "$1" --name sibi0 --netns "$2" --addr "198.18.0.$3/24" \
    --addr "fd00:5b18::$3/64" >"$work/up.out" 2>&1 || fail "softib ipoib up $1: $(cat "$work/up.out")"
}

# wait_carrier NS [SECONDS]: until sibi0 in NS has its carrier (bounded).
wait_carrier() {
  local n=$((${2:-30} * 10))
  for _ in $(seq "$n"); do
    ip -n "$1" -o link show dev sibi0 | grep -q LOWER_UP && return 0
    sleep 0.1
  done
  fail "no carrier in $1: $(ip -n "$1" link show dev sibi0)"
}

received() {  # NS ARGS...: replies ping ARGS got in NS
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}

# iperf3_run ARGS...: iperf3 from $ns_a to $ns_b's server (198.18.0.2); JSON in $work/iperf3.json.
# IPERF3_DURING, if set, is run (in this shell) while the client (pid $iperf3_client) runs;
# IPERF3_LIMIT bounds the client's seconds (default 40).
iperf3_run() {
  rm -f "$work/iperf3-server.log"
  "${tied[@]}" ip netns exec "$ns_b" iperf3 -s -1 -B 198.18.0.2 --forceflush \
    >"$work/iperf3-server.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do grep -q "Server listening" "$work/iperf3-server.log" 2>/dev/null && break; sleep 0.05; done
  # Bounded: a transfer that stalls for good fails here, with the drivers' state, instead of
  # running into the test's timeout without a word.
  timeout "${IPERF3_LIMIT:-40}" ip netns exec "$ns_a" iperf3 -c 198.18.0.2 -J "$@" >"$work/iperf3.json" &
  iperf3_client=$!
  [[ -n "${IPERF3_DURING:-}" ]] && $IPERF3_DURING
  local rc=0
  wait "$iperf3_client" || rc=$?
  wait "$server" || true
  server=""
  return $rc
}

# json_get FILE EXPR: a Python expression over the JSON document `d`.
json_get() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# ipoib_counter HOST_RUN_DIR NAME: the drop count NAME (e.g. runt) in `softib ipoib show`.
ipoib_counter() {
  "$softib" ipoib show --run-dir "$1" sibi0 | sed -nE "s/^  drops.* $2 ([0-9]+).*/\1/p"
}

# two_hosts_up [SOFTIBD ARGS...]: softibd on $run, sibi0 on host-0002 ($ns_a, .1) and
# host-0004 ($ns_b, .2), both with carrier.
two_hosts_up() {
  [[ $# -gt 0 ]] || set -- --sm internal
  start_softibd "$run" "$@"
  daemon=$started
  ipoib_up "$run/host-0002" "$ns_a" 1
  ipoib_up "$run/host-0004" "$ns_b" 2
  wait_carrier "$ns_a"
  wait_carrier "$ns_b"
}

#!/usr/bin/env bash
# softibd --fabric default: three switches (a spine, two leaves) and four hosts, each a
# node of its own. Checks the printed fabric (ibnetdiscover format, with the LIDs set), then
# runs validated RC traffic between user processes on hosts behind different leaves
# (host -> leaf -> spine -> leaf -> host) and behind the same leaf, and a bad --fabric.
#
#   fabric_test.sh SOFTIBD SOFTIB_PERF
set -euo pipefail
softibd=$1
perf=$2

source "$(dirname "$0")/../../../tests/support/tied.sh"  # "${tied[@]}": children die with us
work=$(mktemp -d /tmp/softibd_fabric.XXXXXX)
daemon_pid=""
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A bad --fabric is one clear line and exit 1, nothing left running.
rc=0
"$softibd" --run-dir "$work/bad" --fabric "$work/no-such.topo" >"$work/bad.out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "bad --fabric: exit $rc"
grep -q "softibd: error: --fabric $work/no-such.topo" "$work/bad.out" || fail "bad --fabric: $(cat "$work/bad.out")"

mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --fabric default --ready-fd 3 3>"$work/ready" \
  >"$work/softibd.log" 2>&1 &
daemon_pid=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"
log=$(cat "$work/softibd.log")
grep -q "fabric default: 3 switches, 4 hosts" <<<"$log" || fail "summary line: $log"
# The printed fabric: each leaf lists its two hosts and two uplinks, with LIDs.
[[ $(grep -c '^Switch' <<<"$log") -eq 3 ]] || fail "3 switches printed"
grep -qE '^\[1\]\s+"H-[0-9a-f]+"\[1\]\([0-9a-f]+\)\s+# "host-0001 HCA-1" lid [0-9]+ 4xQDR' <<<"$log" ||
  fail "host-0001 behind a leaf port 1: $log"
for h in host-0001 host-0002 host-0003 host-0004; do
  [[ -d "$work/run/$h" ]] || fail "no node directory for $h"
done

# run_pair SERVER_HOST CLIENT_HOST TEST ARGS...: validated, client JSON in $client_out.
run_pair() {
  local server=$1 client=$2 test=$3
  shift 3
  local oob="unix:$work/oob-$server-$client.sock"
  "${tied[@]}" "$perf" "$test" "$@" --run-dir "$work/run/$server" --oob "$oob" --timeout 20 \
    --validate >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  local client_rc=0
  "$perf" "$test" "$@" --run-dir "$work/run/$client" --oob "$oob" --connect --timeout 20 \
    --validate --json >"$work/client.out" 2>"$work/client.err" || client_rc=$?
  local server_rc=0
  wait "$server_pid" || server_rc=$?
  server_pid=""
  [[ $client_rc -eq 0 && $server_rc -eq 0 ]] ||
    fail "$test $server<-$client: exits $server_rc/$client_rc: $(cat "$work/client.err" "$work/server.err")"
  client_out=$(cat "$work/client.out")
}
json() { /usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$1" "$2"; }

# Across the spine: three switches on the path.
run_pair host-0003 host-0001 send_lat -s 8 -n 500
[[ $(json "$client_out" "d['results'][0]['iterations']") -eq 500 ]] || fail "send_lat rows: $client_out"
run_pair host-0004 host-0002 write_bw -s 65536 -n 200 -t 16
[[ $(json "$client_out" "d['results'][0]['bytes']") -eq 65536 ]] || fail "write_bw rows: $client_out"
# Behind one leaf.
run_pair host-0002 host-0001 read_lat -s 4096 -n 200
[[ $(json "$client_out" "d['results'][0]['iterations']") -eq 200 ]] || fail "read_lat rows: $client_out"
echo "PASS: fabric default: 3 switches, 4 nodes; send_lat, write_bw and read_lat validated across it"

#!/usr/bin/env bash
# IPoIB LBFO (issue 18, label ipoib): softibd --fabric lbfo_dual_port.net (the default fabric
# with port 2 of host-0002 cabled to the other leaf) --sm internal; on host-0002 one interface
# over ports 1 and 2 (active-standby, failback on), on host-0004 a plain one. While
# host-0004 pings host-0002 (-i 0.05 -c 200, 10 s), host-0002's port-1 cable goes down
# (`softib fabric down host-0002:1`): the interface moves to port 2 and announces itself
# (gratuitous ARP), then the cable comes back and it moves back to port 1 (failback).
# Asserted: `show` says port 2 active after the down and port 1 active again after the up
# (2 moves), and at most kMaxLost = 10 of the 200 replies are lost (0.5 s of pings; the
# cable down to the peer's ARP update takes one SA-free step, measured loss is printed).
#   ipoib_lbfo_test.sh SOFTIBD SOFTIB TOPOLOGY
set -euo pipefail
softibd=$1
softib=$2
topology=$3
max_lost=10
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-lbfo.XXXXXX)
ns_a=sibl-$$-a
ns_b=sibl-$$-b
daemon=""
pinger=""
cleanup() {
  [[ -n "$pinger" ]] && kill "$pinger" 2>/dev/null && wait "$pinger" 2>/dev/null
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
run=$work/run
show() { "$softib" ipoib show --run-dir "$run/host-0002" sibl0; }
fail() {
  echo "FAIL: $*" >&2
  [[ -d "$run" ]] && { show >&2 || true; "$softib" ipoib show --run-dir "$run/host-0004" >&2 || true; }
  exit 1
}
ip netns add "$ns_a"
ip netns add "$ns_b"
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric "$topology" --sm internal --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

"$softib" ipoib up --run-dir "$run/host-0002" --name sibl0 --ports 1,2 --netns "$ns_a" \
  --addr 198.18.0.1/24 >"$work/up-a.out" 2>&1 || fail "up --ports 1,2: $(cat "$work/up-a.out")"
"$softib" ipoib up --run-dir "$run/host-0004" --name sibl1 --netns "$ns_b" \
  --addr 198.18.0.2/24 >"$work/up-b.out" 2>&1 || fail "up host-0004: $(cat "$work/up-b.out")"
wait_for() {  # SECONDS CMD...: until CMD succeeds (polled every 0.1 s)
  local tries=$(($1 * 10))
  shift
  for _ in $(seq "$tries"); do "$@" && return 0; sleep 0.1; done
  return 1
}
lbfo_port() {  # PORT STATE: show says port PORT has STATE (e.g. "carrier up active")
  show | grep -qE "^    port $1 $2"
}
wait_for 10 lbfo_port 1 "carrier up active" || fail "port 1 never active"
wait_for 10 lbfo_port 2 "carrier up standby" || fail "port 2 never a standby with carrier"
wait_for 10 bash -c "ip -n $ns_b -o link show dev sibl1 | grep -q LOWER_UP" || fail "no carrier on host-0004"
moves() { show | sed -nE 's/^  lbfo active-standby failback on moves ([0-9]+)$/\1/p'; }
moves0=$(moves)  # 0, or 1 when port 2's join was answered first (the team then went to port 1)
[[ -n "$moves0" ]] || fail "show: lbfo line"

received() {  # FILE: the replies a ping's output says it got
  sed -nE 's/.* ([0-9]+) received.*/\1/p' "$1"
}
ip netns exec "$ns_b" ping -c 3 -i 0.2 -W 2 198.18.0.1 >"$work/warm.out" 2>&1 || true
[[ $(received "$work/warm.out") == 3 ]] || fail "warm-up ping: $(cat "$work/warm.out")"

ip netns exec "$ns_b" ping -i 0.05 -c 200 -W 1 198.18.0.1 >"$work/ping.out" 2>&1 &
pinger=$!
sleep 2  # traffic flowing before the flap (not a handshake: the ping's own pace)
"$softib" fabric --run-dir "$run" down host-0002:1 >/dev/null || fail "fabric down"
wait_for 5 lbfo_port 2 "carrier up active" || fail "no failover to port 2"
echo "failover: port 2 active"
sleep 2
"$softib" fabric --run-dir "$run" up host-0002:1 >/dev/null || fail "fabric up"
wait_for 8 lbfo_port 1 "carrier up active" || fail "no failback to port 1"
echo "failback: port 1 active"
wait "$pinger" || true
pinger=""
show | tee "$work/show.out"
grep -qE "^  lbfo active-standby failback on moves $((moves0 + 2))$" "$work/show.out" ||
  fail "show: 2 moves"
got=$(received "$work/ping.out")
[[ -n "$got" ]] || fail "ping: $(tail -3 "$work/ping.out")"
lost=$((200 - got))
echo "ping -i 0.05 -c 200 across a failover and a failback: $got replies, $lost lost (at most $max_lost)"
((lost <= max_lost)) || fail "$lost replies lost"

kill -TERM "$daemon"
wait "$daemon" || fail "softibd exited $?"
daemon=""
echo PASS

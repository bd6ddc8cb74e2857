#!/usr/bin/env bash
# IPoIB LBFO (issue 18, label ipoib): softibd --fabric lbfo_dual_port.net (the default fabric
# with port 2 of host-0002 cabled to the other leaf: one subnet, both ports reach every host)
# --sm internal; on host-0002 one interface over ports 1 and 2 (failback on) in MODE
# (active-standby or balance), on host-0004 a plain one.
# balance only — flows spread: 32 UDP datagrams to 32 ports of host-0004 (32 flows) leave
#    through both ports: `show`'s per-port tx counts both grow, by 32 together at least.
# both — while host-0004 pings host-0002 (-i 0.05 -c 200, 10 s), host-0002's port-1 cable goes
#    down (`softib fabric down host-0002:1`): every flow moves to port 2 and the interface
#    announces its new hardware address (gratuitous ARP); the cable comes back and the team
#    fails back to port 1. Asserted: `show` says port 2 active after the down and port 1
#    active again after the up (2 moves), and at most kMaxLost = 10 of the 200 replies are
#    lost (0.5 s of pings; the measured loss is printed).
#   ipoib_lbfo_test.sh SOFTIBD SOFTIB TOPOLOGY MODE
set -euo pipefail
softibd=$1
softib=$2
topology=$3
mode=$4
max_lost=10
case "$mode" in
  active-standby) tag=sibl ;;
  balance) tag=siblb ;;
  *) echo "usage: $0 SOFTIBD SOFTIB TOPOLOGY active-standby|balance" >&2; exit 2 ;;
esac
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d "/tmp/softib-ipoib-$tag.XXXXXX")
ns_a=$tag-$$-a
ns_b=$tag-$$-b
if_a=${tag}0
if_b=${tag}1
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
show() { "$softib" ipoib show --run-dir "$run/host-0002" "$if_a"; }
fail() {
  echo "FAIL: $*" >&2
  [[ -d "$run" ]] && { show >&2 || true; "$softib" ipoib show --run-dir "$run/host-0004" >&2 || true; }
  exit 1
}
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric "$topology" --sm internal --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

"$softib" ipoib up --run-dir "$run/host-0002" --name "$if_a" --ports 1,2 --lbfo "$mode" \
  --netns "$ns_a" --addr 198.18.0.1/24 >"$work/up-a.out" 2>&1 ||
  fail "up --ports 1,2 --lbfo $mode: $(cat "$work/up-a.out")"
"$softib" ipoib up --run-dir "$run/host-0004" --name "$if_b" --netns "$ns_b" \
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
port_tx() {  # PORT: the packets show says went out through PORT's member
  show | sed -nE "s/^    port $1 .* tx ([0-9]+) rx [0-9]+$/\1/p"
}
wait_for 10 lbfo_port 1 "carrier up active" || fail "port 1 never active"
wait_for 10 lbfo_port 2 "carrier up standby" || fail "port 2 never a standby with carrier"
wait_for 10 bash -c "ip -n $ns_b -o link show dev $if_b | grep -q LOWER_UP" ||
  fail "no carrier on host-0004"
moves() { show | sed -nE "s/^  lbfo $mode failback on moves ([0-9]+)$/\1/p"; }
moves0=$(moves)  # 0, or 1 when port 2's join was answered first (the team then went to port 1)
[[ -n "$moves0" ]] || fail "show: lbfo line"

received() {  # FILE: the replies a ping's output says it got
  sed -nE 's/.* ([0-9]+) received.*/\1/p' "$1"
}
ip netns exec "$ns_b" ping -c 3 -i 0.2 -W 2 198.18.0.1 >"$work/warm.out" 2>&1 || true
[[ $(received "$work/warm.out") == 3 ]] || fail "warm-up ping: $(cat "$work/warm.out")"

if [[ $mode == balance ]]; then
  # 32 flows from host-0002: UDP to ports 5001..5032 of host-0004 (nobody listens: each
  # datagram is answered by an ICMP port unreachable, which is fine).
  tx1=$(port_tx 1)
  tx2=$(port_tx 2)
  ip netns exec "$ns_a" bash -c 'for p in $(seq 5001 5032); do echo lbfo >/dev/udp/198.18.0.2/$p; done' ||
    fail "UDP flows"
  all_sent() { (($(port_tx 1) - tx1 + $(port_tx 2) - tx2 >= 32)); }
  wait_for 5 all_sent || fail "fewer packets than flows"
  d1=$(($(port_tx 1) - tx1))
  d2=$(($(port_tx 2) - tx2))
  echo "32 UDP flows: port 1 sent $d1, port 2 sent $d2"
  ((d1 > 0 && d2 > 0)) || fail "flows not spread over both ports (port 1 $d1, port 2 $d2)"
fi

ip netns exec "$ns_b" ping -i 0.05 -c 200 -W 1 198.18.0.1 >"$work/ping.out" 2>&1 &
pinger=$!
sleep 2  # traffic flowing before the flap (not a handshake: the ping's own pace)
"$softib" fabric --run-dir "$run" down host-0002:1 >/dev/null || fail "fabric down"
wait_for 5 lbfo_port 2 "carrier up active" || fail "no failover to port 2"
lbfo_port 1 "carrier down standby" || fail "port 1 not down"
echo "failover: port 2 active"
sleep 2
"$softib" fabric --run-dir "$run" up host-0002:1 >/dev/null || fail "fabric up"
wait_for 8 lbfo_port 1 "carrier up active" || fail "no failback to port 1"
echo "failback: port 1 active"
wait "$pinger" || true
pinger=""
show | tee "$work/show.out"
grep -qE "^  lbfo $mode failback on moves $((moves0 + 2))$" "$work/show.out" || fail "show: 2 moves"
got=$(received "$work/ping.out")
[[ -n "$got" ]] || fail "ping: $(tail -3 "$work/ping.out")"
lost=$((200 - got))
echo "$mode: ping -i 0.05 -c 200 across a failover and a failback: $got replies, $lost lost (at most $max_lost)"
((lost <= max_lost)) || fail "$lost replies lost"

kill -TERM "$daemon"
wait "$daemon" || fail "softibd exited $?"
daemon=""
echo PASS

#!/usr/bin/env bash
# IPoIB connected mode (RFC 4755) with unmodified programs (label ipoib): softibd --fabric
# default --sm internal; host-0002 and host-0004 `softib ipoib up --mode connected` in two
# namespaces of this test (sibc-<pid>-a/-b), host-0003 in datagram mode (sibc-<pid>-c) on the
# same link. Checks: MTU 65520 on the connected TAPs, ping -s 60000 both ways (one IPoIB
# packet over the RC connection each way), iperf3 TCP for 1 s, the datagram-mode peer reached
# from a connected host with a 3000-byte ping without DF (fragmented by the driver to the UD MTU)
# and a DF ping over its MTU refused. About 10 s.
#   ipoib_connected_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-connected.XXXXXX)
ns_a=sibc-$$-a
ns_b=sibc-$$-b
ns_c=sibc-$$-c
daemon=""
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  for ns in "$ns_a" "$ns_b" "$ns_c"; do ip netns delete "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for ns in "$ns_a" "$ns_b" "$ns_c"; do ip netns add "$ns"; done
run=$work/run
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm internal --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

up() {  # HOST NS ADDR MODE
  "$softib" ipoib up --run-dir "$run/$1" --name sibc0 --netns "$2" --addr "$3" --mode "$4" \
    >"$work/up-$1.out" 2>&1 || fail "softib ipoib up $1: $(cat "$work/up-$1.out")"
}
up host-0002 "$ns_a" 198.18.0.1/24 connected
up host-0004 "$ns_b" 198.18.0.2/24 connected
up host-0003 "$ns_c" 198.18.0.3/24 datagram
for ns in "$ns_a" "$ns_b" "$ns_c"; do
  for _ in $(seq 100); do
    ip -n "$ns" -o link show dev sibc0 | grep -q LOWER_UP && break
    sleep 0.1
  done
  ip -n "$ns" -o link show dev sibc0 | grep -q LOWER_UP || fail "no carrier in $ns"
done
ip -n "$ns_a" -o link show dev sibc0 | grep -q "mtu 65520" || fail "MTU: $(ip -n "$ns_a" link show dev sibc0)"
ip -n "$ns_b" -o link show dev sibc0 | grep -q "mtu 65520" || fail "MTU: $(ip -n "$ns_b" link show dev sibc0)"
echo "connected: mtu 65520 on both TAPs"

received() {  # NS ARGS...: replies ping ARGS got in NS
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}
[[ $(received "$ns_a" -M do -s 60000 -c 3 -i 0.2 -W 3 198.18.0.2) == 3 ]] || fail "ping -s 60000 a -> b"
[[ $(received "$ns_b" -M do -s 60000 -c 3 -i 0.2 -W 3 198.18.0.1) == 3 ]] || fail "ping -s 60000 b -> a"
echo "ping -s 60000 (DF) both ways: 3/3 replies"
"$softib" ipoib show --run-dir "$run/host-0002" sibc0 >"$work/show.out"
grep -qE "^  mode connected mtu 65520 carrier up" "$work/show.out" || fail "show: $(cat "$work/show.out")"

"${tied[@]}" ip netns exec "$ns_b" iperf3 -s -1 -B 198.18.0.2 --forceflush >"$work/iperf3-server.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "Server listening" "$work/iperf3-server.log" 2>/dev/null && break; sleep 0.05; done
ip netns exec "$ns_a" iperf3 -c 198.18.0.2 -t 1 -J >"$work/iperf3.json" || true
wait "$server" || true
server=""
tcp=$(/usr/bin/python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(int(e["bytes"]), int(e["bits_per_second"]))' "$work/iperf3.json") ||
  fail "iperf3 TCP: $(cat "$work/iperf3.json")"
read -r tcp_bytes tcp_bps <<<"$tcp"
[[ $tcp_bytes -gt 0 ]] || fail "iperf3 TCP moved nothing"
echo "iperf3 TCP (connected, 1 s): $tcp_bytes bytes, $((tcp_bps / 1000000)) Mbit/s"

# The datagram-mode peer: fragments over UD, DF over its MTU answered "frag needed".
[[ $(received "$ns_a" -M dont -s 3000 -c 3 -i 0.2 -W 3 198.18.0.3) == 3 ]] || fail "ping -s 3000 a -> c (UD)"
[[ $(received "$ns_c" -c 2 -i 0.2 -W 3 198.18.0.1) == 2 ]] || fail "ping c -> a"
echo "datagram-mode peer: ping -s 3000 3/3 (fragmented), back 2/2"
out=$(ip netns exec "$ns_a" ping -M do -s 5000 -c 2 -i 0.3 -W 2 198.18.0.3 2>&1) && fail "DF 5000 to UD passed: $out"
echo "DF 5000 to the datagram peer refused: $(echo "$out" | grep -m1 -oE 'mtu ?[=]? ?[0-9]+|Frag needed[^)]*' || echo "$out" | tail -1)"

kill -TERM "$daemon"
wait "$daemon" || fail "softibd exited $?"
daemon=""
echo PASS

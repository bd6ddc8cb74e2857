#!/usr/bin/env bash
# IPoIB connected mode (RFC 4755) with unmodified programs (label ipoib): softibd --fabric
# default --sm internal; host-0002 and host-0004 `softib ipoib up --mode connected` in two
# namespaces of this test (sibc-<pid>-a/-b), host-0003 in datagram mode (sibc-<pid>-c) on the
# same link. Checks: MTU 65520 on the connected TAPs, ping -s 60000 both ways (one IPoIB
# packet over the RC connection each way), iperf3 TCP for 1 s, the datagram-mode peer reached
# from a connected host with a 3000-byte ping without DF (fragmented by the driver to the UD MTU)
# and a DF ping over its MTU refused; host-0002's cable captured while the connections form:
# tshark decodes the CM REQ (ServiceID 0x1000000000000000 | host-0004's UD QPN), REP and RTU,
# no malformed packet. About 12 s.
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
for ns in "$ns_a" "$ns_b" "$ns_c"; do tied_netns_add "$ns"; done
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
  for _ in $(seq 300); do
    ip -n "$ns" -o link show dev sibc0 | grep -q LOWER_UP && break
    sleep 0.1
  done
  ip -n "$ns" -o link show dev sibc0 | grep -q LOWER_UP || fail "no carrier in $ns"
done
ip -n "$ns_a" -o link show dev sibc0 | grep -q "mtu 65520" || fail "MTU: $(ip -n "$ns_a" link show dev sibc0)"
ip -n "$ns_b" -o link show dev sibc0 | grep -q "mtu 65520" || fail "MTU: $(ip -n "$ns_b" link show dev sibc0)"
echo "connected: mtu 65520 on both TAPs"

# The connection forms on the first unicast: host-0002's cable is captured (ERF) meanwhile.
command -v tshark >/dev/null || fail "tshark missing (scripts/install-deps.sh)"
qpn_b=$("$softib" ipoib show --run-dir "$run/host-0004" sibc0 | grep -m1 -oE 'qpn 0x[0-9a-f]+ C' | cut -d' ' -f2)
[[ -n $qpn_b ]] || fail "host-0004 shows no connected-mode QPN"
erf=$work/host-0002.erf
"$softib" fabric --run-dir "$run" capture host-0002:1 "$erf" >/dev/null || fail "capture host-0002:1"

received() {  # NS ARGS...: replies ping ARGS got in NS
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}
[[ $(received "$ns_a" -M do -s 60000 -c 3 -i 0.2 -W 3 198.18.0.2) == 3 ]] || fail "ping -s 60000 a -> b"
[[ $(received "$ns_b" -M do -s 60000 -c 3 -i 0.2 -W 3 198.18.0.1) == 3 ]] || fail "ping -s 60000 b -> a"
echo "ping -s 60000 (DF) both ways: 3/3 replies"
"$softib" fabric --run-dir "$run" capture-stop host-0002:1 >/dev/null || fail "capture-stop"
# The CM exchange as tshark decodes it (MAD attributes: REQ 0x0010, REP 0x0013, RTU 0x0014):
# host-0002's REQ for host-0004 carries ServiceID 0x1000000000000000 | host-0004's UD QPN.
want_sid=$(printf '0x%016x' $((0x1000000000000000 | qpn_b)))
tshark -r "$erf" -T fields -E separator=/t -E occurrence=f -e infiniband.mad.attributeid \
  -e infiniband.cm.req.serviceid >"$work/cm" 2>"$work/tshark.err" || fail "tshark: $(cat "$work/tshark.err")"
cm=$(/usr/bin/python3 - "$work/cm" "$want_sid" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") + ["", ""] for line in open(sys.argv[1])]
attr = lambda r: int(r[0], 16) if r[0] else -1
sid = lambda r: int(r[1], 16) if r[1] else -1
req = sum(attr(r) == 0x10 and sid(r) == int(sys.argv[2], 16) for r in rows)
print(req, sum(attr(r) == 0x13 for r in rows), sum(attr(r) == 0x14 for r in rows))
PY
)
read -r cm_req cm_rep cm_rtu <<<"$cm"
# tshark does not reassemble an RC SEND: the first packet (BTH opcode 0) of a 60028-byte
# IPoIB message decodes as a truncated IPv4 datagram. Every other packet must decode cleanly.
bad='(_ws.malformed || _ws.expert.severity == error) && infiniband.bth.opcode != 0'
first=$(tshark -r "$erf" -Y "infiniband.bth.opcode == 0" 2>>"$work/tshark.err" | wc -l)
malformed=$(tshark -r "$erf" -Y "$bad" 2>>"$work/tshark.err" | wc -l)
echo "tshark: CM REQ ServiceID $want_sid $cm_req, REP $cm_rep, RTU $cm_rtu; RC SEND First $first (not reassembled); malformed otherwise $malformed"
[[ $cm_req -ge 1 && $cm_rep -ge 1 && $cm_rtu -ge 1 ]] || fail "CM exchange not seen: $(sort "$work/cm" | uniq -c)"
[[ $malformed == 0 ]] || fail "$malformed malformed: $(tshark -r "$erf" -Y "$bad" 2>&1 | head)"
"$softib" ipoib show --run-dir "$run/host-0002" sibc0 >"$work/show.out"
grep -qE "^  mode connected mtu 65520 carrier up" "$work/show.out" || fail "show: $(cat "$work/show.out")"

"${tied[@]}" ip netns exec "$ns_b" iperf3 -s -1 -B 198.18.0.2 --forceflush >"$work/iperf3-server.log" 2>&1 &
server=$!
for _ in $(seq 300); do grep -q "Server listening" "$work/iperf3-server.log" 2>/dev/null && break; sleep 0.05; done
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

#!/usr/bin/env bash
# IPoIB end to end with unmodified programs (label ipoib): softibd --fabric default --sm
# internal (the SM and SA inside softibd on host-0001's port: the broadcast group needs an
# SA), `softib ipoib up` on host-0002 and host-0004 (across leaf, spine, leaf) into two
# namespaces of this test's own (sibi-<pid>-a/-b, removed at the end), then: ping both ways
# (replies counted), DF ping at 2044 - 28 bytes passes and one byte more is refused, IPv6
# ping, iperf3 TCP -P 4 and UDP for ~1 s each, `ip -s link` counters non-zero, `softib ipoib
# show` lists the neighbour, `down` removes the interface, SIGTERM leaves no TAP.
#   ipoib_fabric_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-fabric.XXXXXX)
ns_a=sibi-$$-a
ns_b=sibi-$$-b
daemon=""
server=""
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
run=$work/run
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm internal --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

if ! "$softib" ipoib up --run-dir "$run/host-0002" --name sibi0 --netns "$ns_a" \
  --addr 198.18.0.1/24 --addr fd00:5b18::1/64 >"$work/up-a.out" 2>"$work/up-a.err"; then
  fail "softib ipoib up host-0002: $(cat "$work/up-a.err")"
fi
cat "$work/up-a.out"
"$softib" ipoib up --run-dir "$run/host-0004" --name sibi0 --netns "$ns_b" \
  --addr 198.18.0.2/24 --addr fd00:5b18::2/64 || fail "softib ipoib up host-0004"

# The carrier comes up once the broadcast group is joined (bounded wait).
for ns in "$ns_a" "$ns_b"; do
  for _ in $(seq 300); do
    ip -n "$ns" -o link show dev sibi0 | grep -q LOWER_UP && break
    sleep 0.1
  done
  ip -n "$ns" -o link show dev sibi0 | grep -q LOWER_UP || fail "no carrier in $ns: $(ip -n "$ns" link show dev sibi0)"
done
ip -n "$ns_a" -o link show dev sibi0 | grep -q "mtu 2044" || fail "MTU: $(ip -n "$ns_a" link show dev sibi0)"

received() {  # NS ARGS...: replies ping ARGS got in NS
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}
[[ $(received "$ns_a" -c 5 -i 0.2 -W 2 198.18.0.2) == 5 ]] || fail "ping host-0002 -> host-0004"
[[ $(received "$ns_b" -c 5 -i 0.2 -W 2 198.18.0.1) == 5 ]] || fail "ping host-0004 -> host-0002"
echo "ping both ways: 5/5 replies"
[[ $(received "$ns_a" -M do -s 2016 -c 2 -W 2 198.18.0.2) == 2 ]] || fail "DF ping of 2016 bytes"
out=$(ip netns exec "$ns_a" ping -M do -s 2017 -c 1 -W 2 198.18.0.2 2>&1) && fail "DF ping of 2017 bytes passed: $out"
echo "DF: 2016 bytes pass, 2017 refused"
[[ $(received "$ns_a" -6 -c 3 -i 0.2 -W 2 fd00:5b18::2) == 3 ]] || fail "IPv6 ping"
echo "IPv6 ping: 3/3 replies"

iperf3_run() {  # ARGS...: iperf3 from $ns_a to $ns_b's server; JSON in $work/iperf3.json
  rm -f "$work/iperf3-server.log"
  "${tied[@]}" ip netns exec "$ns_b" iperf3 -s -1 -B 198.18.0.2 --forceflush \
    >"$work/iperf3-server.log" 2>&1 &
  server=$!
  for _ in $(seq 300); do grep -q "Server listening" "$work/iperf3-server.log" 2>/dev/null && break; sleep 0.05; done
  ip netns exec "$ns_a" iperf3 -c 198.18.0.2 -t 1 -J "$@" >"$work/iperf3.json" || true
  wait "$server" || true
  server=""
}
iperf3_run -P 4
tcp=$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"]))' "$work/iperf3.json") ||
  fail "iperf3 TCP: $(cat "$work/iperf3.json")"
[[ $tcp -gt 0 ]] || fail "iperf3 TCP -P 4 moved nothing"
echo "iperf3 TCP -P 4: $tcp bytes received"
iperf3_run -u -b 50M
udp=$(/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["end"]["sum"]; print(int(s["packets"]) - int(s["lost_packets"]))' "$work/iperf3.json") ||
  fail "iperf3 UDP: $(cat "$work/iperf3.json")"
[[ $udp -gt 0 ]] || fail "iperf3 UDP: no datagram arrived"
echo "iperf3 UDP: $udp datagrams arrived"

stats=$(ip -n "$ns_a" -s -o link show dev sibi0)
rx=$(ip -n "$ns_a" -s -j link show dev sibi0 | /usr/bin/python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["stats64"]; print(s["rx"]["packets"], s["tx"]["packets"])')
read -r rx_packets tx_packets <<<"$rx"
[[ $rx_packets -gt 0 && $tx_packets -gt 0 ]] || fail "ip -s link: $stats"
echo "ip -s link: rx $rx_packets tx $tx_packets packets"
# The bytes took softib's path, not the host kernel's: host-0002's driver posted at least
# what iperf3 moved (its TCP payload plus the UDP datagrams' bytes) on its UD QP, and
# host-0004's driver received as much from the fabric.
driver_bytes() {  # HOST tx|rx: the driver's byte counter from `softib ipoib show`
  "$softib" ipoib show --run-dir "$run/$1" sibi0 |
    sed -nE "s/.* $2 [0-9]+ packets ([0-9]+) bytes.*/\1/p; s/^  $2 [0-9]+ packets ([0-9]+) bytes.*/\1/p" | head -n1
}
sent=$(driver_bytes host-0002 tx)
got=$(driver_bytes host-0004 rx)
[[ -n $sent && -n $got && $sent -ge $tcp && $got -ge $tcp ]] ||
  fail "driver counters: host-0002 tx ${sent:-?} bytes, host-0004 rx ${got:-?} bytes < iperf3's $tcp"
echo "driver counters: host-0002 sent $sent bytes, host-0004 received $got bytes over IPoIB (iperf3 TCP $tcp)"
"$softib" ipoib show --run-dir "$run/host-0002" sibi0 | tee "$work/show.out"
grep -qE "^  neighbours [1-9]" "$work/show.out" || fail "show lists no neighbour"
grep -qE "^  mode datagram mtu 2044 carrier up" "$work/show.out" || fail "show: mode/mtu/carrier"

"$softib" ipoib down --run-dir "$run/host-0004" sibi0 || fail "down"
ip -n "$ns_b" link show dev sibi0 >/dev/null 2>&1 && fail "sibi0 still in $ns_b after down"
kill -TERM "$daemon"
wait "$daemon" || fail "softibd exited $?"
daemon=""
ip -n "$ns_a" link show dev sibi0 >/dev/null 2>&1 && fail "sibi0 still in $ns_a after softibd stopped"
echo PASS

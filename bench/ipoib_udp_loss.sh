#!/usr/bin/env bash
# IPoIB UD under a UDP flood (issue 18, udflow): iperf3 -u -b RATE (default 0) from host-0002 (198.18.0.1)
# to host-0004 (198.18.0.2) over `softib ipoib up` in datagram mode (MTU 2044) on softibd
# --fabric default --sm internal, for SECONDS; prints the loss iperf3's server saw, what the
# client sent, the sending TAP's TX drops and both drivers' counters (`softib ipoib show`).
#   ipoib_udp_loss.sh SOFTIBD SOFTIB [SECONDS] [LENGTH] [RATE]   (RATE: iperf3 -b, default 0: unlimited)
# Root (TAP devices, namespaces sibi-<pid>-a/-b; addresses from 198.18.0.0/15 only inside them).
softibd=$1
softib=$2
seconds=${3:-3}
length=${4:-2016}
rate=${5:-0}
# shellcheck source=../tests/ipoib/ipoib_two_hosts.sh
source "$(dirname "$0")/../tests/ipoib/ipoib_two_hosts.sh"
command -v iperf3 >/dev/null || fail "iperf3 missing (scripts/install-deps.sh)"
two_hosts_up
for _ in $(seq 100); do
  ip netns exec "$ns_a" ping -c 1 -W 1 198.18.0.2 >/dev/null 2>&1 && break
done
iperf3_run -u -b "$rate" -l "$length" -t "$seconds" || fail "iperf3: $(cat "$work/iperf3.json")"
[[ -n "${KEEP_JSON:-}" ]] && cp "$work/iperf3.json" "$KEEP_JSON"
tap_dropped=$(ip -n "$ns_a" -s -j link show dev sibi0 |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["dropped"])')
sent=$(json_get "$work/iperf3.json" 'd["end"]["sum"]["packets"]')
lost=$(json_get "$work/iperf3.json" 'd["end"]["sum"]["lost_packets"]')
percent=$(json_get "$work/iperf3.json" '"%.2f" % d["end"]["sum"]["lost_percent"]')
gbps=$(json_get "$work/iperf3.json" '"%.3f" % (d["end"]["sum"]["bits_per_second"] / 1e9)')
echo "iperf3 -u -b $rate -l $length -t $seconds: $sent datagrams, $lost lost ($percent %), $gbps Gbit/s; the sender's TAP dropped $tap_dropped (ip -s link TX dropped)"
for host in host-0002 host-0004; do
  echo "--- $host"
  "$softib" ipoib show --run-dir "$run/$host" sibi0 | grep -E '^  (tx|drops|tap|hca)'
done

#!/usr/bin/env bash
# Bad input from the Ethernet face (label ipoib): into host-0002's interface (its namespace)
# a raw socket writes runt IPv4 frames, frames of an unknown ethertype and ARP requests
# whose sender MAC is not the interface's (forged); with the TAP's MTU raised past the
# link's, a 3000-byte ping is an oversize frame. `softib ipoib show` counts each by cause,
# exactly; the interface still pings both ways afterwards.
#   ipoib_bad_input_test.sh SOFTIBD SOFTIB
softibd=$1
softib=$2
source "$(dirname "$0")/ipoib_two_hosts.sh"
two_hosts_up
[[ $(received "$ns_a" -c 1 -w 15 198.18.0.2) == 1 ]] || fail "ping before"
host=$run/host-0002
declare -A before
for cause in runt oversize unknown_ethertype bad_arp; do
  before[$cause]=$(ipoib_counter "$host" "$cause")
done
own_mac=$(ip netns exec "$ns_a" cat /sys/class/net/sibi0/address)
ip netns exec "$ns_a" /usr/bin/python3 "$(dirname "$0")/inject_frames.py" sibi0 "$own_mac" 5 runt ethertype arp ||
  fail "inject_frames.py"
ip -n "$ns_a" link set sibi0 mtu 4000
ip netns exec "$ns_a" ping -c 2 -i 0.2 -W 1 -s 3000 198.18.0.2 >/dev/null 2>&1 && fail "a 3000-byte ping crossed a 2044 link"
ip -n "$ns_a" link set sibi0 mtu 2044
# The frames reach the driver from the TAP's reader thread: until the counters show them.
want() { echo $((before[$1] + $2)); }
for _ in $(seq 300); do
  [[ $(ipoib_counter "$host" bad_arp) -ge $(want bad_arp 5) && $(ipoib_counter "$host" oversize) -ge $(want oversize 2) ]] && break
  sleep 0.05
done
"$softib" ipoib show --run-dir "$host" sibi0 | grep -E "^  drops"
for pair in runt:5 unknown_ethertype:5 bad_arp:5 oversize:2; do
  cause=${pair%%:*}
  got=$(ipoib_counter "$host" "$cause")
  [[ $got == $(want "$cause" "${pair#*:}") ]] || fail "$cause: $got, expected $(want "$cause" "${pair#*:}")"
done
[[ $(received "$ns_a" -c 3 -i 0.2 -W 2 198.18.0.2) == 3 ]] || fail "ping host-0002 -> host-0004 after"
[[ $(received "$ns_b" -c 3 -i 0.2 -W 2 198.18.0.1) == 3 ]] || fail "ping host-0004 -> host-0002 after"
echo "ping both ways after: 3/3"
echo PASS

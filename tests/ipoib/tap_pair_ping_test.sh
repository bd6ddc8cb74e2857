#!/usr/bin/env bash
# The TAP-pair floor's link as a test (label ipoib): softib_tap_pair joins two TAP faces in
# two namespaces of this test's own (sibt-<pid>-a/-b, removed at the end); ping both ways
# (every reply counted), the largest DF datagram of the 2044 MTU passes and one byte more
# is refused, IPv6 ping; the forwarder's counters saw the traffic.
#   tap_pair_ping_test.sh SOFTIB_TAP_PAIR
set -euo pipefail
tap_pair=$1
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-tap-pair.XXXXXX)
ns_a=sibt-$$-a
ns_b=sibt-$$-b
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"

mkfifo "$work/ready"
"${tied[@]}" "$tap_pair" --netns "$ns_a,$ns_b" --addr 198.18.0.1/24,198.18.0.2/24 --mtu 2044 \
  --name-prefix "sibt$(($$ % 10000))" --ready-fd 3 3>"$work/ready" >"$work/tap_pair.log" 2>&1 &
pid=$!
timeout 10 head -n1 "$work/ready" | grep -q ready || fail "softib_tap_pair: $(cat "$work/tap_pair.log")"
name_a=sibt$(($$ % 10000))a
name_b=sibt$(($$ % 10000))b
ip -n "$ns_a" address add fd00:5b18::1/64 dev "$name_a" nodad
ip -n "$ns_b" address add fd00:5b18::2/64 dev "$name_b" nodad

# received NS ARGS...: the number of replies `ping ARGS` got in NS.
received() {
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}
[[ $(received "$ns_a" -c 5 -i 0.2 -W 2 198.18.0.2) == 5 ]] || fail "ping a -> b"
[[ $(received "$ns_b" -c 5 -i 0.2 -W 2 198.18.0.1) == 5 ]] || fail "ping b -> a"
echo "ping both ways: 5/5 replies"
# 2044 - 20 (IPv4) - 8 (ICMP) = 2016 bytes of data: the largest unfragmented datagram.
[[ $(received "$ns_a" -M do -s 2016 -c 2 -W 2 198.18.0.2) == 2 ]] || fail "DF ping of 2016 bytes"
out=$(ip netns exec "$ns_a" ping -M do -s 2017 -c 1 -W 2 198.18.0.2 2>&1) && fail "DF ping of 2017 bytes passed: $out"
grep -qi "message too long\|mtu = 2044\|mtu=2044" <<<"$out" || fail "DF ping of 2017 bytes: $out"
echo "DF: 2016 bytes pass, 2017 refused (mtu 2044)"
[[ $(received "$ns_a" -6 -c 3 -i 0.2 -W 2 fd00:5b18::2) == 3 ]] || fail "IPv6 ping a -> b"
echo "IPv6 ping: 3/3 replies"

kill -TERM "$pid"
wait "$pid" || fail "softib_tap_pair exited $?"
pid=""
cat "$work/tap_pair.log"
# Each TAP handed the other at least the 5 + 5 + 2 + 3 echoes of its side.
for name in "$name_a" "$name_b"; do
  frames=$(sed -nE "s/.*: $name: from host ([0-9]+) frames.*/\1/p" "$work/tap_pair.log")
  [[ -n "$frames" && $frames -ge 15 ]] || fail "$name forwarded ${frames:-no} frames"
done
echo "PASS"

#!/usr/bin/env bash
# DHCP over IPoIB (RFC 4390) with programs nobody here wrote (label ipoib): softibd --fabric
# default --sm internal, `softib ipoib up` on host-0002 (198.18.0.1/24, dnsmasq as the DHCP
# server bound to its interface, its own pid and lease files) and host-0004 (no address:
# busybox udhcpc -C, which sends no client identifier of its own) in two namespaces of this
# test (sibd-<pid>-a/-b). udhcpc gets a lease from 198.18.0.50-60 and applies it; dnsmasq's
# lease file shows the client identifier the driver added: ff, IAID = P_Key 0000ffff, DUID-LL
# (type 3, hardware type 32) with host-0004's port GUID; ping from the server reaches the
# leased address. The host's stack announces the lease and the driver learns it (softibd's
# address watch): `softib ibat ips` on host-0004 lists the leased address with its GID, and
# `softib ibat resolve` from host-0002 finds host-0004 by it. About 6 s.
#   ipoib_dhcp_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
command -v dnsmasq >/dev/null || { echo "dnsmasq missing (scripts/install-deps.sh)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-dhcp.XXXXXX)
ns_a=sibd-$$-a
ns_b=sibd-$$-b
daemon=""
dhcpd=""
cleanup() {
  [[ -n "$dhcpd" ]] && kill "$dhcpd" 2>/dev/null && wait "$dhcpd" 2>/dev/null
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in dnsmasq.log udhcpc.log; do [[ -f $work/$f ]] && { echo "--- $f"; cat "$work/$f"; } >&2; done
  exit 1
}
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
run=$work/run
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm internal --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"
"$softib" ipoib up --run-dir "$run/host-0002" --name sibd0 --netns "$ns_a" \
  --addr 198.18.0.1/24 >/dev/null || fail "softib ipoib up host-0002"
"$softib" ipoib up --run-dir "$run/host-0004" --name sibd0 --netns "$ns_b" >/dev/null ||
  fail "softib ipoib up host-0004"
ip -n "$ns_b" link set dev sibd0 up
for ns in "$ns_a" "$ns_b"; do
  for _ in $(seq 300); do
    ip -n "$ns" -o link show dev sibd0 | grep -q LOWER_UP && break
    sleep 0.1
  done
  ip -n "$ns" -o link show dev sibd0 | grep -q LOWER_UP || fail "no carrier in $ns"
done

# host-0004's port GUID: the interface ID of the GID `show` prints first (its own).
gid=$("$softib" ipoib show --run-dir "$run/host-0004" sibd0 | grep -oE 'gid [0-9a-f:]{39}' | head -n1)
[[ -n "$gid" ]] || fail "no GID in show"
guid=$(echo "${gid#gid }" | cut -d: -f5-8 | tr -d : | sed -E 's/(..)/\1:/g; s/:$//')
want_id="ff:00:00:ff:ff:00:03:00:20:$guid"

"${tied[@]}" ip netns exec "$ns_a" dnsmasq --no-daemon --conf-file=/dev/null --port=0 \
  --user=root --group=root --interface=sibd0 --bind-interfaces --no-ping --log-dhcp \
  --dhcp-range=198.18.0.50,198.18.0.60,255.255.255.0,1h --dhcp-leasefile="$work/leases" \
  --pid-file="$work/dnsmasq.pid" >"$work/dnsmasq.log" 2>&1 &
dhcpd=$!
for _ in $(seq 300); do grep -q "DHCP, IP range" "$work/dnsmasq.log" 2>/dev/null && break; sleep 0.05; done
grep -q "DHCP, IP range" "$work/dnsmasq.log" || fail "dnsmasq did not start"

cat >"$work/udhcpc.script" <<'SCRIPT'
#!/bin/sh
# udhcpc's hook: apply the lease (bound/renew) and note it.
case "$1" in
  bound|renew)
    ip addr add "$ip/$mask" dev "$interface" || echo "ip addr add $ip/$mask dev $interface failed"
    echo "$ip/$mask" >"$(dirname "$0")/leased"
    ;;
esac
exit 0
SCRIPT
chmod +x "$work/udhcpc.script"
ip netns exec "$ns_b" timeout 20 busybox udhcpc -f -q -n -C -t 5 -T 1 -i sibd0 \
  -s "$work/udhcpc.script" >"$work/udhcpc.log" 2>&1 || fail "udhcpc got no lease"
leased=$(cat "$work/leased")
addr=${leased%/*}
[[ $leased =~ ^198\.18\.0\.(5[0-9]|60)/24$ ]] || fail "lease $leased outside the range"
ip -n "$ns_b" -o addr show dev sibd0 | grep -q "inet $leased" || fail "address not applied: $(ip -n "$ns_b" -o addr show dev sibd0; cat "$work/udhcpc.log")"
echo "udhcpc: leased $leased"

# dnsmasq writes the lease file when it acknowledges: the client identifier column.
line=$(grep " $addr " "$work/leases") || fail "no lease for $addr in $(cat "$work/leases")"
echo "lease: $line"
[[ $(echo "$line" | awk '{print $5}') == "$want_id" ]] ||
  fail "client identifier $(echo "$line" | awk '{print $5}'), expected $want_id"
replies=$(ip netns exec "$ns_a" ping -c 3 -i 0.2 -W 2 "$addr" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p')
[[ $replies == 3 ]] || fail "ping to the leased $addr: $replies/3"
echo "ping $addr: 3/3 replies"

# The lease reached the driver: IBAT lists it (bounded wait: the announcement is async).
for _ in $(seq 100); do
  "$softib" ibat ips --run-dir "$run/host-0004" >"$work/ips.out" 2>&1 || true
  grep -q "^$addr ${gid} " "$work/ips.out" && break
  sleep 0.05
done
grep -q "^$addr ${gid} " "$work/ips.out" || fail "ibat ips on host-0004 lacks $addr (${gid}): $(cat "$work/ips.out")"
"$softib" ibat resolve --run-dir "$run/host-0002" "$addr" >"$work/resolve.out" 2>&1 ||
  fail "ibat resolve $addr: $(cat "$work/resolve.out")"
grep -q "dgid ${gid#gid }" "$work/resolve.out" || fail "ibat resolve $addr: not host-0004's ${gid}: $(cat "$work/resolve.out")"
echo "ibat: $addr is host-0004's ${gid}"
echo PASS

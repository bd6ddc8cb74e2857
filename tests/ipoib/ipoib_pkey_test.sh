#!/usr/bin/env bash
# IPoIB P_Key child interfaces (issue 18, label ipoib): softibd --fabric default --sm internal
# --sm-partitions FILE, whose partition 0x0001 (P_Key 0x8001 as full members) holds host-0002
# and host-0004 only. On each of the two, `softib ipoib up` makes the default interface and,
# beside it on the same port, a child with --pkey 0x8001 (own QP at the P_Key's index, own
# broadcast group ff12:401b:8001::ffff:ffff, own TAP), each in a namespace of its own. Then:
# ping over both pairs; `show` of a child names its P_Key and group; host-0003, outside the
# partition: `up --pkey 0x8001` is refused (its P_Key table lacks the key: INVALID_PKEY), and
# its default interface, addressed in the child's subnet, gets no reply (0 of 3: its ARP
# goes to partition 0xffff's broadcast group, which the children are not in).
#   ipoib_pkey_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
work=$(mktemp -d /tmp/softib-ipoib-pkey.XXXXXX)
namespaces=(sibk-$$-a sibk-$$-b sibk-$$-c sibk-$$-d sibk-$$-e)
daemon=""
cleanup() {
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  for ns in "${namespaces[@]}"; do ip netns delete "$ns" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -d "$work/run" ]] && for h in host-0002 host-0004; do "$softib" ipoib show --run-dir "$work/run/$h" >&2 || true; done
  exit 1
}
for ns in "${namespaces[@]}"; do tied_netns_add "$ns"; done
ns_a=${namespaces[0]} ns_b=${namespaces[1]} ns_c=${namespaces[2]} ns_d=${namespaces[3]} ns_e=${namespaces[4]}
cat >"$work/partitions.conf" <<'CONF'
# the default partition, and 0x0001 with host-0002 and host-0004 (port 1 GUIDs) as full members
Default=0x7fff,ipoib : ALL=full ;
Lab=0x0001,ipoib : 0x0002c90300a00021=full, 0x0002c90300a00041=full ;
CONF
run=$work/run
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm internal \
  --sm-partitions "$work/partitions.conf" --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

up() {  # HOST NAME NS ADDR [ARGS...]
  local host=$1 name=$2 ns=$3 addr=$4
  shift 4
  "$softib" ipoib up --run-dir "$run/$host" --name "$name" --netns "$ns" --addr "$addr" "$@" \
    >"$work/up-$host-$name.out" 2>&1 || fail "up $host $name: $(cat "$work/up-$host-$name.out")"
}
# The SM's first sweep may still be writing the P_Key tables: the child's up retries while
# the port's table lacks 0x8001 (bounded).
up_child() {  # HOST NS ADDR
  for _ in $(seq 50); do
    if "$softib" ipoib up --run-dir "$run/$1" --name sibk1 --netns "$2" --addr "$3" --pkey 0x8001 \
      >"$work/up-$1-child.out" 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  fail "up --pkey 0x8001 on $1: $(cat "$work/up-$1-child.out")"
}
up host-0002 sibk0 "$ns_a" 198.18.0.1/24
up host-0004 sibk0 "$ns_b" 198.18.0.2/24
up_child host-0002 "$ns_c" 198.18.1.1/24
up_child host-0004 "$ns_d" 198.18.1.2/24
up host-0003 sibk0 "$ns_e" 198.18.1.3/24

wait_carrier() {  # NS IF
  for _ in $(seq 300); do
    ip -n "$1" -o link show dev "$2" | grep -q LOWER_UP && return 0
    sleep 0.1
  done
  fail "no carrier on $2 in $1: $(ip -n "$1" link show dev "$2")"
}
wait_carrier "$ns_a" sibk0
wait_carrier "$ns_b" sibk0
wait_carrier "$ns_c" sibk1
wait_carrier "$ns_d" sibk1
wait_carrier "$ns_e" sibk0

received() {  # NS ARGS...: replies ping ARGS got in NS
  local ns=$1
  shift
  ip netns exec "$ns" ping "$@" 2>&1 | sed -nE 's/.* ([0-9]+) received.*/\1/p'
}
[[ $(received "$ns_c" -c 5 -i 0.2 -W 2 198.18.1.2) == 5 ]] || fail "ping over the 0x8001 children"
[[ $(received "$ns_d" -c 3 -i 0.2 -W 2 198.18.1.1) == 3 ]] || fail "ping back over the children"
[[ $(received "$ns_a" -c 3 -i 0.2 -W 2 198.18.0.2) == 3 ]] || fail "ping over the default interfaces"
echo "ping over the P_Key 0x8001 children: 5/5 and 3/3; over the default interfaces beside them: 3/3"

"$softib" ipoib show --run-dir "$run/host-0002" sibk1 >"$work/show-child.out"
cat "$work/show-child.out"
grep -qE "^  mode datagram mtu [0-9]+ carrier up port 1 .* pkey 0x8001$" "$work/show-child.out" ||
  fail "show: the child's P_Key"
grep -q "mgid ff12:401b:8001:0000:0000:0000:ffff:ffff .* full" "$work/show-child.out" ||
  fail "show: the child's broadcast group"
"$softib" ipoib show --run-dir "$run/host-0002" sibk0 >"$work/show-default.out"
grep -q "pkey 0xffff$" "$work/show-default.out" || fail "show: the default interface's P_Key"
qpn_child=$(sed -nE 's/^  qpn (0x[0-9a-f]+) .*/\1/p' "$work/show-child.out")
qpn_default=$(sed -nE 's/^  qpn (0x[0-9a-f]+) .*/\1/p' "$work/show-default.out")
[[ -n "$qpn_child" && "$qpn_child" != "$qpn_default" ]] || fail "the child has no QP of its own"

# Outside the partition: no child, and no reply from the children's subnet.
if "$softib" ipoib up --run-dir "$run/host-0003" --name sibk1 --netns "$ns_e" --pkey 0x8001 \
  >"$work/up-outsider.out" 2>&1; then
  fail "host-0003 (outside 0x8001) got a child: $(cat "$work/up-outsider.out")"
fi
grep -q "INVALID_PKEY" "$work/up-outsider.out" || fail "outsider's refusal: $(cat "$work/up-outsider.out")"
echo "host-0003 up --pkey 0x8001: refused ($(head -n1 "$work/up-outsider.out"))"
got=$(received "$ns_e" -c 3 -i 0.2 -W 1 198.18.1.2 || true)
[[ "$got" == 0 ]] || fail "host-0003 reached a 0x8001 child: $got replies"
echo "host-0003 (partition 0xffff only) -> 198.18.1.2: 0/3 replies"

kill -TERM "$daemon"
wait "$daemon" || fail "softibd exited $?"
daemon=""
echo PASS

#!/usr/bin/env bash
# The IPoIB floors (issue 18, "Performance"): iperf3 TCP between two network namespaces over
#   tap_pair  two TAP devices joined by a trivial forwarder (softib_tap_pair: each frame read
#             from one TAP is written to the other, same MTU) — the ceiling of any TAP face;
#   veth      a veth pair (the kernel alone);
#   ipoib     (with SOFTIBD and SOFTIB given) softib ipoib up on two hosts of softibd --fabric
#             default --sm internal --sm-host host-0004: IPoIB UD host-0001 -> host-0002 under
#             one leaf (ipoib_leaf) and host-0002 -> host-0003 across leaf, spine, leaf (ipoib).
#             IPoIB UD (datagram) at 2044, connected mode (RFC 4755, MTU 65520) at 65520,
# at each MTU given (default 2044 65520), same run, and the ratios.
# Every figure must be > 0 (exit 1 otherwise).
#   ipoib_floor.sh TAP_PAIR [SECONDS] [MTUS] [SOFTIBD SOFTIB]
# Namespaces sibf-<pid>-a/-b; addresses from 198.18.0.0/15 only inside them.
set -euo pipefail
tap_pair=$1
seconds=${2:-3}
mtus=${3:-"2044 65520"}
softibd=${4:-}
softib=${5:-}
source "$(dirname "$0")/../tests/support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "ipoib_floor: needs root (TAP devices, namespaces)" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "ipoib_floor: iperf3 missing (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d /tmp/softib-ipoib-floor.XXXXXX)
ns_a=sibf-$$-a
ns_b=sibf-$$-b
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "ipoib_floor: FAIL: $*" >&2; exit 1; }
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
ip -n "$ns_a" link set lo up
ip -n "$ns_b" link set lo up

# iperf3_tcp KEY SERVER_ADDR: result[KEY] = Gbit/s of a TCP run from $ns_a to the server in
# $ns_b. Run by this shell itself, not in a $( ) subshell: "${tied[@]}" ties the server here.
iperf3_tcp() {
  local key=$1 server_addr=$2
  rm -f "$work/iperf3-server.log"
  "${tied[@]}" ip netns exec "$ns_b" iperf3 -s -1 -B "$server_addr" --forceflush \
    >"$work/iperf3-server.log" 2>&1 &
  local server=$!
  for _ in $(seq 100); do grep -q "Server listening" "$work/iperf3-server.log" 2>/dev/null && break; sleep 0.05; done
  ip netns exec "$ns_a" iperf3 -c "$server_addr" -t "$seconds" -J >"$work/iperf3.json" ||
    fail "iperf3 to $server_addr: $(cat "$work/iperf3.json" "$work/iperf3-server.log")"
  wait "$server" || true
  result[$key]=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"] / 1e9))' "$work/iperf3.json") ||
    fail "iperf3 to $server_addr: $(cat "$work/iperf3.json" "$work/iperf3-server.log")"
}

# tap_pair_start MTU: softib_tap_pair between the namespaces (198.18.0.1 / 198.18.0.2).
declare -A result
tap_pid=""
tap_pair_start() {
  rm -f "$work/ready"
  mkfifo "$work/ready"
  "${tied[@]}" "$tap_pair" --netns "$ns_a,$ns_b" --addr 198.18.0.1/24,198.18.0.2/24 --mtu "$1" \
    --name-prefix "sibf$(($$ % 10000))" --ready-fd 3 3>"$work/ready" >"$work/tap_pair.log" 2>&1 &
  tap_pid=$!
  pids+=("$tap_pid")
  timeout 10 head -n1 "$work/ready" | grep -q ready || fail "softib_tap_pair: $(cat "$work/tap_pair.log")"
}
tap_pair_stop() {
  kill -TERM "$tap_pid"
  wait "$tap_pid" || fail "softib_tap_pair exited $?: $(cat "$work/tap_pair.log")"
}

for mtu in $mtus; do
  tap_pair_start "$mtu"
  iperf3_tcp "tap_pair,$mtu" 198.18.0.2
  tap_pair_stop
  ip -n "$ns_a" link add sibva type veth peer name sibvb netns "$ns_b"
  for side in a b; do
    ns=ns_$side
    n=$([[ $side == a ]] && echo 1 || echo 2)
    ip -n "${!ns}" link set sibv$side mtu "$mtu"
    ip -n "${!ns}" address add 198.18.1.$n/24 dev sibv$side
    ip -n "${!ns}" link set sibv$side up
  done
  iperf3_tcp "veth,$mtu" 198.18.1.2
  ip -n "$ns_a" link delete sibva
done

if [[ -n "$softibd" ]]; then
  # IPoIB: the same iperf3 between two hosts of the default fabric (softibd holds the TAPs),
  # the SM on host-0004's port (a light host): host-0001 -> host-0002 under one leaf
  # (ipoib_leaf), then host-0002 -> host-0003 across leaf, spine, leaf (ipoib).
  run=$work/run
  rm -f "$work/ready"
  mkfifo "$work/ready"
  "${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm internal --sm-host host-0004 \
    --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
  pids+=($!)
  timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"
  ipoib_pair() {  # KEY HOST_A HOST_B MODE MTU
    "$softib" ipoib up --run-dir "$run/$2" --name sibi0 --netns "$ns_a" --addr 198.18.2.1/24 \
      --mode "$4" >/dev/null || fail "softib ipoib up $2"
    "$softib" ipoib up --run-dir "$run/$3" --name sibi0 --netns "$ns_b" --addr 198.18.2.2/24 \
      --mode "$4" >/dev/null || fail "softib ipoib up $3"
    for _ in $(seq 100); do
      ip netns exec "$ns_a" ping -c 1 -W 1 198.18.2.2 >/dev/null 2>&1 && break
    done
    iperf3_tcp "$1,$5" 198.18.2.2
    "$softib" ipoib down --run-dir "$run/$2" sibi0 || fail "softib ipoib down $2"
    "$softib" ipoib down --run-dir "$run/$3" sibi0 || fail "softib ipoib down $3"
  }
  for mtu in $mtus; do
    # UD at 2044 (its MTU), connected mode (RFC 4755, MTU 65520) at 65520.
    case $mtu in 2044) mode=datagram ;; 65520) mode=connected ;; *) continue ;; esac
    ipoib_pair ipoib_leaf host-0001 host-0002 "$mode" "$mtu"
    ipoib_pair ipoib host-0002 host-0003 "$mode" "$mtu"
  done
fi

printf '%-10s %6s %12s %12s %12s %12s %10s %10s %10s\n' floor mtu tap_pair_Gb/s veth_Gb/s \
  ipoib_leaf_Gb/s ipoib_Gb/s leaf/tap ipoib/tap ipoib/veth
ratio() { /usr/bin/python3 -c "print('%.2f' % ($1 / $2))"; }
for mtu in $mtus; do
  tap=${result[tap_pair,$mtu]}
  veth=${result[veth,$mtu]}
  leaf=${result[ipoib_leaf,$mtu]:--}
  ib=${result[ipoib,$mtu]:--}
  ratio_leaf=- ratio_tap=- ratio_veth=-
  if [[ $ib != - && $leaf != - ]]; then
    ratio_leaf=$(ratio "$leaf" "$tap")
    ratio_tap=$(ratio "$ib" "$tap")
    ratio_veth=$(ratio "$ib" "$veth")
  fi
  printf '%-10s %6s %12s %12s %12s %12s %10s %10s %10s\n' iperf3-tcp "$mtu" "$tap" "$veth" "$leaf" "$ib" \
    "$ratio_leaf" "$ratio_tap" "$ratio_veth"
  for v in "$tap" "$veth" ${result[ipoib,$mtu]:+"$ib"} ${result[ipoib_leaf,$mtu]:+"$leaf"}; do
    /usr/bin/python3 -c "import sys; sys.exit(0 if $v > 0 else 1)" || fail "a zero figure at MTU $mtu"
  done
done

#!/usr/bin/env bash
# IPoIB across two softibds (label ipoib): the default fabric cut in two (--part 1/2: spine,
# leaf-01, host-0001/2; --part 2/2: leaf-02, host-0003/4) joined by a UDP tunnel on loopback,
# --sm external, softib-sm over host-0001's AL (its SA serves both daemons' hosts); IPoIB on
# host-0002 (daemon A) and host-0004 (daemon B) in two namespaces: ping both ways, iperf3
# TCP -t 1 moves bytes, the tunnel cables carried them.
#   ipoib_tunnel_test.sh SOFTIBD SOFTIB SOFTIB_SM
softibd=$1
softib=$2
softib_sm=$3
source "$(dirname "$0")/ipoib_two_hosts.sh"
run_a=$work/a
run_b=$work/b
start_softibd "$run_a" --part 1/2 --listen udp:127.0.0.1:0 --sm external
daemon=$started
start_softibd "$run_b" --part 2/2 --listen udp:127.0.0.1:0 \
  --peer "udp:127.0.0.1:$(cat "$run_a/tunnel.port")" --sm external
extra_pids+=("$started")
"${tied[@]}" "$softib_sm" --run-dir "$run_a/host-0001" --sweep-interval 0.5 >"$work/sm.log" 2>&1 &
extra_pids=("$!" "${extra_pids[@]}")  # stopped before daemon B
for _ in $(seq 300); do grep -q "MASTER, subnet up" "$work/sm.log" && break; sleep 0.05; done
grep -q "MASTER, subnet up" "$work/sm.log" || fail "softib-sm: $(cat "$work/sm.log")"
grep "MASTER, subnet up" "$work/sm.log" | cut -c1-120
ipoib_up "$run_a/host-0002" "$ns_a" 1
ipoib_up "$run_b/host-0004" "$ns_b" 2
wait_carrier "$ns_a"
wait_carrier "$ns_b"
[[ $(received "$ns_a" -c 3 -i 0.2 -W 2 198.18.0.2) == 3 ]] || fail "ping A/host-0002 -> B/host-0004"
[[ $(received "$ns_b" -c 3 -i 0.2 -W 2 198.18.0.1) == 3 ]] || fail "ping B/host-0004 -> A/host-0002"
echo "ping both ways across the tunnel: 3/3"
iperf3_run -t 1 || fail "iperf3: $(cat "$work/iperf3.json")"
tcp=$(json_get "$work/iperf3.json" 'int(d["end"]["sum_received"]["bytes"])')
rate=$(json_get "$work/iperf3.json" '"%.0f" % (d["end"]["sum_received"]["bits_per_second"] / 1e6)')
[[ $tcp -gt 0 ]] || fail "iperf3 TCP moved nothing"
echo "iperf3 TCP -t 1 across the tunnel: $tcp bytes, $rate Mbit/s"
"$softib" fabric --run-dir "$run_a" links | grep -A2 ' tunnel ' >"$work/tunnels" || fail "no tunnel cable"
# The transfer's packets (>= 2 KiB each: more than bytes / 4096 of them) crossed the tunnel.
carried=$(sed -nE 's/^  a->b carried=([0-9]+) .*/\1/p' "$work/tunnels" | paste -sd+ | bc)
echo "tunnel cables, A -> B: $carried packets"
[[ $carried -gt $((tcp / 4096)) ]] || fail "the tunnel carried $carried packets: $(cat "$work/tunnels")"
echo PASS

#!/usr/bin/env bash
# IPoIB across an SM handover (label ipoib): softibd --fabric default --sm external, softib-sm
# (priority 1, SA) over host-0001's AL brings the subnet up; IPoIB on host-0002 and host-0004
# (two namespaces). During an iperf3 TCP transfer of 12 MiB paced at 16 Mbit/s (about 6 s,
# so that it spans the handover) a better softib-sm (priority 5) starts over host-0003's AL:
# it goes STANDBY, the master hands the subnet over (IBA 14.4.2), the new master sweeps and
# its SA knows no group — each port's MasterSMLID changes (SM_CHANGE), the driver re-joins
# the broadcast group at the new SA. iperf3 completes with every byte received (the
# connection resumed, however long that took); then, with the neighbour caches flushed, ARP
# (over the broadcast group the new SA holds) and ping work both ways.
#   ipoib_sm_handover_test.sh SOFTIBD SOFTIB SOFTIB_SM
softibd=$1
softib=$2
softib_sm=$3
source "$(dirname "$0")/ipoib_two_hosts.sh"
start_softibd "$run" --sm external
daemon=$started
# start_sm HOST PRIORITY: softib-sm over HOST's AL; its log in $work/sm-HOST.log.
start_sm() {
  "${tied[@]}" "$softib_sm" --run-dir "$run/$1" --priority "$2" --sweep-interval 0.3 \
    --poll-interval 0.3 >"$work/sm-$1.log" 2>&1 &
  extra_pids+=($!)
}
# wait_log FILE PATTERN SECONDS
wait_log() {
  for _ in $(seq $(($3 * 20))); do grep -q "$2" "$1" && return 0; sleep 0.05; done
  fail "no '$2' in $1: $(cat "$1")"
}
start_sm host-0001 1
wait_log "$work/sm-host-0001.log" "MASTER, subnet up" 40
ipoib_up "$run/host-0002" "$ns_a" 1
ipoib_up "$run/host-0004" "$ns_b" 2
wait_carrier "$ns_a"
wait_carrier "$ns_b"
[[ $(received "$ns_a" -c 1 -w 15 198.18.0.2) == 1 ]] || fail "ping before the handover"

handover() {
  sleep 0.5  # into the transfer (the fault's timing, not a handshake)
  start_sm host-0003 5
  wait_log "$work/sm-host-0003.log" "MASTER, subnet up" 40
  master_at=$(date +%s.%N)
  during_transfer=no
  kill -0 "$iperf3_client" 2>/dev/null && during_transfer=yes
}
IPERF3_DURING=handover iperf3_run -n 12M -b 16M || fail "iperf3: $(cat "$work/iperf3.json")"
intervals=$(json_get "$work/iperf3.json" '" ".join(str(int(i["sum"]["bytes"])) for i in d["intervals"])')
total=$(json_get "$work/iperf3.json" 'int(d["end"]["sum_received"]["bytes"])')
grep -q STANDBY "$work/sm-host-0001.log" || fail "the old master did not step down: $(cat "$work/sm-host-0001.log")"
echo "handover: $(grep -c . "$work/sm-host-0003.log") log lines of the new master; iperf3 intervals (bytes): $intervals; received $total"
[[ $during_transfer == yes ]] || fail "the transfer ended before the new master was up (pacing failed?)"
sent=$(json_get "$work/iperf3.json" 'int(d["end"]["sum_sent"]["bytes"])')
# The sender wrote every byte (TCP takes no more than its buffers hold unacknowledged); the
# server's count misses what was still in flight when the client reported, at the paced rate
# far less than 1 MiB.
[[ $sent -eq $((12 << 20)) && $total -ge $(((12 - 1) << 20)) ]] ||
  fail "sent $sent and received $total of 12 MiB across the handover"
wait_carrier "$ns_a"
wait_carrier "$ns_b"
ip -n "$ns_a" neigh flush all
ip -n "$ns_b" neigh flush all
[[ $(received "$ns_a" -c 2 -i 0.2 -W 2 198.18.0.2) == 2 ]] || fail "ARP + ping host-0002 -> host-0004 after the handover"
[[ $(received "$ns_b" -c 2 -i 0.2 -W 2 198.18.0.1) == 2 ]] || fail "ARP + ping host-0004 -> host-0002 after the handover"
"$softib" ipoib show --run-dir "$run/host-0002" sibi0 | grep -E "^  (mode|groups|drops)|ff1" || true
echo PASS

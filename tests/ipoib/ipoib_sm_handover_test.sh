#!/usr/bin/env bash
# IPoIB across an SM handover (label ipoib): softibd --fabric default --sm external, softib-sm
# (priority 1, SA) over host-0001's AL brings the subnet up; IPoIB on host-0002 and host-0004
# (two namespaces). During an iperf3 TCP transfer paced at 16 Mbit/s a better softib-sm
# (priority 5) starts over host-0003's AL: it goes STANDBY, the master hands the subnet over
# (IBA 14.4.2), the new master sweeps and its SA knows no group — each port's MasterSMLID
# changes (SM_CHANGE), the driver re-joins the broadcast group at the new SA. The transfer
# moves at least 1 MiB in the 4 s after the handover is over and the carriers are back (the
# same connection resumed, however long the handover took); then, with the neighbour caches
# flushed, ARP (over the broadcast group the new SA holds) and ping work both ways.
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

# The transfer runs until the handover is done and both carriers are back, and 4 s longer
# (however long the new master takes: under the sanitizers its first sweep alone once took
# 39 s); then SIGINT ends it, and iperf3 still reports each second's bytes.
handover() {
  sleep 0.5  # into the transfer (the fault's timing, not a handshake)
  start_sm host-0003 5
  wait_log "$work/sm-host-0003.log" "MASTER, subnet up" 90
  wait_carrier "$ns_a"
  wait_carrier "$ns_b"
  recovered_after=$(/usr/bin/python3 -c "print($(date +%s.%N) - $client_started)")
  during_transfer=no
  kill -0 "$iperf3_client" 2>/dev/null && during_transfer=yes
  sleep 4  # the window in which the transfer must move bytes again (observed, not waited on)
  kill -INT "$iperf3_client" 2>/dev/null || true
}
client_started=$(date +%s.%N)
IPERF3_LIMIT=150 IPERF3_DURING=handover iperf3_run -t 140 -b 16M || true  # SIGINT: exit 1
[[ $(json_get "$work/iperf3.json" 'd.get("error", "")') == *interrupt* ]] ||
  fail "iperf3 did not run until the handover was over: $(cat "$work/iperf3.json")"
[[ $during_transfer == yes ]] || fail "the transfer ended before the handover was over"
grep -q STANDBY "$work/sm-host-0001.log" || fail "the old master did not step down: $(cat "$work/sm-host-0001.log")"
intervals=$(json_get "$work/iperf3.json" '" ".join(str(int(i["sum"]["bytes"])) for i in d["intervals"])')
# Bytes the sender got acknowledged after the recovery (intervals that start 0.5 s after it:
# TCP sends only what its window lets through, so these crossed the fabric).
after=$(json_get "$work/iperf3.json" "sum(int(i['sum']['bytes']) for i in d['intervals'] if i['sum']['start'] >= $recovered_after + 0.5)")
echo "handover over ${recovered_after} s into the transfer; $(grep -c . "$work/sm-host-0003.log") log lines of the new master; iperf3 intervals (bytes): $intervals; $after bytes after the recovery"
[[ $after -ge $((1 << 20)) ]] || fail "only $after bytes moved after the handover"
wait_carrier "$ns_a"
wait_carrier "$ns_b"
ip -n "$ns_a" neigh flush all
ip -n "$ns_b" neigh flush all
[[ $(received "$ns_a" -c 2 -i 0.2 -W 2 198.18.0.2) == 2 ]] || fail "ARP + ping host-0002 -> host-0004 after the handover"
[[ $(received "$ns_b" -c 2 -i 0.2 -W 2 198.18.0.1) == 2 ]] || fail "ARP + ping host-0004 -> host-0002 after the handover"
"$softib" ipoib show --run-dir "$run/host-0002" sibi0 | grep -E "^  (mode|groups|drops)|ff1" || true
echo PASS

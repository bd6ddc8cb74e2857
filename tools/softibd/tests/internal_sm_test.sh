#!/usr/bin/env bash
# softibd --fabric default --sm internal: softib's SM inside softibd, at host-0001 (made a
# light host), brings every port Active with the LFTs read back and the routes checked; its
# summary is in <run-dir>/sm.summary; then validated RC traffic runs between user processes
# on host-0002 and host-0004 across the spine; host-0004's cable flaps, its port goes Down
# and the SM activates it again. Bad --sm-host / --sm-verify get one error. GetTables of
# NodeRecords from a user process (softib-sm --query over the AL's SA client) get every
# record by RMPP: 7 on the default fabric, 612 (343 segments) on ft36.
#
#   internal_sm_test.sh SOFTIBD SOFTIB_PERF SOFTIB SOFTIB_SM
softibd=$(realpath "$1")
perf=$(realpath "$2")
softib=$(realpath "$3")
softib_sm=$(realpath "$4")
source "$(dirname "$0")/daemons.sh"

rc=0
"$softibd" --run-dir "$work/bad" --fabric default --sm external --sm-verify >"$work/bad.out" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q 'softibd: error: --sm-host, --sm-verify and --sm-partitions need --sm internal' "$work/bad.out" ||
  fail "--sm-verify without --sm internal: exit $rc: $(cat "$work/bad.out")"
rc=0
"$softibd" --run-dir "$work/bad" --fabric default --sm internal --sm-host nowhere >"$work/bad.out" 2>&1 || rc=$?
[[ $rc -eq 1 ]] && grep -q 'softibd: error: --sm-host: no host nowhere' "$work/bad.out" ||
  fail "--sm-host nowhere: exit $rc: $(cat "$work/bad.out")"

run="$work/run"
name="softib-ism-$$"
start_daemon sm --run-dir "$run" --fabric default --sm internal --sm-host host-0001 --sm-verify \
  --ibsim "$name"
grep -q 'fabric default: 3 switches, 4 hosts, 1 of them light' "$work/sm.log" || fail "$(cat "$work/sm.log")"
for _ in $(seq 200); do [[ -s "$run/sm.summary" ]] && break; sleep 0.05; done
summary=$(cat "$run/sm.summary" 2>/dev/null) || fail "no sm.summary: $(cat "$work/sm.log")"
grep -q 'MASTER, subnet up: 3 switches, 4 CAs, 8 links, 7 LIDs' <<<"$summary" || fail "summary: $summary"
grep -q '16 ports ACTIVE' <<<"$summary" || fail "activation: $summary"
grep -q '0 retries, 0 timeouts' <<<"$summary" || fail "lost SMPs: $summary"
grep -q 'routes 42 pairs ok=yes max 2 hops' <<<"$summary" || fail "routes: $summary"
grep -q "$summary \[first sweep\]" "$work/sm.log" || fail "summary on stdout: $(cat "$work/sm.log")"

# query_nr RUN_DIR COUNT SEGMENTS: a GetTable of every NodeRecord from the host's user
# process, answered by the internal SM's SA by RMPP; COUNT records, each one once.
query_nr() {
  "$softib_sm" --run-dir "$1" --query NR >"$work/nr.out" 2>&1 || fail "--query NR at $1: $(cat "$work/nr.out")"
  grep -q "^$2 records (RMPP: $((56 + $2 * 112)) bytes in $3 segments)\$" "$work/nr.out" ||
    fail "--query NR at $1: $(tail -3 "$work/nr.out")"
  [[ $(grep -c '^NodeRecord dump:' "$work/nr.out") -eq $2 ]] || fail "NodeRecord dumps: $(tail -3 "$work/nr.out")"
  [[ $(grep '^  NodeGUID:' "$work/nr.out" | sort -u | wc -l) -eq $2 ]] || fail "NodeGUIDs not distinct"
}
query_nr "$run/host-0002" 7 4

# host-0002 (leaf 1) to host-0004 (leaf 2): host -> leaf -> spine -> leaf -> host.
oob="unix:$work/oob.sock"
"${tied[@]}" "$perf" send_lat -s 8 -n 300 --validate --run-dir "$run/host-0004" --oob "$oob" \
  --timeout 20 >"$work/server.out" 2>&1 &
server=$!
"$perf" send_lat -s 8 -n 300 --validate --run-dir "$run/host-0002" --oob "$oob" --connect \
  --timeout 20 --json >"$work/client.out" 2>&1 || fail "send_lat: $(cat "$work/client.out" "$work/server.out")"
wait "$server" || fail "send_lat server: $(cat "$work/server.out")"
iterations=$(/usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['iterations'])" <"$work/client.out")
[[ $iterations -eq 300 ]] || fail "send_lat rows: $(cat "$work/client.out")"
# A flap of host-0004's cable: its port (asked at the host through an ibsim client) goes
# Down with the cable; after `up` leaf-02's Trap 128 makes the SM sweep again, and it
# activates the port that came back in Init.
wait_port "$name" host-0004 Active
"$softib" fabric --run-dir "$run" down host-0004:1 >/dev/null
wait_port "$name" host-0004 Down Polling
"$softib" fabric --run-dir "$run" up host-0004:1 >/dev/null
wait_port "$name" host-0004 Active
# ft36 (36 switches, 576 light hosts): the LFT blocks go LID-routed once the routes to the
# switches are programmed (fast_bringup: all but each switch's block holding the SM's LID,
# sent by directed route first), and every LFT read back still holds what the SM computed.
stop_daemons
start_daemon ft --run-dir "$work/ft" --fabric ft36 --light-hosts --full-hosts host-0002 --sm internal \
  --sm-verify
for _ in $(seq 400); do [[ -s "$work/ft/sm.summary" ]] && break; sleep 0.05; done
summary=$(cat "$work/ft/sm.summary" 2>/dev/null) || fail "ft36: no sm.summary: $(cat "$work/ft.log")"
grep -q '360 LFT blocks (minhop, 324 LID-routed)' <<<"$summary" || fail "ft36 LFT blocks: $summary"
# 8,929 SMPs: CA ports armed by their LID Set (separate Arm Sets would add 576), P_Keys
# written only where they differ.
grep -q '1728 ports ACTIVE, 8929 SMPs (0 retries, 0 timeouts)' <<<"$summary" &&
  grep -q 'ok=yes' <<<"$summary" || fail "ft36: $summary"
# 36 switches and 576 CAs: 68,600 bytes, far beyond one MAD (one record).
query_nr "$work/ft/host-0002" 612 343
echo "PASS: softibd --sm internal: 16 ports ACTIVE, 42 routes verified; send_lat across the spine; a host's flap re-activated;"
echo "      ft36's LFT blocks LID-routed and read back; GetTable NodeRecord by RMPP: 7 and 612 records"

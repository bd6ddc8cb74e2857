#!/usr/bin/env bash
# One subnet across two softibd processes (two_daemons.sh): softib-sm, run under ibsim-run
# at host-0001 on daemon A, discovers and activates the whole fabric through the UDP
# tunnels to daemon B; ibnetdiscover lists every node; validated RC traffic runs between
# host-0001 (A) and host-0003 (B); the tunnels dropped nothing as malformed. Then a host
# alone in its daemon follows its tunnel cable's flaps.
#
#   tunnel_test.sh SOFTIBD SOFTIB SOFTIB_SM SOFTIB_PERF
softibd=$(realpath "$1")
softib=$(realpath "$2")
softib_sm=$(realpath "$3")
perf=$(realpath "$4")
source "$(dirname "$0")/two_daemons.sh"

grep -q 'fabric default: 2 switches, 2 hosts' "$work/a.log" || fail "A's part: $(cat "$work/a.log")"
grep -q 'fabric default: 1 switches, 2 hosts' "$work/b.log" || fail "B's part: $(cat "$work/b.log")"
[[ -d "$run_a/host-0001" && -d "$run_b/host-0003" && ! -d "$run_a/host-0003" ]] ||
  fail "node directories: $(ls "$run_a" "$run_b")"
[[ $(tunnel_cables "$run_a" | wc -l) -eq 2 && $(tunnel_cables "$run_b" | wc -l) -eq 2 ]] ||
  fail "2 tunnel cables (the spine's links to leaf-02) at each end"

out=$(sim "$softib_sm" --once --verify) || fail "softib-sm: $(cat "$work/err")"
grep -q 'MASTER, subnet up: 3 switches, 4 CAs, 8 links, 7 LIDs' <<<"$out" || fail "softib-sm: $out"
grep -q '16 ports ACTIVE' <<<"$out" || fail "softib-sm activation: $out"
grep -q 'routes 42 pairs ok=yes' <<<"$out" || fail "softib-sm routes: $out"

out=$(sim ibnetdiscover) || fail "ibnetdiscover: $(cat "$work/err")"
[[ $(grep -c '^Switch' <<<"$out") -eq 3 && $(grep -c '^Ca' <<<"$out") -eq 4 ]] || fail "ibnetdiscover: $out"
grep -q '"host-0004 HCA-1"' <<<"$out" || fail "host-0004 (on B) discovered: $out"

# run_perf TEST ARGS...: server on host-0003 (B), client on host-0001 (A).
run_perf() {
  local test=$1
  shift
  local oob="unix:$work/oob-$test.sock"
  "${tied[@]}" "$perf" "$test" "$@" --validate --run-dir "$run_b/host-0003" --oob "$oob" \
    --timeout 20 >"$work/server.out" 2>&1 &
  local server=$!
  "$perf" "$test" "$@" --validate --run-dir "$run_a/host-0001" --oob "$oob" --connect --timeout 20 \
    >"$work/client.out" 2>&1 || fail "$test across the tunnel: $(cat "$work/client.out" "$work/server.out")"
  wait "$server" || fail "$test server: $(cat "$work/server.out")"
  cat "$work/client.out"
}
run_perf send_lat -s 8 -n 300
run_perf write_bw -s 65536 -n 200

links=$("$softib" fabric --run-dir "$run_a" links)
grep -qE 'drops: short=0 bad_header=0 unknown_link=0 link_down=0 wrong_peer=0 bad_vcrc=0 bad_icrc=0 conflicts=0 own_hellos=0$' \
  <<<"$links" || fail "tunnel drops at A: $links"
sent=$(grep -o 'udp sent=[0-9]*' <<<"$links" | awk -F= '{s += $2} END {print s}')
[[ $sent -gt 200 ]] || fail "A sent $sent packets into the tunnels: $links"
# A host alone at the far end of a tunnel (--sm static): daemon C hosts all but host-0004,
# daemon D only host-0004. Its port follows the tunnel cable: Active once the hellos bring
# the cable up, Down/Polling while C holds the cable down, Active again after `up`.
stop_daemons
start_daemon c --run-dir "$work/c" --fabric default --listen udp:127.0.0.1:0 \
  --hosts spine-01,leaf-01,leaf-02,host-0001,host-0002,host-0003
start_daemon d --run-dir "$work/d" --fabric default --hosts host-0004 --listen udp:127.0.0.1:0 \
  --peer "udp:127.0.0.1:$(cat "$work/c/tunnel.port")" --ibsim "$name-d"
wait_port "$name-d" host-0004 Active LinkUp
"$softib" fabric --run-dir "$work/c" down host-0004:1 >/dev/null
wait_port "$name-d" host-0004 Down Polling
"$softib" fabric --run-dir "$work/c" up host-0004:1 >/dev/null
wait_port "$name-d" host-0004 Active LinkUp
echo "PASS: softib-sm brings one subnet up across two softibd daemons; ibnetdiscover; send_lat and write_bw across the UDP tunnel; a host's port follows its tunnel cable"

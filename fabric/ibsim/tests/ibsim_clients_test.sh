#!/usr/bin/env bash
# Unmodified infiniband-diags programs under ibsim-run (Debian's libumad2sim.so) against
# softib's fabric: softibd --fabric default --ibsim NAME serves it on the abstract sockets
# NAME:ctl / NAME:out0..9. The client attaches to host-0001's port; directed-route and
# LID-routed SMPs cross the fabric to the switches' SMAs and back.
#
#   ibsim_clients_test.sh SOFTIBD SOFTIB_SM SOFTIB_PERF
# Then the same fabric started with every port in Init (--sm external): softib-sm, and
# then OpenSM, bring it up through the same sockets, and user processes exchange traffic
# across it.
set -euo pipefail
softibd=$1
softib_sm=$2
perf=$3
for tool in ibsim-run smpquery ibroute ibnetdiscover ibtracert perfquery opensm; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps.sh)"; exit 1; }
done

source "$(dirname "$0")/../../../tests/support/tied.sh"  # "${tied[@]}": children die with us
work=$(mktemp -d /tmp/softib_ibsim.XXXXXX)
daemon_pid=""
cleanup() {
  [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

name="softib-it-$$"
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --fabric default --ibsim "$name" --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon_pid=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"
grep -q "@$name:ctl" /proc/net/unix || fail "no @$name:ctl socket"

# umad2sim writes its fake sysfs under the current directory; LD_PRELOAD must be unset
# (ibsim-run does not preload the library when it is set).
cd "$work"
sim() { env -u LD_PRELOAD IBSIM_SOCKNAME="$name" timeout 20 ibsim-run "$@" 2>"$work/err"; }

out=$(sim smpquery -D nodeinfo 0,1) || fail "smpquery -D nodeinfo 0,1: $(cat "$work/err")"
grep -q 'NodeType:\.*Switch' <<<"$out" || fail "leaf NodeInfo: $out"
grep -q 'Guid:\.*0x0002c90200400002' <<<"$out" || fail "leaf GUID: $out"
grep -q 'LocalPort:\.*1' <<<"$out" || fail "leaf LocalPort (the host's cable is on port 1): $out"
grep -q 'attached as client 0 at node "H-0002c90300a00010"' "$work/err" || fail "attach: $(cat "$work/err")"

out=$(sim smpquery -D nodedesc 0,1,3) || fail "smpquery -D nodedesc 0,1,3: $(cat "$work/err")"
grep -q 'spine-01' <<<"$out" || fail "spine NodeDescription over two hops: $out"

# LID-routed to the leaf (LID 2, set by softibd's static subnet): PortInfo of its port 3.
out=$(sim smpquery portinfo 2 3) || fail "smpquery portinfo 2 3: $(cat "$work/err")"
grep -q 'LinkState:\.*Active' <<<"$out" || fail "leaf port 3 Active: $out"

# A directed-route path the switch cannot take (port 9 is not cabled) gets no answer.
if sim smpquery -D nodeinfo 0,1,9 >/dev/null; then fail "0,1,9 answered"; fi

# SIM_HOST attaches to another host.
out=$(env -u LD_PRELOAD SIM_HOST=host-0003 IBSIM_SOCKNAME="$name" timeout 20 ibsim-run \
  smpquery -D nodedesc 0,1 2>"$work/err") || fail "SIM_HOST=host-0003: $(cat "$work/err")"
grep -q 'leaf-02' <<<"$out" || fail "host-0003 sits behind leaf-02: $out"
# The whole fabric, as ibnetdiscover finds it: the hosts' SMAs answer through their nodes'
# Access Layer (SMI on QP0 -> LocalMad).
out=$(sim ibnetdiscover) || fail "ibnetdiscover: $(cat "$work/err")"
[[ $(grep -c '^Switch' <<<"$out") -eq 3 && $(grep -c '^Ca' <<<"$out") -eq 4 ]] || fail "ibnetdiscover: $out"
grep -q '^Ca.*"host-0003 HCA-1"' <<<"$out" || fail "host NodeDescription: $out"
out=$(sim ibtracert 4 8) || fail "ibtracert 4 8: $(cat "$work/err")"
[[ $(grep -c 'switch port' <<<"$out") -eq 3 ]] || fail "host-0001 -> host-0003 crosses 3 switches: $out"
# The PMA answers on QP1 (GSI -> LocalMad) with counters of real traffic.
out=$(sim perfquery 8) || fail "perfquery 8: $(cat "$work/err")"
grep -qE 'PortRcvPkts:\.+[1-9]' <<<"$out" || fail "perfquery counters: $out"

kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""

# --sm external: no LIDs, every port in Init until a subnet manager brings the fabric up.
name="softib-it-ext-$$"
rm -f "$work/ready"; mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run2" --fabric default --ibsim "$name" --sm external \
  --ready-fd 3 3>"$work/ready" >"$work/softibd2.log" 2>&1 &
daemon_pid=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd --sm external not ready: $(cat "$work/softibd2.log")"
grep -q 'ports in Init, waiting for a subnet manager' "$work/softibd2.log" || fail "external SM mode"
out=$(sim "$softib_sm" --once --verify) || fail "softib-sm: $(cat "$work/err")"
grep -q 'MASTER, subnet up: 3 switches, 4 CAs, 8 links, 7 LIDs' <<<"$out" || fail "softib-sm: $out"
grep -q '16 ports ACTIVE' <<<"$out" || fail "softib-sm activation: $out"
grep -q 'routes 42 pairs ok=yes' <<<"$out" || fail "softib-sm routes: $out"
# User processes on hosts behind different leaves, across the SM's routes.
oob="unix:$work/oob.sock"
"${tied[@]}" "$perf" send_lat -s 8 -n 300 --validate --run-dir "$work/run2/host-0003" \
  --oob "$oob" --timeout 20 >"$work/server.out" 2>&1 &
server=$!
"$perf" send_lat -s 8 -n 300 --validate --run-dir "$work/run2/host-0001" --oob "$oob" --connect \
  --timeout 20 >"$work/client.out" 2>&1 || fail "send_lat after softib-sm: $(cat "$work/client.out" "$work/server.out")"
wait "$server" || fail "send_lat server: $(cat "$work/server.out")"
# OpenSM takes the same fabric over (a fresh sweep: it keeps or reassigns LIDs, reprograms).
mkdir -p "$work/osm"
OSM_TMP_DIR="$work/osm" OSM_CACHE_DIR="$work/osm" sim opensm --once -f "$work/osm/log" -F /dev/null \
  >"$work/osm.out" || fail "opensm --once: $(cat "$work/err" "$work/osm.out")"
grep -q 'SUBNET UP' "$work/osm/log" || fail "OpenSM did not bring the subnet up: $(tail -20 "$work/osm/log")"
out=$(sim ibnetdiscover) || fail "ibnetdiscover after OpenSM: $(cat "$work/err")"
[[ $(grep -c '^Ca' <<<"$out") -eq 4 ]] || fail "after OpenSM: $out"
echo "PASS: smpquery, ibroute, ibnetdiscover, ibtracert, perfquery under ibsim-run against softibd --fabric;"
echo "      softib-sm and OpenSM bring softib's fabric up from Init; traffic across it"

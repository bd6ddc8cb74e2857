#!/usr/bin/env bash
# Unmodified infiniband-diags programs under ibsim-run (Debian's libumad2sim.so) against
# softib's fabric: softibd --fabric default --ibsim NAME serves it on the abstract sockets
# NAME:ctl / NAME:out0..9. The client attaches to host-0001's port; directed-route and
# LID-routed SMPs cross the fabric to the switches' SMAs and back.
#
#   ibsim_clients_test.sh SOFTIBD
set -euo pipefail
softibd=$1
for tool in ibsim-run smpquery ibroute; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps.sh)"; exit 1; }
done

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
"$softibd" --run-dir "$work/run" --fabric default --ibsim "$name" --ready-fd 3 3>"$work/ready" \
  >"$work/softibd.log" 2>&1 &
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
echo "PASS: smpquery (DR and LID-routed) under ibsim-run against softibd --fabric default"

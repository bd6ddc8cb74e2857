#!/usr/bin/env bash
# softib-sm's partitions, multicast forwarding and trap-driven re-sweeps on softib's own
# fabric: softibd --fabric default --sm external --ibsim NAME, softib-sm --Pconfig FILE under
# ibsim-run at host-0001 staying MASTER, then the unmodified infiniband-diags read back what
# it programmed:
#   * smpquery pkeys: each host's P_Key table is what the partition file gives it;
#   * softib-sm --query MCMR --set at three hosts joins the IPoIB broadcast group (created by
#     the SM for the default partition), one joins a group the file's `mgid=` line made, a host outside partition 0x0002 cannot join a group
#     on it; ibroute -M shows the MFTs of the tree (leaf ports to the members, the uplinks);
#   * ibportstate disable/enable of a host's leaf port: Trap 128 from the leaf's SMA, the SM
#     represses it, re-sweeps and the port is Active again.
#
#   * UD SENDs to the group's MLID from host-0001 (softib_mcast_client) reach the QPs attached
#     at hosts 2 and 3 across the spine, not host-0004's (not a member); sent on P_Key 0x8002,
#     host-0002's leaf port drops them (not in its partition) and host-0003's HCA drops them
#     at its P_Key 0xFFFF QP, each counted in PortInfo:P_KeyViolations.
#
#   mcast_partitions_test.sh SOFTIBD SOFTIB_SM MCAST_CLIENT
set -euo pipefail
softibd=$1
softib_sm=$2
mcast=$3
for tool in ibsim-run smpquery ibroute ibportstate; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps.sh)"; exit 1; }
done

source "$(dirname "$0")/../../../tests/support/tied.sh"  # "${tied[@]}": children die with us
work=$(mktemp -d /tmp/softib_mcast.XXXXXX)
daemon_pid=""
sm_pid=""
cleanup() {
  [[ -n "$sm_pid" ]] && kill -TERM "$sm_pid" 2>/dev/null && wait "$sm_pid" 2>/dev/null
  [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -f "$work/sm.out" ]] && { echo "--- softib-sm:" >&2; cat "$work/sm.out" >&2; }
  exit 1
}

name="softib-mcast-$$"
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --fabric default --ibsim "$name" --sm external \
  --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon_pid=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"

cd "$work"  # umad2sim writes its fake sysfs here
sim() {
  local host=$1; shift
  env -u LD_PRELOAD SIM_HOST="$host" IBSIM_SOCKNAME="$name" timeout 20 ibsim-run "$@" 2>"$work/err"
}
guid() {  # the port GUID of a host
  sim "$1" smpquery -D nodeinfo 0 | sed -n 's/^PortGuid:\.*0x\(.*\)$/\1/p'
}
gid() {  # fe80::xxxx:xxxx:xxxx:xxxx of a port GUID
  local g=$1
  echo "fe80::${g:0:4}:${g:4:4}:${g:8:4}:${g:12:4}"
}
g1=$(guid host-0001); g2=$(guid host-0002); g3=$(guid host-0003); g4=$(guid host-0004)
[[ -n "$g1" && -n "$g4" ]] || fail "port GUIDs: '$g1' '$g4' $(cat "$work/err")"

cat >"$work/partitions.conf" <<CONF
# the default partition with one more IPv4 group, and a storage partition of hosts 1 and 3
# (4 limited)
Default=0x7fff, ipoib :
  mgid=ff12:401b::0707,sl=1   # its P_Key bits 0000: the partition's (ffff)
  ALL=full ;
storage=0x0002 : 0x$g1=full, 0x$g3=full,
                 0x$g4=limited ;
CONF
"${tied[@]}" env -u LD_PRELOAD SIM_HOST=host-0001 IBSIM_SOCKNAME="$name" ibsim-run "$softib_sm" \
  --Pconfig "$work/partitions.conf" --sweep-interval 0 -q >"$work/sm.out" 2>"$work/sm.err" &
sm_pid=$!
for _ in $(seq 200); do
  grep -q 'MASTER, subnet up' "$work/sm.out" 2>/dev/null && break
  kill -0 "$sm_pid" 2>/dev/null || fail "softib-sm exited: $(cat "$work/sm.err")"
  sleep 0.1
done
grep -q 'MASTER, subnet up: 3 switches, 4 CAs' "$work/sm.out" || fail "no subnet"
grep -q '16 ports ACTIVE' "$work/sm.out" || fail "activation"

lid() { sim "$1" smpquery -D portinfo 0 | sed -n 's/^Lid:\.*\([0-9]*\)$/\1/p'; }
l1=$(lid host-0001); l2=$(lid host-0002); l4=$(lid host-0004)

# P_Key tables as the partition file says (smpquery pkeys prints the non-zero entries).
pk=$(sim host-0001 smpquery pkeys "$l1") || fail "smpquery pkeys: $(cat "$work/err")"
grep -q '0xffff' <<<"$pk" && grep -q '0x8002' <<<"$pk" || fail "host-0001 pkeys: $pk"
pk=$(sim host-0001 smpquery pkeys "$l2")
grep -q '0xffff' <<<"$pk" && ! grep -qi '0x[08]002' <<<"$pk" || fail "host-0002 pkeys: $pk"
pk=$(sim host-0001 smpquery pkeys "$l4")
grep -q '0x0002' <<<"$pk" && ! grep -q '0x8002' <<<"$pk" || fail "host-0004 pkeys (limited): $pk"
# The SA's P_KeyTableRecord is what the port holds.
out=$(sim host-0001 "$softib_sm" --query PKTR LID="$l1") || fail "PKTR: $out $(cat "$work/err")"
grep -q "P_KeyEntry\[1\]:\.*32770$" <<<"$out" || fail "PKTR of host-0001 (0x8002 = 32770): $out"

# Joins: hosts 1, 2 and 3 join the IPoIB broadcast group of the default partition.
bcast=ff12:401b:ffff::ffff:ffff
for h in 1 2 3; do
  g=$(eval echo "\$g$h")
  out=$(sim "host-000$h" "$softib_sm" --query MCMR MGID=$bcast PortGID="$(gid "$g")" \
    JoinState=1 --set) || fail "join host-000$h: $out $(cat "$work/err")"
  grep -q 'MLID:\.*49152$' <<<"$out" || fail "join host-000$h: $out"
done
# The partition file's group exists from the start, with its SL and IPoIB's Q_Key (0x0b1b).
out=$(sim host-0002 "$softib_sm" --query MCMR MGID=ff12:401b:ffff::707 PortGID="$(gid "$g2")" \
  JoinState=1 --set) || fail "join the mgid= group: $out $(cat "$work/err")"
grep -q 'MLID:\.*49153$' <<<"$out" && grep -q '^  SL:\.*1$' <<<"$out" &&
  grep -q 'Q_Key:\.*0x00000b1b$' <<<"$out" || fail "the mgid= group: $out"
# host-0001 creates a group on partition 0x0002; host-0002, not a member, may not join it.
out=$(sim host-0001 "$softib_sm" --query MCMR MGID=ff12:401b:8002::1 PortGID="$(gid "$g1")" \
  JoinState=1 Q_Key=0x1234 P_Key=0x8002 SL=0 FlowLabel=0 TClass=0 --set) || fail "create: $out"
out=$(sim host-0002 "$softib_sm" --query MCMR MGID=ff12:401b:8002::1 PortGID="$(gid "$g2")" \
  JoinState=1 --set) && fail "host-0002 joined partition 0x0002's group: $out"
grep -q 'ERR_REQ_INVALID' <<<"$out" || fail "host-0002's join: $out"

# The MFTs: the spine and both leaves carry 0xc000 (members behind both leaves).
sw_lid() { sim "$1" smpquery -D portinfo "$2" 0 | sed -n 's/^Lid:\.*\([0-9]*\)$/\1/p'; }
leaf1=$(sw_lid host-0001 0,1); spine=$(sw_lid host-0001 0,1,3); leaf2=$(sw_lid host-0003 0,1)
for s in "$leaf1" "$spine" "$leaf2"; do
  sim host-0001 ibroute -M "$s" >"$work/mft$s" || fail "ibroute -M $s: $(cat "$work/err")"
  grep -q '^0xc000' "$work/mft$s" || fail "switch $s has no MFT entry for 0xc000: $(cat "$work/mft$s")"
done
ports_of_c000() { sed -n 's/^0xc000//p' "$work/mft$1" | tr -cd x | wc -c; }
[[ $(ports_of_c000 "$leaf1") -eq 3 ]] || fail "leaf-01: hosts 1, 2 and the uplink: $(cat "$work/mft$leaf1")"
[[ $(ports_of_c000 "$leaf2") -eq 2 ]] || fail "leaf-02: host 3 and the uplink: $(cat "$work/mft$leaf2")"
[[ $(ports_of_c000 "$spine") -eq 2 ]] || fail "spine: both leaves: $(cat "$work/mft$spine")"

# Traffic: three UD SENDs to 0xc000 from host-0001.
bcast_hex=ff12401bffff000000000000ffffffff
for h in 2 3 4; do
  # Members stop after the 3 messages (at most 10 s); the non-member listens for 1.5 s.
  window=10; [[ $h == 4 ]] && window=1.5
  "${tied[@]}" "$mcast" "$work/run/host-000$h" recv $bcast_hex 0xc000 $window 0 3 >"$work/recv$h" 2>&1 &
  eval "recv$h=\$!"
done
for h in 2 3 4; do
  for _ in $(seq 100); do grep -q ready "$work/recv$h" && break; sleep 0.05; done
  grep -q ready "$work/recv$h" || fail "receiver at host-000$h: $(cat "$work/recv$h")"
done
"$mcast" "$work/run/host-0001" send $bcast_hex 0xc000 3 >"$work/send" 2>&1 || fail "send: $(cat "$work/send")"
for h in 2 3 4; do wait "$(eval echo "\$recv$h")" || fail "receiver $h: $(cat "$work/recv$h")"; done
grep -q '^received 3$' "$work/recv2" && grep -q '^mcast 2$' "$work/recv2" || fail "host-0002: $(cat "$work/recv2")"
grep -q '^received 3$' "$work/recv3" || fail "host-0003 (across the spine): $(cat "$work/recv3")"
grep -q '^received 0$' "$work/recv4" || fail "host-0004 is no member: $(cat "$work/recv4")"

# The same on P_Key index 1 of host-0001 (0x8002): host-0002's leaf port enforces its
# partitions, host-0003's HCA holds 0x8002 but its QP is on 0xFFFF.
violations() { sim host-0001 smpquery portinfo "$1" "$2" | sed -n 's/^PkeyViolations:\.*\([0-9]*\)$/\1/p'; }
port2=$(sim host-0002 smpquery -D nodeinfo 0,1 | sed -n 's/^LocalPort:\.*\([0-9]*\)$/\1/p')
l3=$(lid host-0003)
sw_before=$(violations "$leaf1" "$port2"); ca_before=$(violations "$l3" 1)
for h in 2 3; do
  "${tied[@]}" "$mcast" "$work/run/host-000$h" recv $bcast_hex 0xc000 1.5 >"$work/recv$h" 2>&1 &
  eval "recv$h=\$!"
  for _ in $(seq 100); do grep -q ready "$work/recv$h" && break; sleep 0.05; done
done
"$mcast" "$work/run/host-0001" send $bcast_hex 0xc000 2 1 >"$work/send" 2>&1 || fail "send: $(cat "$work/send")"
for h in 2 3; do wait "$(eval echo "\$recv$h")" || fail "receiver $h: $(cat "$work/recv$h")"; done
grep -q '^received 0$' "$work/recv2" && grep -q '^received 0$' "$work/recv3" ||
  fail "P_Key 0x8002 delivered: $(cat "$work/recv2" "$work/recv3")"
[[ $(violations "$leaf1" "$port2") -eq $((sw_before + 2)) ]] ||
  fail "leaf-01 port $port2 P_KeyViolations: $sw_before -> $(violations "$leaf1" "$port2")"
[[ $(violations "$l3" 1) -eq $((ca_before + 2)) ]] ||
  fail "host-0003 P_KeyViolations: $ca_before -> $(violations "$l3" 1)"

# A flap of host-0004's cable at its leaf: the leaf's SMA sends Trap 128, the SM re-sweeps
# and brings the port back to Active.
port4=$(sim host-0004 smpquery -D nodeinfo 0,1 | sed -n 's/^LocalPort:\.*\([0-9]*\)$/\1/p')
sim host-0001 ibportstate "$leaf2" "$port4" disable >/dev/null || fail "disable: $(cat "$work/err")"
sim host-0001 ibportstate "$leaf2" "$port4" enable >/dev/null || fail "enable: $(cat "$work/err")"
for _ in $(seq 100); do
  state=$(sim host-0001 smpquery portinfo "$leaf2" "$port4" | sed -n 's/^LinkState:\.*\(.*\)$/\1/p')
  [[ "$state" == Active ]] && break
  sleep 0.1
done
[[ "$state" == Active ]] || fail "leaf-02 port $port4 after the flap: $state"
grep -q '\[trap\]' "$work/sm.out" || fail "no trap-driven sweep"
echo "PASS: P_Key tables from a partition file, IPoIB broadcast joins and MFTs, UD multicast to"
echo "      the members only, P_Key violations dropped and counted, a partition refusing a join,"
echo "      Trap 128 -> re-sweep -> Active"

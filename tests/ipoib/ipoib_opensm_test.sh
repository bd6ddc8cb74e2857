#!/usr/bin/env bash
# IPoIB multicast and the SA's records with the unmodified OpenSM as SM and SA (label ipoib):
# softibd --fabric default --sm external --ibsim NAME, OpenSM under ibsim-run (Debian's
# libumad2sim.so) on host-0001's port, `softib ipoib up` on host-0002 (198.18.0.1) and
# host-0004 (198.18.0.2) in two namespaces of this test (sibo-<pid>-a/-b). A socat receiver
# joined to 239.1.1.1 on host-0004 gets the datagrams socat sends from host-0002 (bytes
# compared); `saquery -m` (infiniband-diags, under ibsim-run) shows host-0004's full
# membership (JoinState 1) and host-0002's send-only full membership (JoinState 8) of the
# group's MGID; `saquery -S` shows each interface's ATS ServiceRecord (its address, its
# GID) until `softib ipoib down` removes it. About 11 s.
#   ipoib_opensm_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
[[ $(id -u) == 0 ]] || { echo "needs root (TAP devices, namespaces)"; exit 1; }
for tool in ibsim-run opensm saquery socat; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps.sh)"; exit 1; }
done
work=$(mktemp -d /tmp/softib-ipoib-osm.XXXXXX)
ns_a=sibo-$$-a
ns_b=sibo-$$-b
name=softib-osm-$$
daemon=""
osm=""
receiver=""
cleanup() {
  [[ -n "$receiver" ]] && kill "$receiver" 2>/dev/null && wait "$receiver" 2>/dev/null
  [[ -n "$osm" ]] && kill "$osm" 2>/dev/null && wait "$osm" 2>/dev/null
  [[ -n "$daemon" ]] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null || true
  ip netns delete "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -f $work/osm/log ]] && { echo "--- OpenSM log (tail)"; tail -30 "$work/osm/log"; } >&2
  exit 1
}
tied_netns_add "$ns_a"
tied_netns_add "$ns_b"
run=$work/run
mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$run" --fabric default --sm external --ibsim "$name" \
  --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon=$!
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd: $(cat "$work/softibd.log")"

# umad2sim writes a fake sysfs tree under the current directory: a private one.
mkdir -p "$work/osm"
cd "$work/osm"
# OpenSM buffers its log: flushed at each line, the test can wait for SUBNET UP in it.
echo "force_log_flush TRUE" >"$work/osm/opensm.conf"
sim() { env -u LD_PRELOAD IBSIM_SOCKNAME="$name" timeout 20 ibsim-run "$@" 2>"$work/sim.err"; }
"${tied[@]}" env -u LD_PRELOAD IBSIM_SOCKNAME="$name" OSM_TMP_DIR="$work/osm" \
  OSM_CACHE_DIR="$work/osm" ibsim-run opensm -f "$work/osm/log" -F "$work/osm/opensm.conf" \
  >"$work/osm.out" 2>&1 &
osm=$!
for _ in $(seq 300); do grep -q 'SUBNET UP' "$work/osm/log" 2>/dev/null && break; sleep 0.1; done
grep -q 'SUBNET UP' "$work/osm/log" || fail "OpenSM did not bring the subnet up"
echo "OpenSM: SUBNET UP"

"$softib" ipoib up --run-dir "$run/host-0002" --name sibo0 --netns "$ns_a" \
  --addr 198.18.0.1/24 >/dev/null || fail "softib ipoib up host-0002"
"$softib" ipoib up --run-dir "$run/host-0004" --name sibo0 --netns "$ns_b" \
  --addr 198.18.0.2/24 >/dev/null || fail "softib ipoib up host-0004"
for ns in "$ns_a" "$ns_b"; do
  for _ in $(seq 300); do
    ip -n "$ns" -o link show dev sibo0 | grep -q LOWER_UP && break
    sleep 0.1
  done
  ip -n "$ns" -o link show dev sibo0 | grep -q LOWER_UP || fail "no carrier in $ns (broadcast join through OpenSM's SA)"
done
echo "carrier up on both (broadcast group joined through OpenSM's SA)"

show() { "$softib" ipoib show --run-dir "$run/$1" sibo0; }
# 239.1.1.1: the low 28 bits, 0f010101, under ff12:401b:ffff::/96 (RFC 4391 §4).
mgid_text="ff12:401b:ffff:0000:0000:0000:0f01:0101"
head -c 3000 /dev/urandom >"$work/sent"
"${tied[@]}" ip netns exec "$ns_b" socat -u \
  UDP4-RECV:5001,bind=239.1.1.1,ip-add-membership=239.1.1.1:198.18.0.2 \
  OPEN:"$work/received",creat,trunc &
receiver=$!
# The receiver's IGMP report makes host-0004 a full member (bounded wait on `show`).
for _ in $(seq 300); do show host-0004 | grep -q "mgid $mgid_text .* full" && break; sleep 0.1; done
show host-0004 | grep -q "mgid $mgid_text .* full" || fail "host-0004 did not join $mgid_text: $(show host-0004)"
# The first datagram makes host-0002 a send-only member; OpenSM programs the switches' MFTs
# for it after answering the join, so a datagram sent meanwhile may be lost (about one run
# in three): sent again, at most 10 times, until one arrives.
for _ in $(seq 10); do
  ip netns exec "$ns_a" socat -u OPEN:"$work/sent" \
    UDP4-DATAGRAM:239.1.1.1:5001,ip-multicast-if=198.18.0.1,ip-multicast-ttl=1 ||
    fail "socat sender"
  for _ in $(seq 10); do [[ -s $work/received ]] && break; sleep 0.05; done
  [[ -s $work/received ]] && break
done
cmp -n 3000 "$work/sent" "$work/received" || fail "received $(stat -c %s "$work/received" 2>/dev/null) bytes, not the 3000 sent"
echo "multicast 239.1.1.1: 3000 bytes received as sent"
show host-0002 | grep -q "mgid $mgid_text .* send-only" || fail "host-0002 no send-only join: $(show host-0002)"

# The memberships while the receiver still listens (OpenSM deletes a group with its last
# full member). With OpenSM's SM_Key (1, its default) saquery is trusted: the PortGIDs show.
gid_of() { show "$1" | grep -oE 'gid [0-9a-f:]{39}' | head -n1 | cut -d' ' -f2; }
gid_a=$(gid_of host-0002)
gid_b=$(gid_of host-0004)
sim saquery --smkey 1 -m >"$work/members" || fail "saquery -m: $(cat "$work/sim.err")"
python3 - "$work/members" "$mgid_text" "$gid_a" "$gid_b" <<'PY' || fail "saquery -m: $(cat "$work/members")"
import ipaddress, re, sys
text, mgid, gid_a, gid_b = open(sys.argv[1]).read(), *sys.argv[2:]
want = ipaddress.IPv6Address(mgid)
found = {}
for block in text.split("MCMemberRecord")[1:]:
    fields = dict(re.findall(r"^\s*(\w+)\.*(\S+)\s*$", block, re.M))
    if ipaddress.IPv6Address(fields.get("MGID", "::")) != want:
        continue
    found[ipaddress.IPv6Address(fields["PortGid"])] = int(fields["ScopeState"], 0) & 0x0F
a, b = ipaddress.IPv6Address(gid_a), ipaddress.IPv6Address(gid_b)
print("saquery -m", mgid + ":", {str(k): hex(v) for k, v in found.items()})
# JoinState (IBA 15.2.5.17): bit 0 full member (the receiver), bit 3 send-only full member.
sys.exit(0 if found.get(b) == 0x1 and found.get(a) == 0x8 else 1)
PY
kill "$receiver" 2>/dev/null && wait "$receiver" 2>/dev/null || true
receiver=""

# ATS (the driver's RegisterService through the AL's SA client): `saquery -S` shows one
# "DAPL Address Translation Service" record per address, the IPv4 address in ServiceData8
# 13-16, the interface's GID as ServiceGID; the record goes with the interface. The MAD face
# of ibsim (libumad2sim) carries 256-byte MADs, no RMPP: an answer holds one ServiceRecord
# (176 bytes), so the records are checked one interface at a time.
ats() {  # "GID a.b.c.d" per ATS record saquery -S shows
  sim saquery --smkey 1 -S >"$work/services" || fail "saquery -S: $(cat "$work/sim.err")"
  python3 - "$work/services" <<'PY'
import ipaddress, re, sys
for block in open(sys.argv[1]).read().split("ServiceRecord dump:")[1:]:
    fields = dict(re.findall(r"^\s*(\w+(?:\.\d+)?)\.*(\S.*?)\s*$", block, re.M))
    if fields.get("ServiceName") != "DAPL Address Translation Service":
        continue
    if int(fields["ServiceID"], 16) != 0x10000CE100415453:
        continue
    d8 = [int(fields["ServiceData8.%d" % n], 16) for n in range(13, 17)]
    print(ipaddress.IPv6Address(fields["ServiceGID"]), ".".join(map(str, d8)))
PY
}
wait_ats() {  # wait_ats WANTED: bounded wait until saquery -S shows exactly WANTED
  for _ in $(seq 50); do [[ $(ats) == "$1" ]] && return 0; sleep 0.1; done
  fail "saquery -S shows [$(ats)], not [$1]"
}
v6() { python3 -c 'import ipaddress, sys; print(ipaddress.IPv6Address(sys.argv[1]))' "$1"; }
show host-0002 | grep -q "ats 1 records" || fail "host-0002 has no ATS record: $(show host-0002)"
"$softib" ipoib down --run-dir "$run/host-0004" sibo0 >/dev/null || fail "softib ipoib down host-0004"
wait_ats "$(v6 "$gid_a") 198.18.0.1"
echo "saquery -S: $(ats) (host-0002's ATS record; host-0004's went with its interface)"
"$softib" ipoib down --run-dir "$run/host-0002" sibo0 >/dev/null || fail "softib ipoib down host-0002"
wait_ats ""
echo "saquery -S: no ATS record once both interfaces are down"
echo PASS

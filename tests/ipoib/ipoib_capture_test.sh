#!/usr/bin/env bash
# IPoIB on the wire, decoded by tshark (label ipoib): host-0002's cable captured (ERF, `softib
# fabric capture`) while host-0002 and host-0004 (two namespaces) resolve each other by ARP
# and IPv6 ND and ping both ways; tshark reads the ERF as InfiniBand and finds IPoIB ARP
# (hardware type 32, requests and replies), IPv4 ICMP echo requests and replies, ICMPv6
# echoes and neighbour discovery, and no malformed packet.
#   ipoib_capture_test.sh SOFTIBD SOFTIB
softibd=$1
softib=$2
source "$(dirname "$0")/ipoib_two_hosts.sh"
command -v tshark >/dev/null || fail "tshark missing (scripts/install-deps.sh)"
two_hosts_up
cable=host-0002:1
erf=$work/host-0002.erf
"$softib" fabric --run-dir "$run" capture "$cable" "$erf" >/dev/null || fail "capture $cable"
# ARP and ND happen now: the neighbours are unknown until the first ping.
[[ $(received "$ns_a" -c 3 -i 0.2 -W 2 198.18.0.2) == 3 ]] || fail "ping host-0002 -> host-0004"
[[ $(received "$ns_b" -c 3 -i 0.2 -W 2 198.18.0.1) == 3 ]] || fail "ping host-0004 -> host-0002"
[[ $(received "$ns_a" -6 -c 3 -i 0.2 -W 2 fd00:5b18::2) == 3 ]] || fail "IPv6 ping"
out=$("$softib" fabric --run-dir "$run" capture-stop "$cable") || fail "capture-stop: $out"
echo "$out"
[[ -s $erf ]] || fail "no ERF written"

# Two tshark passes (its start-up is the test's slowest part under load): per packet the
# fields the counts need, tab-separated; then count FIELD=VALUE... matches the rows.
tshark -r "$erf" -T fields -E separator=/t -E occurrence=f -e frame.number -e arp.hw.type \
  -e arp.opcode -e icmp.type -e ip.src -e ip.dst -e icmpv6.type \
  >"$work/fields" 2>"$work/tshark.err" || fail "tshark: $(cat "$work/tshark.err")"
count() {
  /usr/bin/python3 - "$work/fields" "$@" <<'PY'
import sys
names = ["frame", "htype", "arpop", "icmp", "src", "dst", "icmp6"]
rows = [dict(zip(names, line.rstrip("\n").split("\t"))) for line in open(sys.argv[1])]
want = [a.split("=", 1) for a in sys.argv[2:]]
print(sum(all(r.get(k, "") in v.split("|") for k, v in want) for r in rows))
PY
}
total=$(count)
arp_req=$(count htype=32 arpop=1)
arp_rep=$(count htype=32 arpop=2)
icmp_req=$(count icmp=8 dst=198.18.0.2)
icmp_rep=$(count icmp=0 src=198.18.0.2)
icmp_req_b=$(count icmp=8 dst=198.18.0.1)
echo6_req=$(count icmp6=128)
echo6_rep=$(count icmp6=129)
nd=$(count "icmp6=135|136")
# A second pass by display filter: a malformed packet or any expert error.
malformed=$(tshark -r "$erf" -Y "_ws.malformed || _ws.expert.severity == error" 2>>"$work/tshark.err" | wc -l)
printf 'tshark: %s packets; IPoIB ARP %s requests %s replies; ICMP echo %s+%s requests %s replies; ICMPv6 echo %s/%s, ND %s; malformed %s\n' \
  "$total" "$arp_req" "$arp_rep" "$icmp_req" "$icmp_req_b" "$icmp_rep" "$echo6_req" "$echo6_rep" "$nd" "$malformed"
[[ $arp_req -ge 1 && $arp_rep -ge 1 ]] || fail "no IPoIB ARP (htype 32) request and reply: $(head -30 "$work/fields")"
[[ $icmp_req == 3 && $icmp_req_b == 3 ]] || fail "ICMP echo requests: $icmp_req, $icmp_req_b (3 each way)"
[[ $icmp_rep -ge 3 ]] || fail "ICMP echo replies from 198.18.0.2: $icmp_rep"
[[ $echo6_req == 3 && $echo6_rep == 3 ]] || fail "ICMPv6 echoes: $echo6_req requests $echo6_rep replies"
[[ $nd -ge 1 ]] || fail "no neighbour discovery"
[[ $malformed == 0 ]] || fail "$malformed malformed: $(tshark -r "$erf" -Y '_ws.malformed || _ws.expert.severity == error' 2>&1 | head)"
echo PASS

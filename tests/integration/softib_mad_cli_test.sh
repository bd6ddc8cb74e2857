#!/usr/bin/env bash
# `softib mad` run as a process: decoding a MAD written by hand from the IBTA
# tables, encode -> decode round trips (hex, raw file, ERF and pcap captures),
# and every kind of bad input, which must exit 2 with one "softib: error:" line.
# Usage: softib_mad_cli_test.sh /path/to/softib
set -u

softib=${1:?usage: $0 /path/to/softib}
work=$(mktemp -d "${TMPDIR:-/tmp}/softib-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
checks=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

zeros() { local n=$1; local s=""; while [ "$n" -gt 0 ]; do s+="00"; n=$((n - 1)); done; printf '%s' "$s"; }
# Hex <-> bytes with coreutils only (no xxd on a minimal Debian).
tohex() { od -An -v -tx1 | tr -d ' \n'; }
fromhex() { printf "$(printf '%s' "$1" | sed 's/../\\x&/g')"; }

# Runs softib with the remaining arguments; succeeds when it exits 0.
run() {
  "$softib" "$@" >"$work/out" 2>"$work/err"
  status=$?
}

# expect_line TEXT: the last output contains the line TEXT.
expect_line() {
  checks=$((checks + 1))
  grep -qxF -- "$1" "$work/out" || fail "missing line '$1' in output of: $last_cmd"
}

expect_ok() {
  last_cmd="softib $*"
  run "$@"
  checks=$((checks + 1))
  [ "$status" -eq 0 ] || fail "exit $status (expected 0): $last_cmd: $(cat "$work/err")"
}

# expect_bad MESSAGE ARGS...: exit code 2 and exactly one stderr line containing MESSAGE.
expect_bad() {
  local message=$1
  shift
  last_cmd="softib $*"
  run "$@"
  checks=$((checks + 1))
  [ "$status" -eq 2 ] || fail "exit $status (expected 2): $last_cmd"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one stderr line: $last_cmd: $(cat "$work/err")"
  grep -q '^softib: error: ' "$work/err" || fail "stderr not 'softib: error: ...': $last_cmd"
  grep -qF -- "$message" "$work/err" || fail "stderr lacks '$message': $last_cmd: $(cat "$work/err")"
}

# ---- decode a MAD built by hand: SubnGetResp(NodeInfo) of a 36-port switch.
# Common header (IBA 13.4.2), M_Key and reserved bytes, then the NodeInfo of
# tests/data/mad_vectors.txt vector NodeInfo_switch at SMPData (byte 64).
mad_nodeinfo="0101018100000000000000000000123400110000000000000000000000000000$(zeros 32)"
mad_nodeinfo+="01010224""0002c90300001234""0002c90300001235""0002c90300001236"
mad_nodeinfo+="0008c738""000000a1""000002c9$(zeros 24)$(zeros 128)"

expect_ok mad decode --hex "$mad_nodeinfo"
expect_line "MAD SubnMgt (0x01), GetResp (0x81), attribute NodeInfo (0x0011)"
expect_line "TransactionID:..................0x0000000000001234"
expect_line "AttributeID:....................0x0011"
expect_line "NodeType:.......................SWITCH (2)"
expect_line "NumPorts:.......................36"
expect_line "SystemImageGUID:................0x0002c90300001234"
expect_line "NodeGUID:.......................0x0002c90300001235"
expect_line "PortGUID:.......................0x0002c90300001236"
expect_line "PartitionCap:...................8"
expect_line "DeviceID:.......................51000"
expect_line "Revision:.......................0x000000a1"
expect_line "VendorID:.......................0x0002c9"

# The same bytes from a raw file.
fromhex "$mad_nodeinfo" >"$work/nodeinfo.bin"
expect_ok mad decode --file "$work/nodeinfo.bin"
expect_line "NodeType:.......................SWITCH (2)"

# Hex from standard input.
last_cmd="softib mad decode --hex - <hex"
"$softib" mad decode --hex - <<<"$mad_nodeinfo" >"$work/out" 2>"$work/err" || fail "stdin decode"
expect_line "NumPorts:.......................36"

# ---- a single layout: the BTH of vector BTH_rc_write_first.
expect_ok mad decode --layout BTH --hex "06 f0 80 01 00 ab cd ef 80 fe dc ba"
expect_line "OpCode:.........................RC_RDMA_WRITE_FIRST (6)"
expect_line "SE:.............................1"
expect_line "PadCnt:.........................3"
expect_line "DestQP:.........................0xabcdef"
expect_line "A:..............................1"
expect_line "PSN:............................0xfedcba"

# ---- encode -> decode round trips.
expect_ok mad encode --layout PortInfo --class SubnMgt --method GetResp --attr-mod 1 --tid 0x99 \
  LID=0x17 LMC=5 M_KeyProtectBits=2 PortState=ACTIVE PortPhysicalState=LINK_UP HOQLife=19 \
  VLStallCount=6 ClientReregister=1 SubnetTimeOut=18 GIDPrefix=0xfe80000000000000 mad.M_Key=0x42
hex=$(cat "$work/out")
checks=$((checks + 1))
[ "${#hex}" -eq 512 ] || fail "encoded MAD is ${#hex} hex digits, expected 512"
expect_ok mad decode --hex "$hex"
expect_line "MAD SubnMgt (0x01), GetResp (0x81), attribute PortInfo (0x0015)"
expect_line "AttributeModifier:..............0x00000001"
expect_line "TransactionID:..................0x0000000000000099"
expect_line "M_Key:..........................0x0000000000000042"
expect_line "LID:............................23"
expect_line "LMC:............................5"
expect_line "M_KeyProtectBits:...............2"
expect_line "PortState:......................ACTIVE (4)"
expect_line "PortPhysicalState:..............LINK_UP (5)"
expect_line "VLStallCount:...................6"
expect_line "HOQLife:........................19"
expect_line "ClientReregister:...............1"
expect_line "SubnetTimeOut:..................18"
expect_line "GIDPrefix:......................0xfe80000000000000"

# A header on its own, to a raw file.
expect_ok mad encode --layout LRH VL=15 SL=0 LNH=2 DLID=0xffff PktLen=72 SLID=0xffff \
  --out "$work/lrh.bin"
checks=$((checks + 1))
[ "$(tohex <"$work/lrh.bin")" = "f002ffff0048ffff" ] || fail "LRH bytes $(tohex <"$work/lrh.bin")"

# An SA PathRecord, then as a whole packet in an ERF capture, read back.
expect_ok mad encode --layout PathRecord --method GetResp DLID=7 SLID=5 SL=10 MTUSelector=EXACTLY \
  MTU=4 FlowLabel=0x9abcd NumbPath=1 Reversible=1 mad.ComponentMask=0x30 \
  --erf "$work/pr.erf" --dlid 5 --slid 1
expect_ok mad decode --erf "$work/pr.erf"
expect_line "== packet 1 =="
expect_line "-- MAD on QP1 (256 bytes) --"
expect_line "MAD SubnAdm (0x03), GetResp (0x81), attribute PathRecord (0x0035)"
expect_line "ComponentMask:..................0x0000000000000030"
expect_line "SL:.............................10"
expect_line "MTUSelector:....................EXACTLY (2)"
expect_line "FlowLabel:......................0x9abcd"
expect_line "Reversible:.....................1"
expect_line "DLID:...........................5"
grep -q '^ICRC:\.*0x[0-9a-f]\{8\} ok$' "$work/out" || fail "ICRC not ok in ERF decode"
grep -q '^VCRC:\.*0x[0-9a-f]\{4\} ok$' "$work/out" || fail "VCRC not ok in ERF decode"
checks=$((checks + 2))

# tshark agrees with our packet, and its pcap conversion (link type ERF) decodes too.
if command -v tshark >/dev/null; then
  got=$(HOME=$work tshark -r "$work/pr.erf" -T fields -e infiniband.pathrecord.sl \
        -e infiniband.pathrecord.flowlabel 2>/dev/null)
  checks=$((checks + 1))
  [ "$got" = "$(printf '0x000a\t0x09abcd')" ] || fail "tshark shows '$got'"
  HOME=$work editcap -F pcap "$work/pr.erf" "$work/pr.pcap" 2>/dev/null
  expect_ok mad decode --pcap "$work/pr.pcap"
  expect_line "SL:.............................10"
else
  fail "tshark is not installed (scripts/install-deps.sh installs it)"
fi

# A whole packet given as hex, then the same packet with one payload bit flipped.
packet_hex=$(tail -c +17 "$work/pr.erf" | tohex)
expect_ok mad decode --packet --hex "$packet_hex"
expect_line "-- LRH (bytes 0..7) --"
expect_line "LNH:............................IBA_LOCAL (2)"
expect_line "-- BTH (bytes 8..19) --"
expect_line "OpCode:.........................UD_SEND_ONLY (100)"
expect_line "-- DETH (bytes 20..27) --"
expect_line "Q_Key:..........................0x80010000"
bad_packet="${packet_hex:0:200}$(printf '%02x' $((0x${packet_hex:200:2} ^ 1)))${packet_hex:202}"
expect_ok mad decode --packet --hex "$bad_packet"
grep -q '^ICRC:.* BAD (expected 0x' "$work/out" || fail "corrupted ICRC not reported BAD"
grep -q '^VCRC:.* BAD (expected 0x' "$work/out" || fail "corrupted VCRC not reported BAD"
checks=$((checks + 2))

# CM REQ, encoded with its sub-byte path fields.
expect_ok mad encode --layout ConnectRequest LocalCommunicationID=0x11223344 \
  TransportServiceType=RC RetryCount=7 RNRRetryCount=6 SRQ=1 PrimarySL=3 PrimarySubnetLocal=1 \
  PrimaryLocalACKTimeout=18 PrimaryFlowLabel=0x12345 PrimaryPacketRate=6
expect_ok mad decode --hex "$(cat "$work/out")"
expect_line "MAD ComMgt (0x07), Send (0x03), attribute ConnectRequest (0x0010)"
expect_line "RetryCount:.....................7"
expect_line "RNRRetryCount:..................6"
expect_line "PrimaryLocalACKTimeout:.........18"
expect_line "PrimaryFlowLabel:...............0x12345"
expect_line "PrimaryPacketRate:..............6"

# ---- list
expect_ok mad list
grep -q '^  0x0011  NodeInfo (40 bytes): SubnMgt SubnMgtDR$' "$work/out" || fail "list lacks NodeInfo"
grep -q '^  0x81  SubnMgtDR (version 1):' "$work/out" || fail "list lacks SubnMgtDR"
grep -q '^  0x64  UD_SEND_ONLY: DETH payload$' "$work/out" || fail "list lacks UD_SEND_ONLY"
checks=$((checks + 3))

# ---- bad input: exit 2, one clear line, never a crash.
expect_bad "too short: a MAD is 256 bytes, got 2" mad decode --hex 0101
expect_bad "a MAD is 256 bytes, got 257 (use --packet for a whole packet)" mad decode --hex "${mad_nodeinfo}00"
expect_bad "bad hex character 'z' at position 2" mad decode --hex 01zz
expect_bad "odd number of hex digits" mad decode --hex 010
expect_bad "unknown attribute id 0x1234 for class SubnMgt (0x01)" \
  mad decode --hex "${mad_nodeinfo:0:32}1234${mad_nodeinfo:36}"
expect_bad "too short: PortInfo needs 64 bytes, got 3" mad decode --layout PortInfo --hex 010203
expect_bad "unknown layout 'NoSuchThing'" mad decode --layout NoSuchThing --hex 00
expect_bad "too short: a packet needs at least 10 bytes" mad decode --packet --hex 0102030405
expect_bad "too short: packet ends inside its BTH" mad decode --packet --hex f002ffff0004ffff6400ffff0000
expect_bad "give exactly one input" mad decode
expect_bad "cannot open $work/missing.bin" mad decode --file "$work/missing.bin"
head -c 40 /dev/urandom >"$work/junk.erf"
printf '\0\0\0\0\0\0\0\0\x15\x04\xff\xff' | cat - "$work/junk.erf" >"$work/bad.erf"
expect_bad "bad ERF record length 65535" mad decode --erf "$work/bad.erf"
expect_bad "not a pcap file (bad magic number)" mad decode --pcap "$work/bad.erf"
expect_bad "no field 'Foo' in PortInfo or the SmpLid header" mad encode --layout PortInfo Foo=1
expect_bad "PortInfo.LMC: value 9 does not fit in 3 bits" mad encode --layout PortInfo LMC=9
expect_bad "LRH.DLID: value 65536 does not fit in 16 bits" mad encode --layout LRH DLID=65536
expect_bad "PortInfo.PortState: 'SLEEPY' is not a number or a member of enum PortState" \
  mad encode --layout PortInfo PortState=SLEEPY
expect_bad "expected Field=value, got 'LMC'" mad encode --layout PortInfo LMC
expect_bad "unknown management class 'Bogus'" mad encode --layout NodeInfo --class Bogus
expect_bad "NodeInfo is not an attribute of SubnAdm (0x03)" mad encode --layout NodeInfo --class SubnAdm
expect_bad "unknown method 'Fetch' for SubnMgt (0x01)" mad encode --layout NodeInfo --method Fetch
expect_bad "--class/--method/--attr-mod/--tid need an attribute layout" \
  mad encode --layout BTH --tid 1
expect_bad "unknown layout 'Nope'" mad encode --layout Nope
expect_bad "The following argument was not expected: --bogus" mad decode --bogus

if [ "$failures" -ne 0 ]; then
  echo "softib mad CLI: $failures of $checks checks failed" >&2
  exit 1
fi
echo "softib mad CLI: all $checks checks passed"

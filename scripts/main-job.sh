#!/usr/bin/env bash
# The main job (until the fabric exists): build softib and use `softib mad` for
# real — encode SMPs, SA and CM MADs from field=value arguments, wrap them into
# InfiniBand packets in an ERF capture, decode them back field by field, and show
# that tshark's own InfiniBand dissector reads the same capture.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SOFTIB_JOBS:-2}

cmake --preset default >/dev/null
cmake --build --preset default -j "$jobs" --target softib
softib=build/default/tools/softib/softib
work=$(mktemp -d /tmp/softib-main.XXXXXX)
trap 'rm -rf "$work"' EXIT

step() { printf '\n=== %s ===\n' "$*"; }

step "PortInfo GetResp (LID-routed SMP), encoded from field=value"
$softib mad encode --layout PortInfo --class SubnMgt --method GetResp --attr-mod 1 --tid 0x1234 \
  LID=1 MasterSMLID=1 LocalPortNum=1 PortState=ACTIVE PortPhysicalState=LINK_UP LMC=0 \
  LinkWidthActive=0x2 NeighborMTU=MTU_4096 SubnetTimeOut=18 --out "$work/portinfo.mad"
$softib mad decode --file "$work/portinfo.mad"

step "SA PathRecord GetResp, as a UD packet on QP1 in an ERF capture"
$softib mad encode --layout PathRecord --class SubnAdm --method GetResp --tid 0x42 \
  DLID=3 SLID=1 SL=0 MTU=5 Rate=7 P_Key=0xffff NumbPath=1 --erf "$work/sa.erf" --dlid 1 --slid 3
$softib mad decode --erf "$work/sa.erf"

step "tshark's InfiniBand dissector on the same capture"
tshark -r "$work/sa.erf" 2>/dev/null -T fields -E header=y -E separator=' ' \
  -e infiniband.lrh.dlid -e infiniband.lrh.slid -e infiniband.bth.destqp \
  -e infiniband.mad.mgmtclass -e infiniband.mad.method -e infiniband.mad.attributeid \
  -e infiniband.pathrecord.dlid -e infiniband.pathrecord.slid -e infiniband.pathrecord.p_key -e infiniband.pathrecord.mtu -e infiniband.pathrecord.rate

step "Bad input is refused with a clear error"
if $softib mad decode --hex 0101; then echo "unexpected success"; exit 1; fi
echo "main job done"

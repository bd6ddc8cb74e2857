// libFuzzer target for the Ethernet <-> IPoIB translation (ulp/ipoib/translate): the same
// bytes go through TranslateFromHost (as an Ethernet frame), TranslateToHost (as an IPoIB
// packet, from a source the first byte chooses) and SnoopHostMembership. Any sanitizer report,
// a result outside the buffer, a transmit whose packet does not start where the Ethernet
// header's last 4 bytes were, or a receive whose frame does not end the packet's GRH space
// is a finding. The connected mode's fragmenter and ICMP builders see the same frame.
//
// Input: byte 0 the receive source (bit 0: a GRH; bit 1: to the broadcast group, bit 2: to
// an IPv4 group; bit 3: the sender is us; bit 4: the sender is the known peer, with LID 7;
// bit 5: connected mode on), then the frame / packet.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "softib/ipoib/translate.h"

namespace {

using softib::ipoib::Drop;
using softib::ipoib::HwAddr;
using softib::ipoib::LocalIdentity;
using softib::ipoib::NeighbourTable;

LocalIdentity FuzzLocal(uint8_t control) {
  LocalIdentity local;
  local.hw.qpn = 0x48;
  local.hw.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3};
  if (control & 0x20) local.hw.flags = HwAddr::kConnectedFlag;
  local.mac = {0x02, 0, 0, 0, 0, 0x01};
  local.pkey = 0xFFFF;
  local.mcast_scope = 2;
  local.mtu = 2044;
  return local;
}

HwAddr FuzzPeer() {
  HwAddr peer;
  peer.qpn = 0x51;
  peer.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0xd4, 0xe5, 0xf6};
  return peer;
}

void Require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::vector<uint8_t> bytes(data + 1, data + size);
  const LocalIdentity local = FuzzLocal(control);
  NeighbourTable table;
  table.Learn(FuzzPeer(), 7);

  // Host → fabric: the frame after 32 bytes of headroom, with exactly kTxTailroom after it.
  {
    constexpr size_t kHead = 32;
    std::vector<uint8_t> buffer(kHead + bytes.size() + softib::ipoib::kTxTailroom, 0);
    std::copy(bytes.begin(), bytes.end(), buffer.begin() + kHead);
    const auto tx = softib::ipoib::TranslateFromHost(buffer, kHead, bytes.size(), local, table);
    Require(tx.drop < Drop::kCount);
    if (tx.drop == Drop::kNone) {
      Require(tx.offset == kHead + softib::ipoib::kEthHeaderBytes - softib::ipoib::kEncapBytes);
      Require(tx.length >= softib::ipoib::kEncapBytes && tx.offset + tx.length <= buffer.size());
      Require(tx.multicast != (tx.neighbour != nullptr));
    }
  }

  // Fabric → host: the packet after the GRH's 40 bytes.
  {
    constexpr size_t kHead = softib::ipoib::kGrhBytes;
    std::vector<uint8_t> buffer(kHead + bytes.size(), 0);
    std::copy(bytes.begin(), bytes.end(), buffer.begin() + kHead);
    softib::ipoib::RxSource source;
    source.qpn = (control & 0x08) ? local.hw.qpn : (control & 0x10) ? 0x51 : 0x99;
    source.slid = (control & 0x10) ? 7 : 9;
    source.has_grh = (control & 0x01) != 0;
    source.sgid = (control & 0x08) ? local.hw.gid : FuzzPeer().gid;
    if (control & 0x02) {
      source.dgid = softib::ipoib::BroadcastMgid(local.pkey);
    } else if (control & 0x04) {
      source.dgid = softib::ipoib::Ipv4MulticastMgid(0xEF010101, local.pkey);
    } else {
      source.dgid = local.hw.gid;
    }
    const auto rx =
        softib::ipoib::TranslateToHost(buffer, kHead, bytes.size(), source, local, table);
    Require(rx.drop < Drop::kCount);
    if (rx.drop == Drop::kNone) {
      Require(rx.offset == kHead + softib::ipoib::kEncapBytes - softib::ipoib::kEthHeaderBytes);
      Require(rx.length >= softib::ipoib::kEthHeaderBytes &&
              rx.offset + rx.length <= buffer.size());
      Require(rx.neighbour != nullptr);
    }
  }

  // Connected mode's UD side: fragments at an MTU the control byte picks (68..2044), each
  // within it and together carrying the datagram's data; the ICMP answers well formed.
  {
    const uint32_t mtu = 68 + (uint32_t{control} * 8) % (2044 - 68);
    std::vector<std::vector<uint8_t>> fragments;
    const auto outcome = softib::ipoib::FragmentForMtu(bytes, mtu, &fragments);
    Require(outcome == softib::ipoib::FragmentOutcome::kFragmented || fragments.empty());
    size_t data = 0;
    for (const auto& f : fragments) {
      Require(f.size() >= softib::ipoib::kEthHeaderBytes + 20 &&
              f.size() - softib::ipoib::kEthHeaderBytes <= mtu);
      data += f.size() - softib::ipoib::kEthHeaderBytes - size_t{f[14] & 0x0fu} * 4;
    }
    if (outcome == softib::ipoib::FragmentOutcome::kFragmented) {
      const size_t total = (size_t{bytes[16]} << 8) | bytes[17];
      Require(data == total - size_t{bytes[14] & 0x0fu} * 4);
    }
    const std::array<uint8_t, 4> v4{198, 18, 0, 1};
    const auto frag_needed = softib::ipoib::BuildIcmpFragmentationNeeded(bytes, mtu, v4);
    Require(frag_needed.empty() || frag_needed.size() <= softib::ipoib::kEthHeaderBytes + 28 + 68);
    std::array<uint8_t, 16> v6{};
    v6[0] = 0xfe;
    v6[1] = 0x80;
    const auto too_big = softib::ipoib::BuildIcmpv6PacketTooBig(bytes, mtu, v6);
    Require(too_big.size() <= softib::ipoib::kEthHeaderBytes + 1280);
  }

  // The snooper over the frame as it came.
  for (const auto& change : softib::ipoib::SnoopHostMembership(bytes, local)) {
    Require(change.mgid[0] == 0xFF);
  }
  return 0;
}

// The switch SMA's traps (IBA 14.2.5.1, 13.4.9): 128 (Link State Change) when a port's link
// event sets SwitchInfo:PortStateChange, 256 (Bad M_Key) when an SMP fails the M_Key check,
// 259 (Bad P_Key at an external port) when partition enforcement drops a packet. Each goes
// LID-routed from the switch's LID to PortInfo:MasterSMLID of port 0, repeated every subnet
// timeout with the same TID until the SM answers TrapRepress (runtime/smp's TrapQueue).
#include <algorithm>

#include "softib/fabric/switch.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/wire/ib_crc.h"
#include "softib/wire/packet_walker.h"
#include "softib/wire/wire.h"

namespace softib::fabric {
namespace {

// Trap259Details:DataValid, one bit per field that holds a value.
enum : uint16_t {
  kValidLid1 = 1 << 0,
  kValidLid2 = 1 << 1,
  kValidPKey = 1 << 2,
  kValidSl = 1 << 3,
  kValidQp1 = 1 << 4,
  kValidQp2 = 1 << 5,
  kValidGid1 = 1 << 6,
  kValidGid2 = 1 << 7,
};

}  // namespace

void Switch::RaiseTrap(uint8_t type, uint16_t trap, std::span<const uint8_t> details) {
  // IssuerLID is filled in when the trap goes out (the SM may give the switch its LID later).
  traps_.Raise(smp::GenericNotice(type, smp::kProducerSwitch, trap, 0, details));
}

void Switch::RaiseTrap128() { RaiseTrap(smp::kNoticeUrgent, smp::kTrapLinkStateChange, {}); }

void Switch::RaiseTrap259(uint8_t port, std::span<const uint8_t> packet) {
  if (traps_.outstanding(smp::kTrapSwitchBadPKey)) return;  // the details are not built twice
  mad::Trap259Details d;
  d.SWLIDADDR = ports_[0].info.LID;
  d.PortNo = port;
  const wire::LRHConstView lrh(packet);
  d.LIDADDR1 = lrh.SLID();
  d.LIDADDR2 = lrh.DLID();
  d.SL = lrh.SL();
  d.DataValid = kValidLid1 | kValidLid2 | kValidSl;
  // Whatever of the headers the packet has (it was dropped for its P_Key, not for its form):
  // the tolerant walk returns each header it found.
  const wire::PacketLayout layout =
      wire::WalkPacket(packet, {.depth = wire::WalkDepth::kAll, .mode = wire::WalkMode::kTolerant});
  if (layout.has(wire::Header::kGrh)) {
    const wire::GRHConstView grh(layout.bytes(packet, wire::Header::kGrh));
    std::ranges::copy(grh.SGID(), d.GIDADDR1.begin());
    std::ranges::copy(grh.DGID(), d.GIDADDR2.begin());
    d.DataValid |= kValidGid1 | kValidGid2;
  }
  if (layout.has(wire::Header::kBth)) {
    const wire::BTHConstView bth(layout.bytes(packet, wire::Header::kBth));
    d.PKEY = bth.P_Key();
    d.QP2 = bth.DestQP();
    d.DataValid |= kValidPKey | kValidQp2;
  }
  // A datagram (UD; RD too) carries the source QP in its DETH.
  if (layout.has(wire::Header::kDeth)) {
    d.QP1 = wire::DETHConstView(layout.bytes(packet, wire::Header::kDeth)).SrcQP();
    d.DataValid |= kValidQp1;
  }
  RaiseTrap(smp::kNoticeSecurity, smp::kTrapSwitchBadPKey, d.Pack());
}

std::vector<Transmit> Switch::PollTraps(uint64_t now_ns) {
  std::vector<Transmit> out;
  const mad::PortInfo& p0 = ports_[0].info;
  if (p0.LID == 0 || p0.MasterSMLID == 0) return out;  // no SM to tell yet: keep them
  for (std::array<uint8_t, 256>& mad : traps_.Due(now_ns, p0.SubnetTimeOut, p0.M_Key)) {
    const mad::SmpNoticeView notice(std::span<uint8_t>(mad).subspan(64, mad::SmpNotice::kSize));
    notice.set_IssuerLID(p0.LID);
    if (notice.TrapNumberDeviceID() == smp::kTrapLinkStateChange)
      mad::Trap128DetailsView(std::span<uint8_t>(mad).subspan(74)).set_LIDADDR(p0.LID);
    // LRH (VL15, to the SM) | BTH (UD SEND only, QP0, default P_Key) | DETH | MAD | CRCs.
    constexpr std::size_t kHeaders = wire::LRH::kSize + wire::BTH::kSize + wire::DETH::kSize;
    std::vector<uint8_t> packet;
    packet.reserve(kHeaders + mad.size() + ibcrc::kIcrcBytes + ibcrc::kVcrcBytes);
    packet.resize(kHeaders + mad.size(), 0);
    std::copy(mad.begin(), mad.end(), packet.begin() + kHeaders);
    const wire::LRHView lrh(packet);
    lrh.set_VL(15);
    lrh.set_SL(p0.MasterSMSL);
    lrh.set_LNH(static_cast<uint8_t>(wire::LinkNextHeader::IBA_LOCAL));
    lrh.set_DLID(p0.MasterSMLID);
    lrh.set_SLID(p0.LID);
    lrh.set_PktLen(static_cast<uint16_t>((packet.size() + ibcrc::kIcrcBytes) / 4));
    const wire::BTHView bth(std::span<uint8_t>(packet).subspan(wire::LRH::kSize));
    bth.set_OpCode(static_cast<uint8_t>(wire::BthOpcode::UD_SEND_ONLY));
    bth.set_P_Key(0xFFFF);
    bth.set_DestQP(0);
    ibcrc::AppendCrcs(packet);
    Emit(0, packet, true, &out, 0);  // CRCs built just above
  }
  return out;
}

uint64_t Switch::next_trap_ns() const {
  // Nothing is due while there is no SM to send to (a subnet configured without one).
  const mad::PortInfo& p0 = ports_[0].info;
  return p0.LID && p0.MasterSMLID ? traps_.next_ns() : UINT64_MAX;
}

}  // namespace softib::fabric

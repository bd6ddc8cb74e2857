// The switch SMA's traps (IBA 14.2.5.1, 13.4.9): Trap 128 (Link State Change) when a port's
// link event sets SwitchInfo:PortStateChange, sent LID-routed from the switch's LID to
// PortInfo:MasterSMLID of port 0 and repeated every subnet timeout (4.096 us * 2^SubnetTimeOut,
// at least 1 ms) with the same TID until the SM answers TrapRepress.
#include <algorithm>

#include "ib_crc.h"
#include "softib/fabric/switch.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/wire/wire.h"

namespace softib::fabric {
namespace {

constexpr uint16_t kTrapLinkStateChange = 128;
constexpr uint8_t kNoticeUrgent = 1;
constexpr uint32_t kProducerSwitch = 2;
constexpr uint64_t kMinTrapIntervalNs = 1'000'000;

}  // namespace

void Switch::RaiseTrap128() {
  if (trap_) return;  // one outstanding: it says the same thing
  // Assigned, not emplace()d: clang does not see the nested struct's default member
  // initializers as constructible from inside the class that declares it.
  PendingTrap trap;
  trap.tid = (uint64_t{0x5742} << 48) | ++trap_count_;  // "SW": ours, not an SM's TID
  trap.next_ns = 0;                                     // at the next poll
  trap_ = trap;
}

std::vector<Transmit> Switch::PollTraps(uint64_t now_ns) {
  std::vector<Transmit> out;
  if (!trap_ || now_ns < trap_->next_ns) return out;
  const mad::PortInfo& p0 = ports_[0].info;
  const uint64_t interval = std::max<uint64_t>(kMinTrapIntervalNs, 4096ull << p0.SubnetTimeOut);
  trap_->next_ns = now_ns + interval;
  if (p0.LID == 0 || p0.MasterSMLID == 0) return out;  // no SM to tell yet: keep it
  // NoticeCount counts the notices sent (a repeat is the same notice).
  if (trap_->notice_count == 0) trap_->notice_count = notice_count_ = notice_count_ % 0x7FFF + 1;

  std::array<uint8_t, 256> mad{};
  const mad::MadHeaderView header(mad);
  header.set_BaseVersion(1);
  header.set_MgmtClass(mad::kSubnMgtClass);
  header.set_ClassVersion(1);
  header.set_Method(mad::kSubnMgtTrap);
  header.set_TransactionID(trap_->tid);
  header.set_AttributeID(mad::SmpNotice::kAttributeId);
  mad::SmpLidView(mad).set_M_Key(p0.M_Key);
  mad::SmpNotice notice;
  notice.IsGeneric = 1;
  notice.Type = kNoticeUrgent;
  notice.ProducerTypeVendorID = kProducerSwitch;
  notice.TrapNumberDeviceID = kTrapLinkStateChange;
  notice.IssuerLID = p0.LID;
  notice.NoticeCount = trap_->notice_count;
  mad::Trap128Details details;
  details.LIDADDR = p0.LID;
  details.Pack(std::span<uint8_t>(notice.DataDetails).first(mad::Trap128Details::kSize));
  notice.Pack(std::span<uint8_t>(mad).subspan(64, mad::SmpNotice::kSize));

  // LRH (VL15, to the SM) | BTH (UD SEND only, QP0, default P_Key) | DETH | MAD | ICRC VCRC.
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
  ++traps_sent_;
  Emit(0, packet, true, &out, 0);  // CRCs built just above
  return out;
}

uint64_t Switch::next_trap_ns() const {
  // Nothing is due while there is no SM to send to (a subnet configured without one).
  const mad::PortInfo& p0 = ports_[0].info;
  return trap_ && p0.LID && p0.MasterSMLID ? trap_->next_ns : UINT64_MAX;
}

bool Switch::Repress(uint64_t tid) {
  // The low 32 bits: a transport between us and the SM (ibsim, umad) may own the high half.
  if (!trap_ || (trap_->tid & 0xFFFFFFFF) != (tid & 0xFFFFFFFF)) return false;
  trap_.reset();
  return true;
}

}  // namespace softib::fabric

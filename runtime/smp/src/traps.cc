// The trap queue every SMA shares, and the Notice parts that do not depend on the agent.
#include "softib/smp/traps.h"

#include <algorithm>

#include "softib/mad/mad_common.h"

namespace softib::smp {
namespace {

constexpr uint64_t kMinTrapIntervalNs = 1'000'000;
constexpr std::size_t kNoticeOffset = 64;  // SMPData
constexpr std::size_t kReturnPathOffset = 192;
constexpr std::size_t kMaxNoticePath = 30;  // DRNoticeReturnPath's bytes

}  // namespace

mad::SmpNotice GenericNotice(uint8_t type, uint32_t producer, uint16_t trap, uint16_t issuer_lid,
                             std::span<const uint8_t> details) {
  mad::SmpNotice notice;
  notice.IsGeneric = 1;
  notice.Type = type;
  notice.ProducerTypeVendorID = producer;
  notice.TrapNumberDeviceID = trap;
  notice.IssuerLID = issuer_lid;
  std::copy_n(details.begin(), std::min(details.size(), notice.DataDetails.size()),
              notice.DataDetails.begin());
  return notice;
}

mad::Trap256Details BadMKeyDetails(std::span<const uint8_t, 256> smp, uint16_t lid) {
  const mad::MadHeaderConstView header(smp);
  mad::Trap256Details d;
  d.LIDADDR = lid;
  d.Method = header.Method();
  d.AttributeID = header.AttributeID();
  d.AttributeModifier = header.AttributeModifier();
  d.M_Key = mad::SmpLidConstView(smp).M_Key();
  if (header.MgmtClass() == mad::kSubnMgtDRClass) {
    const mad::SmpDrConstView dr(smp);
    const std::size_t hops = std::min<std::size_t>(dr.HopCount(), 63);
    d.DRSLID = dr.DrSLID();
    d.DRNotice = true;
    d.DRHopCount = static_cast<uint8_t>(hops);
    d.DRPathTruncated = hops > kMaxNoticePath;
    // ReturnPath[1..HopCount]: the ports the SMP came in by, hop by hop.
    const std::size_t copied = std::min(hops, kMaxNoticePath);
    std::copy_n(smp.begin() + kReturnPathOffset + 1, copied, d.DRNoticeReturnPath.begin());
  }
  return d;
}

bool TrapQueue::Raise(const mad::SmpNotice& notice, bool update) {
  for (Pending& p : pending_) {
    if (p.notice.TrapNumberDeviceID != notice.TrapNumberDeviceID) continue;
    if (update) p.notice.DataDetails = notice.DataDetails;
    return false;
  }
  Pending p;
  p.notice = notice;
  p.tid = (uint64_t{tid_tag_} << 48) | ++tid_count_;
  p.next_ns = 0;  // at the next Due()
  pending_.push_back(p);
  return true;
}

std::vector<std::array<uint8_t, 256>> TrapQueue::Due(uint64_t now_ns, uint8_t subnet_timeout,
                                                     uint64_t m_key) {
  std::vector<std::array<uint8_t, 256>> out;
  const uint64_t interval =
      std::max<uint64_t>(kMinTrapIntervalNs, 4096ull << std::min<uint8_t>(subnet_timeout, 31));
  for (Pending& p : pending_) {
    if (now_ns < p.next_ns) continue;
    p.next_ns = now_ns + interval;
    // NoticeCount counts the notices sent (a repeat is the same notice).
    if (p.notice.NoticeCount == 0)
      p.notice.NoticeCount = notice_count_ = notice_count_ % 0x7FFF + 1;
    std::array<uint8_t, 256>& mad = out.emplace_back();
    mad.fill(0);
    const mad::MadHeaderView header(mad);
    header.set_BaseVersion(1);
    header.set_MgmtClass(mad::kSubnMgtClass);
    header.set_ClassVersion(1);
    header.set_Method(mad::kSubnMgtTrap);
    header.set_TransactionID(p.tid);
    header.set_AttributeID(mad::SmpNotice::kAttributeId);
    mad::SmpLidView(mad).set_M_Key(m_key);
    p.notice.Pack(std::span<uint8_t>(mad).subspan(kNoticeOffset, mad::SmpNotice::kSize));
    ++sent_;
  }
  return out;
}

uint64_t TrapQueue::next_ns() const {
  uint64_t next = UINT64_MAX;
  for (const Pending& p : pending_) next = std::min(next, p.next_ns);
  return next;
}

bool TrapQueue::Repress(uint64_t tid) {
  return std::erase_if(pending_, [tid](const Pending& p) {
           return (p.tid & 0xFFFFFFFF) == (tid & 0xFFFFFFFF);
         }) != 0;
}

void TrapQueue::Cancel(uint16_t trap_number) {
  std::erase_if(pending_, [trap_number](const Pending& p) {
    return p.notice.TrapNumberDeviceID == trap_number;
  });
}

bool TrapQueue::outstanding(uint16_t trap_number) const {
  return std::any_of(pending_.begin(), pending_.end(), [trap_number](const Pending& p) {
    return p.notice.TrapNumberDeviceID == trap_number;
  });
}

}  // namespace softib::smp

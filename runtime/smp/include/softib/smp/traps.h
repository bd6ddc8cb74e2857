// What every SMA that sends traps shares (IBA 14.2.5.1, 13.4.9): the Notice producer types
// and types, the M_Key-violation details (trap 256) of an SMP, and the queue of outstanding
// traps with their repeat discipline — a trap goes out LID-routed to the port's MasterSMLID
// and is sent again with the same TID every subnet timeout (4.096 us * 2^SubnetTimeOut, at
// least 1 ms) until the SM answers TrapRepress with that TID. One trap per trap number is
// outstanding at a time, so a flood of bad packets becomes one trap, not a flood at the SM.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "softib/mad/mad_sm.h"

namespace softib::smp {

// Notice:ProducerType of generic notices (IBA 13.4.8.2, Table 124).
inline constexpr uint32_t kProducerCa = 1;
inline constexpr uint32_t kProducerSwitch = 2;
inline constexpr uint32_t kProducerRouter = 3;
inline constexpr uint32_t kProducerClassManager = 4;
// Notice:Type.
inline constexpr uint8_t kNoticeUrgent = 1;
inline constexpr uint8_t kNoticeSecurity = 2;
inline constexpr uint8_t kNoticeSubnetManagement = 3;
inline constexpr uint8_t kNoticeInformational = 4;
// The trap numbers (IBA 14.2.5.1): the SM's own (the SA reports them as class manager)...
inline constexpr uint16_t kTrapGidInService = 64;
inline constexpr uint16_t kTrapGidOutOfService = 65;
// ... and those SMAs raise.
inline constexpr uint16_t kTrapLinkStateChange = 128;
inline constexpr uint16_t kTrapCapabilityMaskChange = 144;
inline constexpr uint16_t kTrapBadMKey = 256;
inline constexpr uint16_t kTrapBadPKey = 257;
inline constexpr uint16_t kTrapBadQKey = 258;
inline constexpr uint16_t kTrapSwitchBadPKey = 259;

// A generic notice from `producer`, without NoticeCount (the queue numbers what it sends).
mad::SmpNotice GenericNotice(uint8_t type, uint32_t producer, uint16_t trap, uint16_t issuer_lid,
                             std::span<const uint8_t> details);

// Trap 256's details for `smp`, the SMP the M_Key check refused at the SMA of `lid`: its
// method, attribute, modifier and M_Key, and for a directed-route SMP its DrSLID and return
// path so far (at most 30 hops; DRPathTruncated beyond).
mad::Trap256Details BadMKeyDetails(std::span<const uint8_t, 256> smp, uint16_t lid);

class TrapQueue {
 public:
  // `tid_tag`: the TID's top 16 bits, which say who made it (TIDs of an SMA are its own).
  explicit TrapQueue(uint16_t tid_tag) : tid_tag_(tid_tag) {}

  // Queues `notice` to go out at the next Due(); false (nothing queued) while a trap with
  // the same trap number is outstanding — unless `update`: then the outstanding one carries
  // the new details from its next repeat on (same TID: a state the SM re-reads anyway, such
  // as trap 144's CapabilityMask, is not left stale).
  bool Raise(const mad::SmpNotice& notice, bool update = false);
  // The Trap MADs (SubnMgt, method Trap, attribute Notice, with `m_key`) due at `now_ns`;
  // each is due again one interval later.
  std::vector<std::array<uint8_t, 256>> Due(uint64_t now_ns, uint8_t subnet_timeout,
                                            uint64_t m_key);
  // When Due() has something (UINT64_MAX: nothing outstanding).
  uint64_t next_ns() const;
  // TrapRepress: the trap with this TID (low 32 bits: a transport between the SMA and the SM
  // may own the high half) stops. False when no outstanding trap has it.
  bool Repress(uint64_t tid);
  // Forgets an outstanding trap (its cause was cleared, e.g. PortStateChange written 1).
  void Cancel(uint16_t trap_number);
  bool outstanding(uint16_t trap_number) const;
  bool empty() const { return pending_.empty(); }
  uint64_t sent() const { return sent_; }

 private:
  struct Pending {
    mad::SmpNotice notice;
    uint64_t tid = 0;
    uint64_t next_ns = 0;
  };
  std::vector<Pending> pending_;
  uint16_t tid_tag_;
  uint32_t tid_count_ = 0;
  uint16_t notice_count_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace softib::smp

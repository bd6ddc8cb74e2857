// The ports' traps (IBA 14.2.5.1, 13.4.9): a Notice from the port's SMA, LID-routed from its
// LID to its MasterSMLID on QP0, repeated until the SM represses it (runtime/smp TrapQueue).
#include <algorithm>

#include "hca/device/hca.h"
#include "softib/mad/mad_sm.h"

namespace softib::hca {

bool Hca::traps_pending() const {
  return std::any_of(ports_.begin(), ports_.end(), [](const Port& p) { return !p.traps.empty(); });
}

uint64_t Hca::next_trap_ns() const {
  uint64_t next = UINT64_MAX;
  for (const Port& p : ports_) next = std::min(next, p.traps.next_ns());
  return next;
}

void Hca::RaiseTrap(Port& p, uint8_t type, uint16_t trap, std::span<const uint8_t> details) {
  if (p.lid == 0 || p.sm_lid == 0) return;  // no SM to tell
  // The SM above this very port made the change (IsSM) or sees it itself; once it is gone,
  // nobody would repress a trap sent to its LID.
  if (p.AcceptsDlid(p.sm_lid)) return;
  // Trap 144 says what the CapabilityMask is now: an outstanding one takes the new value.
  const bool update = trap == smp::kTrapCapabilityMaskChange;
  if (!p.traps.Raise(smp::GenericNotice(type, smp::kProducerCa, trap, p.lid, details), update))
    return;
  SendDueTraps(p);
}

void Hca::RaiseKeyTrap(Port& p, uint16_t trap, const PacketHeaders& hdr, uint32_t key) {
  if (p.traps.outstanding(trap)) return;  // the details are not built twice
  mad::Trap257_258Details d;
  d.LIDADDR1 = hdr.lrh.SLID;
  d.LIDADDR2 = hdr.lrh.DLID;
  d.KEY = key;
  d.SL = hdr.lrh.SL;
  d.QP1 = hdr.deth.SrcQP;  // 0 for a connected packet: it has no DETH
  d.QP2 = hdr.bth.DestQP;
  if (hdr.grh) {
    d.GIDADDR1 = hdr.grh->SGID;
    d.GIDADDR2 = hdr.grh->DGID;
  }
  RaiseTrap(p, smp::kNoticeSecurity, trap, d.Pack());
}

void Hca::SendDueTraps(Port& p) {
  if (p.lid == 0 || p.sm_lid == 0) return;
  ManagementAddress to;
  to.dlid = p.sm_lid;
  to.sl = p.sm_sl;
  for (const std::array<uint8_t, 256>& mad : p.traps.Due(now_ns_, p.subnet_timeout, p.mkey))
    (void)SendManagement(p.number, kSmiQpn, to, mad);
}

}  // namespace softib::hca

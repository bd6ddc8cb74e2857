// The traps SMAs send the SM (IBA 14.2.5.1): each is repressed at once so its sender stops
// repeating it, then acted on as MASTER — 128 (a switch port changed state) re-sweeps; 144
// (a port's CapabilityMask changed) re-sweeps when IsSM changed at another port, so the new
// SM is found and polled (sminfo.cc), and otherwise only updates the model; 256-259 (bad
// M_Key, P_Key, Q_Key) change nothing the SM configures — and forwarded by the SA as a
// Report(Notice) to every subscriber whose InformInfo matches it (sa_inform.cc).
#include "softib/mad/mad_sm.h"
#include "softib/sm/sminfo.h"
#include "softib/sm/smp.h"
#include "softib/sm/subnet_manager.h"
#include "softib/smp/traps.h"

namespace softib::sm {

void SubnetManager::HandleTrap(const ReceivedMad& trap) {
  ++traps_;
  MadBytes repress = trap.mad;
  repress[3] = kMethodTrapRepress;
  port_.Send(repress, trap.from, 0);
  if (state_ != SmState::kMaster) return;
  if (SmpAttribute(trap.mad) != kAttrNotice) {
    resweep_ = true;  // not a Notice we can read: look at the subnet again
    return;
  }
  mad::SmpNotice notice;
  notice.Unpack(SmpData(trap.mad));
  const uint16_t number = notice.TrapNumberDeviceID;
  if (!notice.IsGeneric) {
    resweep_ = true;
  } else if (number == smp::kTrapCapabilityMaskChange) {
    mad::Trap144Details d;
    d.Unpack(notice.DataDetails);
    const auto owner = subnet_.Owner(d.LIDADDR);
    if (!owner || d.CAPABILITYMASK == 0) {
      resweep_ = true;  // a port we do not know, or a sender that left the mask out
    } else {
      mad::PortInfo& info = subnet_.node(owner->node).ports[owner->port].info;
      const bool sm_changed = ((info.CapabilityMask ^ d.CAPABILITYMASK) & kCapIsSm) != 0;
      info.CapabilityMask = d.CAPABILITYMASK;  // what the SA's PortInfoRecords say
      // Our own port's IsSM is ours: nothing to discover there.
      if (sm_changed && d.LIDADDR != lid_) resweep_ = true;
    }
  } else if (number < smp::kTrapBadMKey || number > smp::kTrapSwitchBadPKey) {
    resweep_ = true;  // 128 and the other state changes
  }
  if (!options_.sa) return;
  for (const SaOutgoing& report : sa_.ForwardTrap(SmpData(trap.mad))) {
    port_.Send(report.mad, report.to, 0);
    ++notices_sent_;
  }
}

}  // namespace softib::sm

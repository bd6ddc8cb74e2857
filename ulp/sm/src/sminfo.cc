// SMInfo packing and the SM election.
#include "softib/sm/sminfo.h"

#include <algorithm>

#include "softib/sm/smp.h"

namespace softib::sm {

const char* ToString(SmState state) {
  switch (state) {
    case SmState::kNotActive:
      return "NOT-ACTIVE";
    case SmState::kDiscovering:
      return "DISCOVERING";
    case SmState::kStandby:
      return "STANDBY";
    case SmState::kMaster:
      return "MASTER";
  }
  return "?";
}

bool Outranks(const SmIdentity& a, const SmIdentity& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.guid < b.guid;
}

Election Elect(const SmIdentity& self, const std::vector<SmIdentity>& others) {
  Election e;
  // A master is there: follow it (the best one if the subnet was split and has two). A
  // MASTER follows only a better one: two SMs both took the subnet (one's SMInfo Get of the
  // other went unanswered), and the worse steps down, so the two agree on one.
  for (std::size_t i = 0; i < others.size(); ++i)
    if (others[i].state == SmState::kMaster &&
        (!e.master || Outranks(others[i], others[*e.master])))
      e.master = i;
  if (e.master && (self.state != SmState::kMaster || Outranks(others[*e.master], self))) {
    e.role = SmState::kStandby;
    return e;
  }
  e.master.reset();
  // Otherwise the best SM that takes part wins.
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < others.size(); ++i) {
    if (others[i].state == SmState::kNotActive) continue;
    if (!best || Outranks(others[i], others[*best])) best = i;
  }
  if (!best || Outranks(self, others[*best])) {
    e.role = SmState::kMaster;
    return e;
  }
  if (self.state == SmState::kMaster) {
    // Until the better SM has taken the subnet. Only a STANDBY is handed over to: one
    // still discovering will find us MASTER and become STANDBY first.
    e.role = SmState::kMaster;
    if (others[*best].state == SmState::kStandby) e.hand_over = best;
    return e;
  }
  // A better SM is still discovering: it will be master; wait for it as STANDBY.
  e.role = SmState::kStandby;
  e.master = best;
  return e;
}

void PackSmInfo(const SmIdentity& info, uint64_t sm_key, MadBytes& mad) {
  mad::SMInfo si;
  si.GUID = info.guid;
  si.SM_Key = sm_key;
  si.ActCount = info.act_count;
  si.Priority = info.priority;
  si.SMState = static_cast<uint8_t>(info.state);
  auto data = MutableSmpData(mad);
  std::fill(data.begin(), data.end(), 0);
  si.Pack(data.first(mad::SMInfo::kSize));
}

SmIdentity ReadSmInfo(const MadBytes& mad, uint64_t* sm_key) {
  mad::SMInfo si;
  si.Unpack(SmpData(mad).first(mad::SMInfo::kSize));
  if (sm_key) *sm_key = si.SM_Key;
  SmIdentity id;
  id.guid = si.GUID;
  id.priority = si.Priority;
  id.state = si.SMState <= 3 ? static_cast<SmState>(si.SMState) : SmState::kNotActive;
  id.act_count = si.ActCount;
  return id;
}

}  // namespace softib::sm

// A MadPort for tests whose Send answers at once: the answers wait in `pending` and Receive
// hands them out in order (never blocks).
#pragma once

#include <deque>
#include <string>

#include "softib/sm/mad_port.h"

namespace softib::sm {

class QueuedPort : public MadPort {
 public:
  PortStatus Receive(ReceivedMad& out, int) override {
    if (pending.empty()) return PortStatus::kTimeout;
    out = pending.front();
    pending.pop_front();
    return PortStatus::kOk;
  }
  std::string LastError() const override { return ""; }

  std::deque<ReceivedMad> pending;
};

}  // namespace softib::sm

// A shared receive queue (IBA 10.2.9): receive WQEs that any QP created on it consumes,
// in posting order. Its limit is a one-shot alarm: once armed (ModifySrq LIMIT), the first
// time a QP takes a WQE and fewer than `limit` remain, SRQ_LIMIT_REACHED goes out and the
// limit disarms until armed again.
#pragma once

#include <cstdint>
#include <deque>

#include "hca/device/pd.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct SharedReceiveQueue {
  uint32_t number = 0;
  PdId pd = 0;
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;  // 0: disarmed
  std::deque<abi::RecvWorkRequest> wqes;

  abi::SrqAttributes Query() const {
    abi::SrqAttributes out{};
    out.max_wr = max_wr;
    out.max_sge = max_sge;
    out.srq_limit = limit;
    return out;
  }
  // Takes the oldest WQE; true when that crossed the armed limit (and disarmed it).
  bool Take(abi::RecvWorkRequest* wr) {
    *wr = wqes.front();
    wqes.pop_front();
    if (limit != 0 && wqes.size() < limit) {
      limit = 0;
      return true;
    }
    return false;
  }
};

}  // namespace softib::hca

// Checks of a work request the HCA copied out of a ring, before it acts on it. The user
// provider runs the same checks before posting, so a well-behaved process learns of its
// mistake from PostSend's status; the HCA's run is the one that counts.
#pragma once

#include "softib/abi/types.h"

namespace softib::rings {

inline abi::Status CheckSendWorkRequest(const abi::SendWorkRequest& wr) {
  using abi::ToUnderlying;
  if (!abi::IsValid(wr.wr_type)) return abi::Status::INVALID_WR_TYPE;
  if ((ToUnderlying(wr.send_flags) & ~abi::kSendFlagsValidMask) != 0 || wr.pad0 != 0 ||
      wr.reserved0 != 0) {
    return abi::Status::INVALID_PARAMETER;
  }
  if ((ToUnderlying(wr.send_flags) & ToUnderlying(abi::SendFlags::INLINE)) != 0) {
    if (wr.inline_length > abi::kMaxInlineData) return abi::Status::INVALID_SETTING;
  } else if (wr.num_sge > abi::kMaxWrSge) {
    return abi::Status::INVALID_MAX_SGE;
  }
  return abi::Status::SUCCESS;
}

inline abi::Status CheckRecvWorkRequest(const abi::RecvWorkRequest& wr) {
  if (wr.reserved0 != 0) return abi::Status::INVALID_PARAMETER;
  if (wr.num_sge > abi::kMaxWrSge) return abi::Status::INVALID_MAX_SGE;
  return abi::Status::SUCCESS;
}

}  // namespace softib::rings

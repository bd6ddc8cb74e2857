// The status every verb, IRP and kernel routine returns: the IDL's statuses.
#pragma once

#include "softib/abi/abi_status.h"

namespace softib::kernel {

using Status = abi::Status;

constexpr bool IsSuccess(Status status) { return status == Status::SUCCESS; }

}  // namespace softib::kernel

// What a verb handler knows about its caller. Filled by the IOCTL dispatch (from the IRP
// and its file object) or by a direct call (from the kernel client's AL instance).
#pragma once

#include <cstdint>

#include "softib/kernel/device.h"
#include "softib/kernel/handle_table.h"
#include "softib/kernel/irp.h"

namespace softib::kernel {

class Node;
class IbAl;  // a kernel client's open of the Access Layer (runtime/al)

struct CallContext {
  Node* node = nullptr;
  HandleTable* handles = nullptr;  // where the request's handles resolve
  FileObject* file = nullptr;      // the caller's open file (null for direct calls)
  IbAl* al = nullptr;              // the kernel client (null for user requests)
  ProcessorMode requestor_mode = ProcessorMode::kKernelMode;
};

}  // namespace softib::kernel

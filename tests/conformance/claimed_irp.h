// An IRP the harness's own kernel clients (the far end, the SA responder) send and claim back:
// the completion routine only signals, and the waiter frees the IRP.
#pragma once

#include "softib/kernel/event.h"
#include "softib/kernel/io.h"

namespace softib::conformance {

struct ClaimedIrpWait {
  kernel::KEvent done{kernel::EventType::kNotification};
};

inline kernel::CompletionAction ClaimedIrpDone(kernel::DeviceObject*, kernel::Irp*, void* context) {
  kernel::KeSetEvent(&static_cast<ClaimedIrpWait*>(context)->done);
  return kernel::CompletionAction::kMoreProcessingRequired;  // the waiter frees the IRP
}

}  // namespace softib::conformance

// The verb IRPs an interface sends to its PDO (which forwards them to the AL device in the
// same stack location, so they resolve in the interface's own AL file), continued in their
// completion routines: nothing here waits.
#include <algorithm>
#include <cstring>

#include "internal.h"
#include "softib/kernel/io.h"

namespace softib::ipoib {

namespace {

struct VerbCall {
  Interface* interface;
  void* output;
  uint32_t output_length;
  VerbDone done;
};

kernel::CompletionAction OnVerbComplete(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
  auto* call = static_cast<VerbCall*>(context);
  const kernel::Status status = irp->IoStatus.Status;
  const uint64_t information = irp->IoStatus.Information;
  // The I/O manager copies the output only after the routines: take it from the system
  // buffer now.
  if (call->output != nullptr && irp->AssociatedIrp.SystemBuffer != nullptr) {
    std::memcpy(call->output, irp->AssociatedIrp.SystemBuffer,
                std::min<uint64_t>(call->output_length, information));
  }
  kernel::IoFreeIrp(irp);
  Interface* i = call->interface;
  call->done(status, information);
  delete call;
  i->Release();
  return kernel::CompletionAction::kMoreProcessingRequired;
}

}  // namespace

// Without the lock: a completion routine may run inline inside a call made under it (a
// post whose completion event IRP completes at once).
bool Stopping(Interface* i) { return i->stop.load(); }

void SendVerb(Interface* i, kernel::Irp* irp, void* output, uint32_t output_length, VerbDone done) {
  if (irp == nullptr) {
    done(kernel::Status::INSUFFICIENT_RESOURCES, 0);
    return;
  }
  i->Hold();
  auto* call = new VerbCall{i, output, output_length, std::move(done)};
  kernel::IoSetCompletionRoutine(irp, &OnVerbComplete, call, true, true, true);
  kernel::IoCallDriver(i->pdo, irp);
}

}  // namespace softib::ipoib

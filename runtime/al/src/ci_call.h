// The AL's verbs to the HCA driver's command interface: each is an IRP (idl/ci.idl, the
// generated builders of kernel/hca/ci_irp.h) sent to the CA's device below the AL's filter,
// awaited in a coroutine (kernel::VerbTask for a verb handler, kernel::IrpTask otherwise):
// nothing in the AL waits for the HCA, and the code after a co_await may run in a DPC at
// DISPATCH (no FastMutex, no waits there).
#pragma once

#include <utility>

#include "kernel/hca/ci_irp.h"
#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/objects.h"
#include "softib/abi/ci.h"
#include "softib/kernel/irp_task.h"
#include "softib/kernel/verb_support.h"
#include "softib/kernel/verb_task.h"

namespace softib::al {

inline CiRequestor RequestorOf(const Instance* instance) {
  if (instance == nullptr) return {};
  return {instance->file, instance->pid != 0 ? kernel::ProcessorMode::kUserMode
                                             : kernel::ProcessorMode::kKernelMode};
}

// One CI IRP of a coroutine: built by a Build<Verb>Irp, sent with `co_await Send()`, its
// output read from the system buffer afterwards, freed with the object. A null IRP (no
// memory) sends nothing and answers INSUFFICIENT_RESOURCES.
class CiIrp {
 public:
  CiIrp(AlCa* ca, kernel::Irp* irp) : device_(ca->lower), irp_(irp) {}
  ~CiIrp() {
    if (irp_ != nullptr) kernel::IoFreeIrp(irp_);
  }
  CiIrp(const CiIrp&) = delete;
  CiIrp& operator=(const CiIrp&) = delete;

  bool built() const { return irp_ != nullptr; }
  kernel::SendIrp Send() { return kernel::SendIrp(device_, irp_); }
  // The driver's output (null when it returned less: every failure returns none).
  template <typename T>
  const T* Output() const {
    return kernel::IrpOutput<T>(irp_);
  }
  const void* Buffer() const { return irp_->AssociatedIrp.SystemBuffer; }
  uint64_t Information() const { return irp_->IoStatus.Information; }

 private:
  kernel::DeviceObject* const device_;
  kernel::Irp* const irp_;
};

}  // namespace softib::al

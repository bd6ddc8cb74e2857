// The AL's implementations of the generated <Module>VerbHandlers, one class per verb
// family (one file each), and the set that dispatch and direct calls use.
#pragma once

#include "kernel/verb_handlers.h"
#include "runtime/al/src/objects.h"

namespace softib::al {

const kernel::VerbHandlerSet& Handlers();

template <typename T>
T* As(const kernel::ObjectRef& ref) {
  return static_cast<T*>(ref.get());
}

// A parent that is being destroyed cannot take a child: the caller reports its handle.
inline bool Adopt(kernel::KernelObject* child, kernel::KernelObject* parent) {
  return child->SetParent(parent) == kernel::Status::SUCCESS;
}

// The destroy verbs: busy while children live, the verb's invalid-handle status for a
// handle that no longer names a live object.
inline kernel::Status DestroyHandle(const kernel::CallContext& ctx, uint64_t handle,
                                    abi::ObjectType type, kernel::Status invalid) {
  const kernel::Status status = InstanceOf(ctx)->table.Destroy(handle, type);
  if (status == kernel::Status::INVALID_HANDLE || status == kernel::Status::INVALID_STATE) {
    return invalid;
  }
  return status;
}

// The destroy verbs of objects that give back what they hold in the HCA (their OnDestroy
// takes a ReleaseTicket): as DestroyHandle — the handle goes at once, busy while children
// live — and the verb completes once the object's release (its CI IRP) completed, after
// the parent lost the object (PENDING until then when an IRP pended).
kernel::Status DestroyReleasing(const kernel::CallContext& ctx, uint64_t handle,
                                abi::ObjectType type, kernel::Status invalid, kernel::Irp* irp);
// The same for a verb whose validation already looked the object up for destruction
// (HandleAccess::kDestroy; `held`, its reference, as in the verb's Refs): no second lookup.
kernel::Status DestroyReleasing(const kernel::CallContext& ctx, kernel::ObjectRef held,
                                uint64_t handle, abi::ObjectType type, kernel::Status invalid,
                                kernel::Irp* irp);

kernel::CaVerbHandlers* CaHandlers();
kernel::CmVerbHandlers* CmHandlers();
kernel::PdAvVerbHandlers* PdAvHandlers();
kernel::CqVerbHandlers* CqHandlers();
kernel::QpVerbHandlers* QpHandlers();
kernel::MrMwVerbHandlers* MrMwHandlers();
kernel::SrqVerbHandlers* SrqHandlers();
kernel::McastVerbHandlers* McastHandlers();
kernel::IocVerbHandlers* IocHandlers();
kernel::AlVerbHandlers* AlHandlers();
kernel::RuntimeIoctlsVerbHandlers* RuntimeHandlers();

void PostExisting(AccessLayer* al, PnpRegObj* reg);  // ca_events.cc

}  // namespace softib::al

// Kernel clients: IbOpenAl/IbReleaseAl, the direct-call context, and the speed path (post,
// poll, arm), which goes straight to the CA's CI as a kernel ULP's would.
#include <thread>

#include "kernel/verbs_objects.h"
#include "runtime/al/src/handlers.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/verb_runtime.h"

namespace softib::al {

using kernel::Status;

Status WaitForCa(AccessLayer* al, uint64_t guid, bool present, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if ((al->FindCa(guid) != nullptr) == present) {
      // Its arrival or removal has been announced to the PnP registrations, too.
      al->pnp_mutex.Acquire();
      al->pnp_mutex.Release();
      return Status::SUCCESS;
    }
    if (std::chrono::steady_clock::now() >= deadline) return Status::TIMEOUT;
    kernel::KeDelayExecutionThread(std::chrono::milliseconds(1));
  }
}

}  // namespace softib::al

namespace softib::kernel {

using al::As;

Status IbOpenAl(Node* node, DeviceObject* client, IbAl** out) {
  VerifyBlockingAllowed("IbOpenAl");
  FileObject* file = nullptr;
  if (const Status s = IoCreateFile(node, al::kAlDeviceName, ProcessorMode::kKernelMode, &file);
      s != Status::SUCCESS) {
    return s;
  }
  auto* instance = static_cast<al::Instance*>(file->FsContext);
  auto* ib_al = new IbAl;
  ib_al->al = instance->al;
  ib_al->client = client;
  ib_al->file = file;
  ib_al->instance = instance;
  instance->ib_al = ib_al;
  if (client != nullptr) ObReferenceObject(client);
  *out = ib_al;
  return Status::SUCCESS;
}

void IbReleaseAl(IbAl* al) {
  VerifyBlockingAllowed("IbReleaseAl");
  // Cleanup completes the client's pending IRPs (CANCELED) and destroys its objects; an
  // event IRP that a DPC took off its queue just before is still being completed into the
  // client: wait for its routines to return. After this, nothing of the client is ever
  // called again, and the client's device reference goes.
  const std::shared_ptr<al::FileState> state = al->instance->state;
  IoCloseFile(al->file);
  while (state->completing.load(std::memory_order_acquire) != 0) {
    KeDelayExecutionThread(std::chrono::microseconds(50));
  }
  if (al->client != nullptr) ObDereferenceObject(al->client);
  delete al;
}

const VerbHandlerSet& DirectHandlers(IbAl*) { return al::Handlers(); }

CallContext DirectCallContext(IbAl* al) {
  CallContext ctx = al::ContextFor(al->instance, nullptr);
  ctx.file = nullptr;
  return ctx;
}

uint64_t IbGetAlHandle(IbAl* al) { return al->instance->al_handle; }
DeviceObject* IbGetAlDevice(IbAl* al) { return al->al->device; }
FileObject* IbGetAlFile(IbAl* al) { return al->file; }

namespace {

template <typename T>
Status Resolve(IbAl* al, uint64_t handle, abi::ObjectType type, HandleAccess access, Status invalid,
               ObjectRef* ref, T** object) {
  if (handle == 0 || al->instance->table.Lookup(handle, type, access, ref) != Status::SUCCESS) {
    return invalid;
  }
  *object = static_cast<T*>(ref->get());
  return Status::SUCCESS;
}

}  // namespace

Status IbPostSend(IbAl* al, uint64_t qp_handle, std::span<const abi::SendWorkRequest> wrs,
                  uint32_t* num_posted) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbPostSend");
  *num_posted = 0;
  ObjectRef ref;
  al::QpObj* qp = nullptr;
  if (const Status s = Resolve(al, qp_handle, abi::ObjectType::Qp, HandleAccess::kWrite,
                               Status::INVALID_QP_HANDLE, &ref, &qp);
      s != Status::SUCCESS) {
    return s;
  }
  ci::CaInterface* ci = qp->pd_obj->ca_obj->ca->ci;
  const bool datagram = qp->type == abi::QpType::UD || qp->type == abi::QpType::GSI ||
                        qp->type == abi::QpType::SMI || qp->type == abi::QpType::MAD;
  for (const abi::SendWorkRequest& request : wrs) {
    abi::SendWorkRequest wr = request;
    if (!abi::IsValid(wr)) return Status::INVALID_SETTING;
    if (datagram) {
      // The device takes the AH number; the client names the Av by its handle.
      ObjectRef av_ref;
      al::AvObj* av = nullptr;
      if (const Status s = Resolve(al, wr.av.value, abi::ObjectType::Av, HandleAccess::kRead,
                                   Status::INVALID_AV_HANDLE, &av_ref, &av);
          s != Status::SUCCESS) {
        return s;
      }
      SpinLockGuard guard(av->lock);
      wr.av.value = av->ah;
    }
    uint32_t posted = 0;
    if (const Status s = ci->PostSend(qp->qpn, {&wr, 1}, &posted); s != Status::SUCCESS) return s;
    ++*num_posted;
  }
  return Status::SUCCESS;
}

Status IbPostRecv(IbAl* al, uint64_t qp_handle, std::span<const abi::RecvWorkRequest> wrs,
                  uint32_t* num_posted) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbPostRecv");
  *num_posted = 0;
  ObjectRef ref;
  al::QpObj* qp = nullptr;
  if (const Status s = Resolve(al, qp_handle, abi::ObjectType::Qp, HandleAccess::kWrite,
                               Status::INVALID_QP_HANDLE, &ref, &qp);
      s != Status::SUCCESS) {
    return s;
  }
  if (qp->srq != nullptr) return Status::INVALID_SETTING;
  return qp->pd_obj->ca_obj->ca->ci->PostRecv(qp->qpn, wrs, num_posted);
}

Status IbPostSrqRecv(IbAl* al, uint64_t srq_handle, std::span<const abi::RecvWorkRequest> wrs,
                     uint32_t* num_posted) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbPostSrqRecv");
  *num_posted = 0;
  ObjectRef ref;
  al::SrqObj* srq = nullptr;
  if (const Status s = Resolve(al, srq_handle, abi::ObjectType::Srq, HandleAccess::kWrite,
                               Status::INVALID_SRQ_HANDLE, &ref, &srq);
      s != Status::SUCCESS) {
    return s;
  }
  return srq->pd_obj->ca_obj->ca->ci->PostSrqRecv(srq->number, wrs, num_posted);
}

Status IbPollCq(IbAl* al, uint64_t cq_handle, std::span<abi::WorkCompletion> wcs,
                uint32_t* num_wcs) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbPollCq");
  *num_wcs = 0;
  ObjectRef ref;
  al::CqObj* cq = nullptr;
  if (const Status s = Resolve(al, cq_handle, abi::ObjectType::Cq, HandleAccess::kWrite,
                               Status::INVALID_CQ_HANDLE, &ref, &cq);
      s != Status::SUCCESS) {
    return s;
  }
  return cq->ca_obj->ca->ci->PollCq(cq->number, wcs, num_wcs);
}

Status IbPeekCq(IbAl* al, uint64_t cq_handle, uint32_t* num_entries) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbPeekCq");
  ObjectRef ref;
  al::CqObj* cq = nullptr;
  if (const Status s = Resolve(al, cq_handle, abi::ObjectType::Cq, HandleAccess::kRead,
                               Status::INVALID_CQ_HANDLE, &ref, &cq);
      s != Status::SUCCESS) {
    return s;
  }
  return cq->ca_obj->ca->ci->PeekCq(cq->number, num_entries);
}

Status IbRearmCq(IbAl* al, uint64_t cq_handle, abi::CqNotify notify) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbRearmCq");
  ObjectRef ref;
  al::CqObj* cq = nullptr;
  if (const Status s = Resolve(al, cq_handle, abi::ObjectType::Cq, HandleAccess::kWrite,
                               Status::INVALID_CQ_HANDLE, &ref, &cq);
      s != Status::SUCCESS) {
    return s;
  }
  if (!abi::IsValid(notify)) return Status::INVALID_SETTING;
  return cq->ca_obj->ca->ci->RearmCq(cq->number, notify);
}

Status IbBindMw(IbAl* al, uint64_t mw_handle, uint64_t qp_handle, uint64_t mr_handle,
                const abi::MwBindParams& bind, uint32_t* rkey) {
  VerifyIrqlAtMost(Irql::kDispatch, "IbBindMw");
  ObjectRef mw_ref, qp_ref, mr_ref;
  al::MwObj* mw = nullptr;
  al::QpObj* qp = nullptr;
  al::MrObj* mr = nullptr;
  if (const Status s = Resolve(al, mw_handle, abi::ObjectType::Mw, HandleAccess::kWrite,
                               Status::INVALID_MW_HANDLE, &mw_ref, &mw);
      s != Status::SUCCESS) {
    return s;
  }
  if (const Status s = Resolve(al, qp_handle, abi::ObjectType::Qp, HandleAccess::kWrite,
                               Status::INVALID_QP_HANDLE, &qp_ref, &qp);
      s != Status::SUCCESS) {
    return s;
  }
  if (const Status s = Resolve(al, mr_handle, abi::ObjectType::Mr, HandleAccess::kRead,
                               Status::INVALID_MR_HANDLE, &mr_ref, &mr);
      s != Status::SUCCESS) {
    return s;
  }
  uint32_t key;
  {
    SpinLockGuard guard(mr->lock);
    key = mr->key;
  }
  return qp->pd_obj->ca_obj->ca->ci->BindMw(mw->mw, qp->qpn, key, bind, rkey);
}

// ---- the speed path over public objects (kernel/verbs_objects.h) ----

Status IbPostSend(IB_QP* qp, std::span<const abi::SendWorkRequest> wrs, uint32_t* num_posted) {
  if (qp == nullptr) return Status::INVALID_QP_HANDLE;
  return IbPostSend(qp->al, qp->handle, wrs, num_posted);
}

Status IbPostRecv(IB_QP* qp, std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted) {
  if (qp == nullptr) return Status::INVALID_QP_HANDLE;
  return IbPostRecv(qp->al, qp->handle, wrs, num_posted);
}

Status IbPostSrqRecv(IB_SRQ* srq, std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted) {
  if (srq == nullptr) return Status::INVALID_SRQ_HANDLE;
  return IbPostSrqRecv(srq->al, srq->handle, wrs, num_posted);
}

Status IbPollCq(IB_CQ* cq, std::span<abi::WorkCompletion> wcs, uint32_t* num_wcs) {
  if (cq == nullptr) return Status::INVALID_CQ_HANDLE;
  return IbPollCq(cq->al, cq->handle, wcs, num_wcs);
}

Status IbPeekCq(IB_CQ* cq, uint32_t* num_entries) {
  if (cq == nullptr) return Status::INVALID_CQ_HANDLE;
  return IbPeekCq(cq->al, cq->handle, num_entries);
}

Status IbRearmCq(IB_CQ* cq, abi::CqNotify notify) {
  if (cq == nullptr) return Status::INVALID_CQ_HANDLE;
  return IbRearmCq(cq->al, cq->handle, notify);
}

Status IbBindMw(IB_MW* mw, IB_QP* qp, IB_MR* mr, const abi::MwBindParams& bind, uint32_t* rkey) {
  if (mw == nullptr) return Status::INVALID_MW_HANDLE;
  if (qp == nullptr) return Status::INVALID_QP_HANDLE;
  if (mr == nullptr) return Status::INVALID_MR_HANDLE;
  uint32_t new_rkey = 0;
  const Status status = IbBindMw(mw->al, mw->handle, qp->handle, mr->handle, bind, &new_rkey);
  if (status == Status::SUCCESS) mw->rkey = new_rkey;
  if (rkey != nullptr) *rkey = new_rkey;
  return status;
}

}  // namespace softib::kernel

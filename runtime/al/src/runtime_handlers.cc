// Requests of the user-mode runtime: the OpenCa redirect, the event waits (pending IRPs
// the AL completes), cancellation, object counts, the file's Al handle. The ring mappings
// (speed path) are in ring_handlers.cc.
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "runtime/al/src/handlers.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

// ring_handlers.cc
Status ServeMapCqRing(const kernel::CallContext& ctx, const abi::MapCqRingIn& in,
                      kernel::MapCqRingRefs& refs, abi::MapCqRingOut& out, Irp* irp);
Status ServeMapQpRings(const kernel::CallContext& ctx, const abi::MapQpRingsIn& in,
                       kernel::MapQpRingsRefs& refs, abi::MapQpRingsOut& out, Irp* irp);
Status ServeMapSrqRing(const kernel::CallContext& ctx, const abi::MapSrqRingIn& in,
                       kernel::MapSrqRingRefs& refs, abi::MapSrqRingOut& out, Irp* irp);

namespace {

void Fill(abi::ObjectCounts* out, const Counters& counts) {
  auto get = [&](abi::ObjectType type) {
    return counts.by_type[static_cast<std::size_t>(type)].load(std::memory_order_relaxed);
  };
  using T = abi::ObjectType;
  out->al = get(T::Al);
  out->ca = get(T::Ca);
  out->pd = get(T::Pd);
  out->av = get(T::Av);
  out->cq = get(T::Cq);
  out->qp = get(T::Qp);
  out->srq = get(T::Srq);
  out->mr = get(T::Mr);
  out->mw = get(T::Mw);
  out->mcast = get(T::Mcast);
  out->mad_pool = get(T::MadPool);
  out->mad_svc = get(T::MadSvc);
  out->cep = get(T::Cep);
  out->pnp_reg = get(T::PnpReg);
  out->sa_req = get(T::SaReq);
  out->sa_reg = get(T::SaReg);
  out->mcast_join = get(T::McastJoin);
  out->shm_mappings = counts.shm_mappings.load(std::memory_order_relaxed);
}

class RuntimeVerbs final : public kernel::RuntimeIoctlsVerbHandlers {
 public:
  Status ResolveCaDevice(const kernel::CallContext& ctx, const abi::ResolveCaDeviceIn& in,
                         kernel::ResolveCaDeviceRefs&, abi::ResolveCaDeviceOut& out,
                         Irp*) override {
    const auto cas = InstanceOf(ctx)->al->Cas();
    const uint64_t guid = be64toh(in.ca_guid);
    for (std::size_t i = 0; i < cas.size(); ++i) {
      if (cas[i]->guid != guid) continue;
      if (cas[i]->removed.load()) return Status::CA_REMOVED;
      const std::string name = ci::CaDeviceName(guid);
      out.ca_index = static_cast<uint32_t>(i);
      out.path_length = static_cast<uint32_t>(name.size());
      std::memcpy(out.device_path, name.data(), name.size());
      return Status::SUCCESS;
    }
    return Status::INVALID_GUID;
  }

  Status MapCqRing(const kernel::CallContext& ctx, const abi::MapCqRingIn& in,
                   kernel::MapCqRingRefs& refs, abi::MapCqRingOut& out, Irp* irp) override {
    return ServeMapCqRing(ctx, in, refs, out, irp);
  }
  Status MapQpRings(const kernel::CallContext& ctx, const abi::MapQpRingsIn& in,
                    kernel::MapQpRingsRefs& refs, abi::MapQpRingsOut& out, Irp* irp) override {
    return ServeMapQpRings(ctx, in, refs, out, irp);
  }
  Status MapSrqRing(const kernel::CallContext& ctx, const abi::MapSrqRingIn& in,
                    kernel::MapSrqRingRefs& refs, abi::MapSrqRingOut& out, Irp* irp) override {
    return ServeMapSrqRing(ctx, in, refs, out, irp);
  }

  Status GetAsyncEvent(const kernel::CallContext&, const abi::GetAsyncEventIn&,
                       kernel::GetAsyncEventRefs& refs, abi::GetAsyncEventOut& out,
                       Irp* irp) override {
    return As<AlObj>(refs.al)->Wait(irp, out);
  }

  Status GetCompletionEvent(const kernel::CallContext&, const abi::GetCompletionEventIn&,
                            kernel::GetCompletionEventRefs& refs, abi::GetCompletionEventOut& out,
                            Irp* irp) override {
    return As<CqObj>(refs.cq)->Wait(irp, out);
  }

  Status GetPnpEvent(const kernel::CallContext&, const abi::GetPnpEventIn&,
                     kernel::GetPnpEventRefs& refs, abi::GetPnpEventOut& out, Irp* irp) override {
    return As<PnpRegObj>(refs.reg)->Wait(irp, out);
  }

  Status CancelPending(const kernel::CallContext& ctx, const abi::CancelPendingIn& in,
                       kernel::CancelPendingRefs&, abi::CancelPendingOut& out, Irp*) override {
    out.canceled_count =
        static_cast<uint32_t>(InstanceOf(ctx)->CancelPendingIrps(in.function, in.object_id));
    return Status::SUCCESS;
  }

  Status QueryObjectCounts(const kernel::CallContext& ctx, const abi::QueryObjectCountsIn& in,
                           kernel::QueryObjectCountsRefs&, abi::QueryObjectCountsOut& out,
                           Irp*) override {
    Instance* instance = InstanceOf(ctx);
    if (in.scope == abi::CountScope::NODE) {
      out.counts = QueryNodeObjectCounts(instance->al);
      return Status::SUCCESS;
    }
    Fill(&out.counts, instance->state->counts);
    uint32_t pending = 0;
    {
      kernel::SpinLockGuard guard(instance->waitables_lock);
      for (kernel::KernelObject* object : instance->waitables) {
        pending += static_cast<uint32_t>(static_cast<Waitable*>(object)->waiters.size());
      }
    }
    out.counts.pending_requests = pending;
    out.counts.open_files = 1;
    return Status::SUCCESS;
  }

  Status GetFileAl(const kernel::CallContext& ctx, const abi::GetFileAlIn& in,
                   abi::GetFileAlOut& out, Irp*) override {
    Instance* instance = InstanceOf(ctx);
    // A kernel client's regions are its own memory (memcpy): nothing to offset.
    if (instance->pid == 0 && in.dma_address_offset != 0) return Status::INVALID_PARAMETER;
    out.al.value = instance->al_handle;
    if (out.al.value == 0) return Status::INVALID_AL_HANDLE;
    // Only the stating process's own transfers can go astray (ProcessVmDma targets its pid).
    instance->dma_address_offset.store(in.dma_address_offset);
    // The HCA driver reads a user-mode CI request's memory at its file's offset.
    if (instance->file != nullptr) instance->file->DmaAddressOffset = in.dma_address_offset;
    return Status::SUCCESS;
  }
};

}  // namespace

abi::ObjectCounts QueryNodeObjectCounts(AccessLayer* al) {
  abi::ObjectCounts counts{};
  Fill(&counts, al->node_counts);
  counts.pending_requests = al->pending.load(std::memory_order_relaxed);
  counts.open_files = al->open_files.load(std::memory_order_relaxed);
  return counts;
}

kernel::RuntimeIoctlsVerbHandlers* RuntimeHandlers() {
  static RuntimeVerbs verbs;
  return &verbs;
}

const kernel::VerbHandlerSet& Handlers() {
  static const kernel::VerbHandlerSet set = [] {
    kernel::VerbHandlerSet s;
    s.runtime_ioctls = RuntimeHandlers();
    s.verbs_al = AlHandlers();
    s.verbs_ca = CaHandlers();
    s.verbs_cm = CmHandlers();
    s.verbs_cq = CqHandlers();
    s.verbs_ioc = IocHandlers();
    s.verbs_mcast = McastHandlers();
    s.verbs_mr_mw = MrMwHandlers();
    s.verbs_pd_av = PdAvHandlers();
    s.verbs_qp = QpHandlers();
    s.verbs_srq = SrqHandlers();
    return s;
  }();
  return set;
}

}  // namespace softib::al

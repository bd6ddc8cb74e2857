// SendSaRequest / GetSaResponse / CancelSaRequest (IBAL ib_query with a raw request): an
// SaReq object per request, its answer kept until GetSaResponse takes it; PathRecord
// Get/GetTable answered from the port's cache when it holds them (PathCacheControl).
#include <endian.h>

#include <cstring>

#include "runtime/al/src/sa/sa_client.h"
#include "runtime/al/src/sa/sa_verbs.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

class SaReqObj final : public Waitable {
 public:
  SaReqObj(Instance* owner, uint64_t context)
      : Waitable(abi::ObjectType::SaReq, owner, abi::kIoctlGetSaResponse), context(context) {}
  const uint64_t context;

  void SetTicket(const sa::SaTicket& ticket) {
    kernel::SpinLockGuard guard(lock_);
    ticket_ = ticket;
  }

  // The request ended (once): a waiting GetSaResponse takes the answer.
  void Finish(Status status, const sa::SaAnswer& answer) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (finished_) return;
      finished_ = true;
      status_ = status;
      answer_ = answer;
    }
    Pump();
  }

  Status Wait(Irp* irp, abi::GetSaResponseOut& out, std::span<uint8_t> data) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (finished_) return Fill(out, data);
    }
    if (irp == nullptr) return Status::CANCELED;
    irp->DriverContext[1] = &out;
    irp->DriverContext[2] = data.data();
    irp->DriverContext[3] = reinterpret_cast<void*>(static_cast<uintptr_t>(data.size()));
    const Status status = waiters.Insert(irp);
    Pump();
    return status;
  }

 private:
  Status Fill(abi::GetSaResponseOut& out, std::span<uint8_t> data) const {
    if (status_ != Status::SUCCESS) return status_;
    out.mad_status = answer_.mad_status;
    out.record_size = answer_.record_size;
    out.num_records = answer_.num_records;
    out.data_length = static_cast<uint32_t>(answer_.data.size());
    if (answer_.data.size() > data.size()) return Status::INSUFFICIENT_MEMORY;
    if (!answer_.data.empty()) std::memcpy(data.data(), answer_.data.data(), answer_.data.size());
    return Status::SUCCESS;
  }

  void Pump() {
    for (;;) {
      Irp* irp;
      Status status;
      uint64_t information = 0;
      {
        kernel::SpinLockGuard guard(lock_);
        if (!finished_) return;
        irp = waiters.Remove();
        if (irp == nullptr) return;
        auto* out = static_cast<abi::GetSaResponseOut*>(irp->DriverContext[1]);
        const std::span<uint8_t> area(static_cast<uint8_t*>(irp->DriverContext[2]),
                                      reinterpret_cast<uintptr_t>(irp->DriverContext[3]));
        status = Fill(*out, area);
        if (status == Status::SUCCESS || status == Status::INSUFFICIENT_MEMORY) {
          information = sizeof(*out) + (status == Status::SUCCESS ? out->data_length : 0);
        }
      }
      waiters.Complete(irp, status, information);
    }
  }

  void OnDestroy() override {
    sa::SaTicket ticket;
    {
      kernel::SpinLockGuard guard(lock_);
      ticket = ticket_;
      finished_ = true;
      status_ = Status::CANCELED;
      answer_ = {};
    }
    StopWaiting();
    if (ticket) sa::SaOf(al_)->Cancel(ticket);
  }

  kernel::KSpinLock lock_;
  sa::SaTicket ticket_;
  bool finished_ = false;
  Status status_ = Status::SUCCESS;
  sa::SaAnswer answer_;
};

}  // namespace

Status SaSendRequest(const kernel::CallContext& ctx, const abi::SendSaRequestIn& in,
                     std::span<const uint8_t> attribute, kernel::SendSaRequestRefs& refs,
                     abi::SendSaRequestOut& out) {
  sa::SaRequest request;
  request.method = in.method;
  request.attribute_id = in.attribute_id;
  request.attribute_modifier = in.attribute_modifier;
  request.component_mask = in.component_mask;
  request.attribute = attribute;
  if (!sa::IsClientRequest(request)) return Status::INVALID_SETTING;
  sa::SaClient* client = sa::SaOf(InstanceOf(ctx)->al);
  sa::SaPort port;
  if (const Status s = client->FindPort(in.port_guid, &port); s != Status::SUCCESS) return s;

  auto* object = new SaReqObj(InstanceOf(ctx), in.context);
  if (!Adopt(object, refs.al.get())) {
    kernel::DereferenceObject(object);
    return Status::INVALID_AL_HANDLE;
  }
  kernel::ReferenceObject(object);  // kept to start the request once published
  kernel::ObjectRef hold(object);
  if (const Status s = Publish(InstanceOf(ctx), object, &out.req.value); s != Status::SUCCESS) {
    return s;
  }
  const bool cacheable = sa::PathCache::Cacheable(request);
  const bool bypass = (in.flags & abi::SaRequestFlags::BYPASS_CACHE) != abi::SaRequestFlags{};
  sa::PathCache& cache = client->path_cache();
  std::optional<sa::PathCache::Key> key;
  if (cacheable) {
    key = sa::PathCache::KeyOf(port.port_guid, request);
    if (bypass) {
      cache.CountBypass(port.port_guid);
    } else if (std::optional<sa::SaAnswer> cached = cache.Lookup(*key)) {
      object->Finish(Status::SUCCESS, *cached);
      return Status::SUCCESS;
    }
  }
  kernel::ReferenceObject(object);  // the request's, until it ends
  sa::SaTicket ticket;
  const Status status = client->Send(
      port, request, in.timeout_ms, in.retry_count,
      [object, key, &cache](Status result, const sa::SaAnswer& answer) {
        if (key && result == Status::SUCCESS) cache.Store(*key, answer);
        object->Finish(result, answer);
        kernel::DereferenceObject(object);
      },
      &ticket);
  if (status != Status::SUCCESS) {
    kernel::DereferenceObject(object);
    InstanceOf(ctx)->table.Destroy(out.req.value, abi::ObjectType::SaReq);
    out.req.value = 0;
    return Status::INSUFFICIENT_RESOURCES;
  }
  object->SetTicket(ticket);
  return Status::SUCCESS;
}

Status SaGetResponse(kernel::GetSaResponseRefs& refs, abi::GetSaResponseOut& out,
                     std::span<uint8_t> data, Irp* irp) {
  return static_cast<SaReqObj*>(refs.req.get())->Wait(irp, out, data);
}

Status SaPathCacheControl(const kernel::CallContext& ctx, const abi::PathCacheControlIn& in,
                          abi::PathCacheControlOut& out) {
  sa::SaClient* client = sa::SaOf(InstanceOf(ctx)->al);
  sa::SaPort port;
  const Status s = client->FindPort(in.port_guid, &port);
  if (s == Status::INVALID_GUID) return s;
  const uint64_t guid = be64toh(in.port_guid);
  const sa::PathCache::Stats stats = client->path_cache().Read(guid);
  out.hits = stats.hits;
  out.misses = stats.misses;
  out.invalidations = stats.invalidations;
  out.entries = stats.entries;
  if (in.flush != 0) client->path_cache().Invalidate(guid);
  return Status::SUCCESS;
}

}  // namespace softib::al

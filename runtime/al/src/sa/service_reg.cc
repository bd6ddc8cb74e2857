// RegisterService / DeregisterService (IBAL ib_reg_svc): a ServiceRecord Set kept by an
// SaReg object. A finite ServiceLease is renewed (the same Set) at half the lease while the
// registration lives; 0xFFFFFFFF is forever. DeregisterService, the file's end and a failed
// registration send the Delete.
#include <endian.h>

#include <cstring>

#include "runtime/al/src/sa/sa_membership.h"
#include "runtime/al/src/sa/sa_verbs.h"
#include "softib/kernel/timer.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

constexpr uint32_t kForever = 0xFFFFFFFF;
constexpr std::size_t kLeaseOffset = 28;

class SaRegObj final : public sa::SaMembership {
 public:
  SaRegObj(Instance* owner, const sa::SaPort& port, const abi::RegisterServiceIn& in)
      : SaMembership(abi::ObjectType::SaReg, owner, abi::kIoctlRegisterService, port, in.timeout_ms,
                     in.retry_count),
        mask_(in.component_mask) {
    std::memcpy(record_, in.record, sizeof record_);
    uint32_t lease;
    std::memcpy(&lease, record_ + kLeaseOffset, 4);
    lease_s_ = be32toh(lease);
    kernel::KeInitializeTimer(&timer_, owner->al->node);
    kernel::KeInitializeDpc(&dpc_, owner->al->node, &RenewDpc, this);
  }

  sa::SaRequest Request(uint8_t method) override {
    sa::SaRequest request;
    request.method = method;
    request.attribute_id = sa::kServiceRecordAttribute;
    request.component_mask = mask_;
    request.attribute = record_;
    return request;
  }

 private:
  Status Accepted(const sa::SaAnswer& answer, void* out) override {
    auto* o = static_cast<abi::RegisterServiceOut*>(out);
    std::memset(o->registered, 0, sizeof o->registered);
    std::memcpy(o->registered, answer.data.data(),
                std::min<std::size_t>(answer.data.size(), sizeof o->registered));
    return Status::SUCCESS;
  }

  void OnPublished() override { Arm(); }
  void OnRetold(const sa::SaAnswer&) override { renewals.fetch_add(1); }

  // The next renewal at half the lease (a lease of 1 s: every 500 ms).
  void Arm() {
    if (lease_s_ == 0 || lease_s_ == kForever) return;
    kernel::SpinLockGuard guard(lock_);
    if (ended_) return;
    Hold();
    if (kernel::KeSetTimer(&timer_, std::chrono::milliseconds(lease_s_ * 500ull), &dpc_)) {
      Release();  // it was armed already: one reference for one pending DPC
    }
  }

  static void RenewDpc(kernel::Kdpc*, void* context, void*, void*) {
    auto* self = static_cast<SaRegObj*>(context);
    bool ended;
    {
      kernel::SpinLockGuard guard(self->lock_);
      ended = self->ended_;
    }
    if (!ended) {
      self->Tell(sa::kSet);
      self->Arm();
    }
    self->Release();
  }

  void OnEnd() override {
    if (kernel::KeCancelTimer(&timer_)) Release();
  }

  std::atomic<uint32_t> renewals{0};
  const uint64_t mask_;
  uint8_t record_[abi::kServiceRecordBytes];
  uint32_t lease_s_ = 0;
  kernel::Ktimer timer_{};
  kernel::Kdpc dpc_{};
};

}  // namespace

Status SaRegisterService(const kernel::CallContext& ctx, const abi::RegisterServiceIn& in,
                         kernel::RegisterServiceRefs& refs, abi::RegisterServiceOut& out,
                         Irp* irp) {
  sa::SaPort port;
  if (const Status s = sa::SaOf(InstanceOf(ctx)->al)->FindPort(in.port_guid, &port);
      s != Status::SUCCESS) {
    return s;
  }
  auto* object = new SaRegObj(InstanceOf(ctx), port, in);
  return sa::StartMembership(ctx, object, refs.al.get(), Status::INVALID_AL_HANDLE, irp, out,
                             &out.reg.value, object->Request(sa::kSet));
}

Status SaDeregisterService(const kernel::CallContext& ctx, const abi::DeregisterServiceIn& in,
                           kernel::DeregisterServiceRefs&, Irp*) {
  // The Delete goes out from the object's end; the registration is gone at once.
  return DestroyHandle(ctx, in.reg.value, abi::ObjectType::SaReg, Status::INVALID_SA_REG_HANDLE);
}

}  // namespace softib::al

// Object lifetimes: counts, parent/uses links, and what OnDestroy gives back to the HCA.
#include "runtime/al/src/objects.h"

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/mad_service.h"

#include "softib/kernel/verb_support.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

uint32_t FunctionOf(uint32_t ioctl) { return (ioctl >> 2) & 0xFFF; }

// A release's CI IRP (a Build<CiRelease>Irp; null when the CA is gone, whose releases
// succeed anyway, or when no IRP could be had): sent, and the ticket goes once it
// completed. The AL sends releases as its own (KernelMode, no file): they name no memory.
// The status is not looked at: the object is gone for its owner either way (the HCA
// refuses a release only while the AL's own rules already answered RESOURCE_BUSY).
kernel::IrpTask SendRelease(std::shared_ptr<AlCa> ca, Irp* irp,
                            [[maybe_unused]] ReleaseTicket ticket) {  // goes at the end
  if (irp == nullptr) co_return;
  CiIrp ci(ca.get(), irp);
  (void)co_await ci.Send();
}

// The CA device a release goes to; null once the CA was removed (its device may be gone).
kernel::DeviceObject* ReleaseTarget(const AlCa* ca) {
  return ca->removed.load(std::memory_order_acquire) ? nullptr : ca->lower;
}

constexpr kernel::ProcessorMode kAlMode = kernel::ProcessorMode::kKernelMode;

}  // namespace

// ---- FileState: releases in flight -----------------------------------------------------------

void FileState::BeginRelease() { releasing_.fetch_add(1, std::memory_order_relaxed); }

// EndRelease and WhenIdle pair up without a lock on the common path (no waiter): each
// writes its own atomic, then reads the other's (sequentially consistent), so at least one
// of them sees the other and goes on under the lock, where the waiter changes hands once.
void FileState::EndRelease() {
  if (releasing_.fetch_sub(1, std::memory_order_seq_cst) != 1) return;
  if (!idle_waiting_.load(std::memory_order_seq_cst)) return;  // WhenIdle will see the zero
  std::function<void()> idle;
  {
    // Zero again under the lock: a release that began since then hands the waiter over at
    // its own end.
    kernel::SpinLockGuard guard(release_lock_);
    if (releasing_.load(std::memory_order_seq_cst) == 0) idle = std::exchange(idle_, nullptr);
  }
  if (idle) idle();
}

void FileState::WhenIdle(std::function<void()> idle) {
  {
    kernel::SpinLockGuard guard(release_lock_);
    idle_ = std::move(idle);
    idle_waiting_.store(true, std::memory_order_seq_cst);
    if (releasing_.load(std::memory_order_seq_cst) != 0) return;  // the last EndRelease runs it
    idle = std::exchange(idle_, nullptr);
  }
  if (idle) idle();
}

// ---- ReleaseTicket -----------------------------------------------------------------------------

ReleaseTicket::ReleaseTicket(AlObject* object) : file_(object->file_) {
  // OnDestroy of a Destroy: the destroyer's references keep it; of the last dereference
  // (an object never destroyed): nobody can wait for it, and it is deleted on return.
  if (object->reference_count() != 0) {
    kernel::ReferenceObject(object);
    object_ = object;
  }
  kernel::KernelObject* parent = object->parent();
  if (parent != nullptr && parent->TryAddChild()) {  // fails once the parent was forced
    kernel::ReferenceObject(parent);
    parent_ = parent;
  }
  file_->BeginRelease();
}

ReleaseTicket::ReleaseTicket(ReleaseTicket&& other) noexcept
    : object_(std::exchange(other.object_, nullptr)),
      parent_(std::exchange(other.parent_, nullptr)),
      uses_(other.uses_),
      num_uses_(std::exchange(other.num_uses_, 0)),
      file_(std::move(other.file_)) {}

void ReleaseTicket::TakeUse(kernel::KernelObject* used) {
  kernel::ReferenceObject(used);
  uses_[num_uses_++] = used;
}

ReleaseTicket::~ReleaseTicket() {
  if (file_ == nullptr) return;  // moved from
  for (std::size_t i = 0; i < num_uses_; ++i) {
    uses_[i]->RemoveChild();
    kernel::DereferenceObject(uses_[i]);
  }
  if (parent_ != nullptr) {
    parent_->RemoveChild();
    kernel::DereferenceObject(parent_);
  }
  std::vector<std::function<void()>> waiters;
  if (object_ != nullptr) {
    // As FileState's count and waiter: the release lock only once a waiter was set (the
    // destroy's own wait is skipped when the release completed inline, so mostly none).
    object_->released_.store(true, std::memory_order_seq_cst);
    if (object_->release_waiting_.load(std::memory_order_seq_cst)) {
      kernel::SpinLockGuard guard(object_->release_lock_);
      waiters.swap(object_->release_waiters_);
    }
    kernel::DereferenceObject(object_);  // frees it unless someone else still looks
  }
  for (auto& waiter : waiters) waiter();
  file_->EndRelease();
}

namespace {

kernel::VerbTask DestroyTask(Instance* instance, uint64_t handle, abi::ObjectType type,
                             Status invalid, kernel::ObjectRef ref) {
  // `ref`: the object, until its release is done. A verb's validation already looked it up
  // (HandleAccess::kDestroy, as here); a second lookup costs a lock round trip per destroy
  // (issue 17's control-path budget) and proves nothing more: Destroy below resolves the
  // handle again under the table's lock, so a destroy that raced this one still fails there.
  Status status = Status::SUCCESS;
  if (!ref) status = instance->table.Lookup(handle, type, kernel::HandleAccess::kDestroy, &ref);
  if (status == Status::SUCCESS) status = instance->table.Destroy(handle, type);
  if (status == Status::INVALID_HANDLE || status == Status::INVALID_STATE) co_return {invalid, 0};
  if (status != Status::SUCCESS) co_return {status, 0};
  auto* object = static_cast<AlObject*>(ref.get());
  if (object->Released()) co_return {Status::SUCCESS, 0};  // inline: nothing to wait for
  co_await AwaitDone(
      [object](std::function<void()> resume) { object->WhenReleased(std::move(resume)); });
  co_return {Status::SUCCESS, 0};
}

}  // namespace

Status DestroyReleasing(const kernel::CallContext& ctx, uint64_t handle, abi::ObjectType type,
                        Status invalid, Irp* irp) {
  return DestroyTask(InstanceOf(ctx), handle, type, invalid, {}).Start(irp);
}

Status DestroyReleasing(const kernel::CallContext& ctx, kernel::ObjectRef held, uint64_t handle,
                        abi::ObjectType type, Status invalid, Irp* irp) {
  return DestroyTask(InstanceOf(ctx), handle, type, invalid, std::move(held)).Start(irp);
}

void AlObject::WhenReleased(std::function<void()> done) {
  std::vector<std::function<void()>> ready;
  {
    kernel::SpinLockGuard guard(release_lock_);
    release_waiters_.push_back(std::move(done));
    release_waiting_.store(true, std::memory_order_seq_cst);
    if (!released_.load(std::memory_order_seq_cst)) return;  // the ticket's end runs it
    ready.swap(release_waiters_);  // released meanwhile (or its end saw no waiter)
  }
  for (auto& waiter : ready) waiter();
}

AlObject::AlObject(abi::ObjectType type, Instance* owner)
    : KernelObject(type), al_(owner->al), file_(owner->state) {
  const auto t = static_cast<std::size_t>(type);
  al_->node_counts.by_type[t].fetch_add(1, std::memory_order_relaxed);
  file_->counts.by_type[t].fetch_add(1, std::memory_order_relaxed);
}

AlObject::~AlObject() {
  const auto t = static_cast<std::size_t>(type());
  al_->node_counts.by_type[t].fetch_sub(1, std::memory_order_relaxed);
  file_->counts.by_type[t].fetch_sub(1, std::memory_order_relaxed);
}

Status Publish(Instance* instance, AlObject* object, uint64_t* handle) {
  const Status status = instance->table.Insert(object, handle);
  if (status == Status::SUCCESS) {
    object->handle.store(*handle, std::memory_order_release);
  } else {
    object->Destroy();
  }
  kernel::DereferenceObject(object);
  return status;
}

// ---- Waitable ------------------------------------------------------------------------------

Waitable::Waitable(abi::ObjectType type, Instance* owner, uint32_t ioctl)
    : AlObject(type, owner),
      waiters(owner->al->node, &owner->al->pending, &owner->state->completing),
      function(FunctionOf(ioctl)),
      owner_(owner) {
  kernel::SpinLockGuard guard(owner->waitables_lock);
  owner->waitables.insert(this);
}

void Waitable::StopWaiting() {
  {
    kernel::SpinLockGuard guard(owner_->waitables_lock);
    owner_->waitables.erase(this);
  }
  waiters.CancelAll();
}

// ---- Al --------------------------------------------------------------------------------------

AlObj::AlObj(Instance* owner) : Waitable(abi::ObjectType::Al, owner, abi::kIoctlGetAsyncEvent) {}

void AlObj::OnDestroy() { StopWaiting(); }

void AlObj::Post(const abi::AsyncEventRecord& record) {
  if (!destroyed()) events_.Post(waiters, record);
}

Status AlObj::Wait(Irp* irp, abi::GetAsyncEventOut& out) { return events_.Wait(waiters, irp, out); }

// ---- Ca --------------------------------------------------------------------------------------

CaObj::CaObj(Instance* owner, std::shared_ptr<AlCa> ca_in, uint64_t context_in)
    : AlObject(abi::ObjectType::Ca, owner), ca(std::move(ca_in)), context(context_in) {}

void CaObj::OnDestroy() {
  {
    kernel::SpinLockGuard guard(ca->lock);
    ca->opens.erase(this);
  }
  ClearIsSm(ca, is_sm_ports.exchange(0), ReleaseTicket(this));
}

// One CiModifyCa IRP per port where this open set IsSM, one after the other.
kernel::IrpTask CaObj::ClearIsSm(std::shared_ptr<AlCa> ca, uint32_t ports,
                                 [[maybe_unused]] ReleaseTicket ticket) {
  for (uint8_t port = 1; port < 32; ++port) {
    if ((ports & (1u << port)) == 0) continue;
    kernel::DeviceObject* target = ReleaseTarget(ca.get());
    if (target == nullptr) co_return;
    abi::CiModifyCaIn in{};
    in.port = port;
    in.flags = abi::ModifyCaFlags::PORT_CAPABILITIES;
    in.cap_clear = abi::PortCapabilities::IS_SM;
    CiIrp ci(ca.get(), kernel::BuildCiModifyCaIrp(target, nullptr, kAlMode, in));
    if (ci.built()) (void)co_await ci.Send();
  }
}

// ---- Pd, Av, Mr -----------------------------------------------------------------------------
// The releases (CiFreePd, CiDestroyAh, CiDeregisterMr, CiDestroyCq, CiDestroyQp,
// CiDestroySrq, CiDestroyMw, CiDetachMcast, and CaObj's IsSM clear) are CI IRPs, in two
// phases (ReleaseTicket): the parent stays busy until the child's IRP completed.

PdObj::PdObj(Instance* owner, CaObj* ca, uint32_t pd_in)
    : AlObject(abi::ObjectType::Pd, owner), ca_obj(ca), pd(pd_in) {}

void PdObj::OnDestroy() {
  const std::shared_ptr<AlCa>& ca = ca_obj->ca;
  kernel::DeviceObject* target = ReleaseTarget(ca.get());
  SendRelease(
      ca, target != nullptr ? kernel::BuildCiFreePdIrp(target, nullptr, kAlMode, {pd}) : nullptr,
      ReleaseTicket(this));
}

AvObj::AvObj(Instance* owner, PdObj* pd, uint32_t ah_in, const abi::AddressVector& av_in)
    : AlObject(abi::ObjectType::Av, owner), pd_obj(pd), ah(ah_in), av(av_in) {}

void AvObj::EnterModify(std::function<void()> go) {
  {
    kernel::SpinLockGuard guard(lock);
    if (modifying_) {
      modify_queue_.push_back(std::move(go));
      return;
    }
    modifying_ = true;
  }
  go();
}

void AvObj::ExitModify() {
  std::function<void()> next;
  {
    kernel::SpinLockGuard guard(lock);
    if (modify_queue_.empty()) {
      modifying_ = false;
      return;
    }
    next = std::move(modify_queue_.front());
    modify_queue_.pop_front();
  }
  next();
}

void AvObj::OnDestroy() {
  const std::shared_ptr<AlCa>& ca = pd_obj->ca_obj->ca;
  kernel::DeviceObject* target = ReleaseTarget(ca.get());
  uint32_t current;
  {
    kernel::SpinLockGuard guard(lock);
    current = ah;
  }
  SendRelease(ca,
              target != nullptr ? kernel::BuildCiDestroyAhIrp(target, nullptr, kAlMode, {current})
                                : nullptr,
              ReleaseTicket(this));
}

MrObj::MrObj(Instance* owner, PdObj* pd, uint32_t key_in, const abi::MrRegion& region_in,
             CiRequestor memory_in)
    : AlObject(abi::ObjectType::Mr, owner),
      ca(pd->ca_obj->ca.get()),
      memory(memory_in),
      key(key_in),
      region(region_in),
      pd_obj(pd) {}

void MrObj::OnDestroy() {
  uint32_t current;
  std::shared_ptr<AlCa> owner;  // the same AlCa as `ca`, shared
  {
    kernel::SpinLockGuard guard(lock);
    current = key;
    owner = pd_obj->ca_obj->ca;
  }
  kernel::DeviceObject* target = ReleaseTarget(ca);
  SendRelease(owner,
              target != nullptr
                  ? kernel::BuildCiDeregisterMrIrp(target, nullptr, kAlMode, {current})
                  : nullptr,
              ReleaseTicket(this));
}

// ---- Cq --------------------------------------------------------------------------------------

CqObj::CqObj(Instance* owner, CaObj* ca, uint32_t number_in, uint64_t context_in)
    : Waitable(abi::ObjectType::Cq, owner, abi::kIoctlGetCompletionEvent),
      ca_obj(ca),
      number(number_in),
      context(context_in) {}

CqObj::~CqObj() = default;

void CqObj::Register() {
  kernel::SpinLockGuard guard(ca_obj->ca->lock);
  ca_obj->ca->cqs[number] = this;
}

void CqObj::OnDestroy() {
  {
    kernel::SpinLockGuard guard(ca_obj->ca->lock);
    auto it = ca_obj->ca->cqs.find(number);
    if (it != ca_obj->ca->cqs.end() && it->second == this) ca_obj->ca->cqs.erase(it);
  }
  StopWaiting();
  // The CQ is freed once the HCA says no completion DPC of it can run any more.
  const std::shared_ptr<AlCa>& ca = ca_obj->ca;
  kernel::DeviceObject* target = ReleaseTarget(ca.get());
  SendRelease(
      ca,
      target != nullptr ? kernel::BuildCiDestroyCqIrp(target, nullptr, kAlMode, {number}) : nullptr,
      ReleaseTicket(this));
}

void CqObj::Notify() {
  if (destroyed()) return;
  {
    kernel::SpinLockGuard guard(lock_);
    ++unclaimed_;
  }
  Pump();
}

void CqObj::Pump() {
  Irp* irp;
  uint32_t count;
  {
    kernel::SpinLockGuard guard(lock_);
    if (unclaimed_ == 0) return;
    irp = waiters.Remove();
    if (irp == nullptr) return;
    count = unclaimed_;
    unclaimed_ = 0;
  }
  // Where the waiting call wants its output (system buffer or caller's struct).
  auto* out = static_cast<abi::GetCompletionEventOut*>(irp->DriverContext[1]);
  *out = abi::GetCompletionEventOut{};
  out->context = context;
  out->event_count = count;
  waiters.Complete(irp, Status::SUCCESS, sizeof(*out));
}

Status CqObj::Wait(Irp* irp, abi::GetCompletionEventOut& out) {
  {
    kernel::SpinLockGuard guard(lock_);
    if (unclaimed_ != 0) {
      out.context = context;
      out.event_count = unclaimed_;
      unclaimed_ = 0;
      return Status::SUCCESS;
    }
  }
  if (irp == nullptr) return Status::CANCELED;
  irp->DriverContext[1] = &out;
  const Status status = waiters.Insert(irp);
  Pump();
  return status;
}

// ---- Qp --------------------------------------------------------------------------------------

QpObj::QpObj(Instance* owner, PdObj* pd, CqObj* scq, CqObj* rcq, SrqObj* srq_in, uint32_t qpn_in,
             uint32_t qp_num_in, abi::QpType type_in, uint64_t context_in, uint8_t port_in)
    : AlObject(abi::ObjectType::Qp, owner),
      pd_obj(pd),
      send_cq(scq),
      recv_cq(rcq),
      srq(srq_in),
      qpn(qpn_in),
      qp_num(qp_num_in),
      type(type_in),
      context(context_in),
      port(port_in) {
  kernel::ReferenceObject(send_cq);
  kernel::ReferenceObject(recv_cq);
  if (srq != nullptr) kernel::ReferenceObject(srq);
}

QpObj::~QpObj() {
  if (mad_qp) ReleaseMadQp(pd_obj->ca_obj->ca, std::move(mad_qp));  // never published
  kernel::DereferenceObject(send_cq);
  kernel::DereferenceObject(recv_cq);
  if (srq != nullptr) kernel::DereferenceObject(srq);
}

void QpObj::Register() {
  if (alias()) return;  // no device QP: no events of its own
  if (mad_qp) pd_obj->ca_obj->ca->AddMadQp(mad_qp);
  kernel::SpinLockGuard guard(pd_obj->ca_obj->ca->lock);
  pd_obj->ca_obj->ca->qps[qpn] = this;
}

void QpObj::OnDestroy() {
  AlCa* ca = pd_obj->ca_obj->ca.get();
  {
    kernel::SpinLockGuard guard(ca->lock);
    auto it = ca->qps.find(qpn);
    if (it != ca->qps.end() && it->second == this) ca->qps.erase(it);
  }
  // The uses of the CQs and SRQ go with the device QP: the HCA refuses their releases
  // while it lives.
  ReleaseTicket ticket(this);
  ticket.TakeUse(send_cq);
  ticket.TakeUse(recv_cq);
  if (srq != nullptr) ticket.TakeUse(srq);
  kernel::DeviceObject* target = nullptr;
  if (mad_qp) {
    ReleaseMadQp(pd_obj->ca_obj->ca, std::move(mad_qp));  // its engine owns the device QP
  } else if (!alias()) {
    target = ReleaseTarget(ca);
  }
  SendRelease(
      pd_obj->ca_obj->ca,
      target != nullptr ? kernel::BuildCiDestroyQpIrp(target, nullptr, kAlMode, {qpn}) : nullptr,
      std::move(ticket));
}

// ---- Srq, Mw, Mcast -------------------------------------------------------------------------

SrqObj::SrqObj(Instance* owner, PdObj* pd, uint32_t number_in, uint64_t context_in)
    : AlObject(abi::ObjectType::Srq, owner), pd_obj(pd), number(number_in), context(context_in) {}

void SrqObj::Register() {
  kernel::SpinLockGuard guard(pd_obj->ca_obj->ca->lock);
  pd_obj->ca_obj->ca->srqs[number] = this;
}

void SrqObj::OnDestroy() {
  AlCa* ca = pd_obj->ca_obj->ca.get();
  {
    kernel::SpinLockGuard guard(ca->lock);
    auto it = ca->srqs.find(number);
    if (it != ca->srqs.end() && it->second == this) ca->srqs.erase(it);
  }
  kernel::DeviceObject* target = ReleaseTarget(ca);
  SendRelease(pd_obj->ca_obj->ca,
              target != nullptr ? kernel::BuildCiDestroySrqIrp(target, nullptr, kAlMode, {number})
                                : nullptr,
              ReleaseTicket(this));
}

MwObj::MwObj(Instance* owner, PdObj* pd, uint32_t mw_in, abi::MwType type_in)
    : AlObject(abi::ObjectType::Mw, owner), pd_obj(pd), mw(mw_in), type(type_in) {}

void MwObj::OnDestroy() {
  const std::shared_ptr<AlCa>& ca = pd_obj->ca_obj->ca;
  kernel::DeviceObject* target = ReleaseTarget(ca.get());
  SendRelease(
      ca, target != nullptr ? kernel::BuildCiDestroyMwIrp(target, nullptr, kAlMode, {mw}) : nullptr,
      ReleaseTicket(this));
}

McastObj::McastObj(Instance* owner, QpObj* qp, const abi::Gid& mgid_in, uint16_t mlid_in)
    : AlObject(abi::ObjectType::Mcast, owner), qp_obj(qp), mgid(mgid_in), mlid(mlid_in) {}

void McastObj::OnDestroy() {
  const std::shared_ptr<AlCa>& ca = qp_obj->pd_obj->ca_obj->ca;
  kernel::DeviceObject* target = ReleaseTarget(ca.get());
  abi::CiDetachMcastIn in{};
  in.qpn = qp_obj->qpn;
  in.mlid = mlid;
  in.mgid = mgid;
  SendRelease(
      ca, target != nullptr ? kernel::BuildCiDetachMcastIrp(target, nullptr, kAlMode, in) : nullptr,
      ReleaseTicket(this));
}

// ---- PnpReg ----------------------------------------------------------------------------------

PnpRegObj::PnpRegObj(Instance* owner, abi::PnpClass pnp_class_in, uint64_t context_in)
    : Waitable(abi::ObjectType::PnpReg, owner, abi::kIoctlGetPnpEvent),
      pnp_class(pnp_class_in),
      context(context_in) {}

void PnpRegObj::Register() {
  kernel::SpinLockGuard guard(al_->lock);
  al_->pnp_regs.insert(this);
}

void PnpRegObj::OnDestroy() {
  {
    kernel::SpinLockGuard guard(al_->lock);
    al_->pnp_regs.erase(this);
  }
  StopWaiting();
}

void PnpRegObj::Post(abi::PnpEventRecord record) {
  if (destroyed()) return;
  record.pnp_context = context;
  record.reg.value = handle;
  events_.Post(waiters, record);
}

Status PnpRegObj::Wait(Irp* irp, abi::GetPnpEventOut& out) {
  return events_.Wait(waiters, irp, out);
}

}  // namespace softib::al

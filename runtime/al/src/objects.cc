// Object lifetimes: counts, parent/uses links, and what OnDestroy gives back to the HCA.
#include "runtime/al/src/objects.h"

#include "runtime/al/src/mad_service.h"

#include "softib/kernel/verb_support.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

uint32_t FunctionOf(uint32_t ioctl) { return (ioctl >> 2) & 0xFFF; }
}  // namespace

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
  const uint32_t ports = is_sm_ports.exchange(0);
  for (uint8_t port = 1; port < 32; ++port)
    if (ports & (1u << port))
      (void)ca->ci->ModifyCa(port, abi::ModifyCaFlags::PORT_CAPABILITIES, {},
                             abi::PortCapabilities::IS_SM, 0, 0);
}

// ---- Pd, Av, Mr -----------------------------------------------------------------------------
// The releases below (FreePd, DestroyAh, DeregisterMr, DestroyCq, DestroyQp, DestroySrq,
// DestroyMw, DetachMcast, and CaObj's IsSM clear) are still direct calls on ci::CaInterface,
// not CI IRPs (issue 17 not finished here): KernelObject::Destroy drops the parent's child
// count as soon as OnDestroy returns, so a release that pended at the HCA would let the
// parent's own release (or a CQ's, after its QP) overtake it there and fail busy. Sending
// them as IRPs needs a two-phase destroy in the object manager first (the parent released
// when the child's CI release completed; file cleanup waiting for each chain at PASSIVE).

PdObj::PdObj(Instance* owner, CaObj* ca, uint32_t pd_in)
    : AlObject(abi::ObjectType::Pd, owner), ca_obj(ca), pd(pd_in) {}

void PdObj::OnDestroy() { ca_obj->ca->ci->FreePd(pd); }

AvObj::AvObj(Instance* owner, PdObj* pd, uint32_t ah_in, const abi::AddressVector& av_in)
    : AlObject(abi::ObjectType::Av, owner), pd_obj(pd), ah(ah_in), av(av_in) {}

void AvObj::OnDestroy() { pd_obj->ca_obj->ca->ci->DestroyAh(ah); }

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
  {
    kernel::SpinLockGuard guard(lock);
    current = key;
  }
  ca->ci->DeregisterMr(current);
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
  ca_obj->ca->ci->DestroyCq(number);
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
  if (mad_qp) {
    ReleaseMadQp(pd_obj->ca_obj->ca, std::move(mad_qp));
  } else if (!alias()) {
    ca->ci->DestroyQp(qpn);
  }
  send_cq->RemoveChild();
  recv_cq->RemoveChild();
  if (srq != nullptr) srq->RemoveChild();
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
  ca->ci->DestroySrq(number);
}

MwObj::MwObj(Instance* owner, PdObj* pd, uint32_t mw_in, abi::MwType type_in)
    : AlObject(abi::ObjectType::Mw, owner), pd_obj(pd), mw(mw_in), type(type_in) {}

void MwObj::OnDestroy() { pd_obj->ca_obj->ca->ci->DestroyMw(mw); }

McastObj::McastObj(Instance* owner, QpObj* qp, const abi::Gid& mgid_in, uint16_t mlid_in)
    : AlObject(abi::ObjectType::Mcast, owner), qp_obj(qp), mgid(mgid_in), mlid(mlid_in) {}

void McastObj::OnDestroy() { qp_obj->pd_obj->ca_obj->ca->ci->DetachMcast(qp_obj->qpn, mgid, mlid); }

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

// MAD pool and MAD service objects: registration on the port's special QP, the event
// queue behind GetMadEvent.
#include "runtime/al/src/mad_service.h"

#include <algorithm>
#include <cstring>

#include "runtime/al/src/mad_format.h"
#include "softib/kernel/verb_support.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {
constexpr std::size_t kMaxQueuedEvents = 4096;  // without a pool limit
}

MadPoolObj::MadPoolObj(Instance* owner, uint32_t min_in, uint32_t max_in)
    : AlObject(abi::ObjectType::MadPool, owner), min_elements(min_in), max_elements(max_in) {}

MadSvcObj::MadSvcObj(Instance* owner, QpObj* qp, MadPoolObj* pool_in, SpecialQp* sqp_in,
                     const abi::MadSvcParams& params_in)
    : Waitable(abi::ObjectType::MadSvc, owner, abi::kIoctlGetMadEvent),
      MadAgent(params_in),
      qp_obj(qp),
      pool(pool_in),
      sqp(sqp_in) {
  kernel::ReferenceObject(pool);
}

MadSvcObj::~MadSvcObj() { kernel::DereferenceObject(pool); }

std::shared_ptr<MadSend> MakeMadSend(MadAgent* agent, std::span<const uint8_t> bytes,
                                     const MadSendSpec& spec) {
  auto send = std::make_shared<MadSend>();
  send->to = spec.to;
  send->mad.assign(bytes.begin(), bytes.end());
  send->context = spec.context;
  send->mgmt_class = mad::Class(bytes.data());
  send->response_expected = spec.response_expected;
  send->timeout_ms = spec.timeout_ms;
  send->retries_left = spec.retries;
  if (!mad::IsResponse(send->mad.data())) {
    const uint64_t tid =
        (uint64_t{agent->agent_id} << 32) | (mad::Tid(send->mad.data()) & 0xFFFFFFFF);
    mad::SetTid(send->mad.data(), tid);
  }
  send->tid = mad::Tid(send->mad.data());
  if (spec.segmented) send->rmpp = std::make_unique<RmppSender>(send->mad, spec.retries);
  send->svc = AgentRef(agent);
  return send;
}

SpecialQp* SpecialQpOf(QpObj* qp) {
  if (qp->mad_qp) return qp->mad_qp.get();
  AlCa* ca = qp->pd_obj->ca_obj->ca.get();
  const bool smi = qp->type == abi::QpType::SMI_ALIAS;
  if (!smi && qp->type != abi::QpType::GSI_ALIAS) return nullptr;
  const std::size_t index = (qp->port - 1u) * 2u + (smi ? 0u : 1u);
  if (qp->port == 0 || index >= ca->special_qps.size()) return nullptr;
  return ca->special_qps[index].get();
}

void MadSvcObj::OnDestroy() {
  sqp->RemoveService(this);
  StopWaiting();
  pool->RemoveChild();
  kernel::SpinLockGuard guard(events_lock_);
  events_.clear();
}

Status MadSvcObj::Fill(const Event& event, abi::GetMadEventOut& out, std::span<uint8_t> mad) {
  out.event = event.record;
  out.mad_length = static_cast<uint32_t>(event.mad.size());
  if (event.mad.size() > mad.size()) return Status::INSUFFICIENT_MEMORY;
  if (!event.mad.empty()) std::memcpy(mad.data(), event.mad.data(), event.mad.size());
  return Status::SUCCESS;
}

void MadSvcObj::Post(const abi::MadEventRecord& record, std::vector<uint8_t> mad) {
  if (destroyed()) return;
  {
    kernel::SpinLockGuard guard(events_lock_);
    const std::size_t limit = pool->max_elements != 0 ? pool->max_elements : kMaxQueuedEvents;
    // A full pool drops the oldest received MAD; send completions are always kept.
    if (record.kind == abi::MadEventKind::RECEIVED && events_.size() >= limit) {
      auto old = std::find_if(events_.begin(), events_.end(), [](const Event& e) {
        return e.record.kind == abi::MadEventKind::RECEIVED;
      });
      if (old != events_.end()) events_.erase(old);
    }
    events_.push_back(Event{record, std::move(mad)});
  }
  Pump();
}

// A waiting IRP keeps where its output goes: DriverContext[1] the record, [2]/[3] the MAD
// area and its size.
void MadSvcObj::Pump() {
  for (;;) {
    Irp* irp;
    Status status;
    uint64_t information = 0;
    {
      kernel::SpinLockGuard guard(events_lock_);
      if (events_.empty()) return;
      irp = waiters.Remove();
      if (irp == nullptr) return;
      auto* out = static_cast<abi::GetMadEventOut*>(irp->DriverContext[1]);
      const std::span<uint8_t> area(static_cast<uint8_t*>(irp->DriverContext[2]),
                                    reinterpret_cast<uintptr_t>(irp->DriverContext[3]));
      status = Fill(events_.front(), *out, area);
      if (status == Status::SUCCESS) {
        information = sizeof(*out) + out->mad_length;
        events_.pop_front();
      }
    }
    waiters.Complete(irp, status, information);
  }
}

Status MadSvcObj::Wait(Irp* irp, abi::GetMadEventOut& out, std::span<uint8_t> mad) {
  {
    kernel::SpinLockGuard guard(events_lock_);
    if (!events_.empty()) {
      const Status status = Fill(events_.front(), out, mad);
      if (status == Status::SUCCESS) events_.pop_front();
      return status;
    }
  }
  if (irp == nullptr) return Status::CANCELED;
  irp->DriverContext[1] = &out;
  irp->DriverContext[2] = mad.data();
  irp->DriverContext[3] = reinterpret_cast<void*>(static_cast<uintptr_t>(mad.size()));
  const Status status = waiters.Insert(irp);
  Pump();
  return status;
}

}  // namespace softib::al

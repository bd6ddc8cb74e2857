// MAD QPs (IBAL's IB_QPT_MAD): a UD QP a client creates with CreateQp and brings up with
// ModifyQp (its port, P_Key index and Q_Key: e.g. the Q_Key a ClassPortInfo redirect names),
// whose MADs run through the AL's MAD layer exactly like QP1's: the AL owns the device QP,
// its CQ, receive buffers and send slots (a SpecialQp of type MAD), and the client registers
// MAD services on the QP object. The client's CQs are counted as used but get nothing.
#include <endian.h>

#include "kernel/hca/ci_irp.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/mad_handlers.h"
#include "runtime/al/src/mad_service.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/work_item.h"

namespace softib::al {

using kernel::Status;

// After the device took the client's ModifyQp: RESET->INIT posts the receive buffers and
// fixes the port; RESET discarded them (and the sends on the wire, which complete flushed).
void SpecialQp::OnModified(const abi::QpModifyAttributes& a) {
  if (type_ != abi::QpType::MAD || (a.mask & abi::QpAttrMask::STATE) != abi::QpAttrMask::STATE)
    return;
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    if (stopped_) return;
    if (a.state == abi::QpState::RESET) {
      receiving_ = false;
      for (uint32_t i = 0; i < slots_.size(); ++i) {
        Slot slot = std::exchange(slots_[i], Slot{});
        if (slot.ah == nullptr) continue;
        std::erase(slot.ah->waiting, i);  // not posted yet: it never will be
        ReleaseAhLocked(slot.ah);
        free_slots_.push_back(i);
        if (slot.send && --slot.send->on_wire == 0) {
          Finish(slot.send, abi::WcStatus::WR_FLUSH_ERR, after);
        }
      }
    } else if (a.state == abi::QpState::INIT && !receiving_) {
      if ((a.mask & abi::QpAttrMask::PORT) == abi::QpAttrMask::PORT) port_ = a.port_num;
      receiving_ = true;
      for (uint32_t i = 0; i < kRecvDepth; ++i) PostRecv(i);
    }
  }
  for (auto& f : after) f();
}

void AlCa::AddMadQp(const std::shared_ptr<SpecialQp>& qp) {
  kernel::SpinLockGuard guard(lock);
  mad_qps[qp->cq()] = qp;
}

std::shared_ptr<SpecialQp> AlCa::MadQpOfCq(uint32_t cq) {
  kernel::SpinLockGuard guard(lock);
  auto it = mad_qps.find(cq);
  return it != mad_qps.end() ? it->second : nullptr;
}

namespace {
struct Release {
  std::shared_ptr<AlCa> ca;  // the QP's CA outlives its stop
  std::shared_ptr<SpecialQp> qp;
  kernel::IoWorkItem* item;
};
}  // namespace

// Out of the CA's table and stopped; the rest of Stop (which waits for the QP's DPCs and
// for its CI release IRPs) runs at PASSIVE: here when the caller is, else from a work item.
//
// Why the work item stays (issue 17 asked): DestroyQp of a MAD QP is callable at DISPATCH,
// and SpecialQp::Stop must not free the QP's timer and completion DPC objects, nor give the
// CI back the CQ, MR and PD its DPCs still use, until those DPCs have run. The only way the
// emulated kernel offers to learn that is KeFlushQueuedDpcs, which waits (PASSIVE only).
// Stop's releases are CI IRPs now (CiDestroyAh, CiDeregisterMr, CiDestroyCq, CiFreePd), and
// Stop waits for them as a removal waits for its outstanding I/O (the CQ and MR must be
// gone before the PD). What would let the work item go: an asynchronous DPC flush in
// runtime/kernel (a completion, e.g. a DPC or IRP, queued once every DPC queued before it
// has run), or SpecialQp counting its DPC routines in flight behind dpc_gate_ so that the
// last one out starts the release chain; then Stop's second half would be an IrpTask
// continuing in its IRPs' completions instead of waiting.
void ReleaseMadQp(const std::shared_ptr<AlCa>& ca, std::shared_ptr<SpecialQp> qp) {
  {
    kernel::SpinLockGuard guard(ca->lock);
    auto it = ca->mad_qps.find(qp->cq());
    if (it != ca->mad_qps.end() && it->second == qp) ca->mad_qps.erase(it);
  }
  qp->Close();
  if (kernel::CurrentIrql() == kernel::Irql::kPassive) {
    qp->Stop();
    return;
  }
  auto* release = new Release{ca, std::move(qp), kernel::IoAllocateWorkItem(ca->al->device)};
  kernel::IoQueueWorkItem(
      release->item,
      [](kernel::DeviceObject*, void* context) {
        auto* r = static_cast<Release*>(context);
        r->qp->Stop();
        kernel::IoFreeWorkItem(r->item);
        delete r;
      },
      release);
}

}  // namespace softib::al

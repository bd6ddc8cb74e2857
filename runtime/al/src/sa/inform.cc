// SubscribeReport / GetReport / UnsubscribeReport (IBAL ib_reg_svc's sibling for traps:
// an InformInfo Set, IBA 13.4.8.3): the subscription asks the SA for the generic trap
// `trap_number` of any port (LIDRangeBegin 0xFFFF) sent to QP1, where the AL's SA agent
// answers every Report with a ReportResponse and gives its Notice to the subscriptions of
// the port (sa_client.cc). Notices wait for GetReport (bounded, the oldest dropped). The
// end of the subscription sends InformInfo with Subscribe 0 — unless another subscription
// of the port still asks for the same trap (the SA keeps one per subscriber and InformInfo).
#include <endian.h>

#include <array>
#include <cstring>
#include <deque>

#include "runtime/al/src/sa/sa_membership.h"
#include "runtime/al/src/sa/sa_verbs.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

constexpr std::size_t kMaxQueuedNotices = 256;
using Notice = std::array<uint8_t, abi::kNoticeBytes>;

class SaInformObj final : public sa::SaMembership {
 public:
  SaInformObj(Instance* owner, const sa::SaPort& port, const abi::SubscribeReportIn& in)
      : SaMembership(abi::ObjectType::SaInform, owner, abi::kIoctlGetReport, port, in.timeout_ms,
                     in.retry_count),
        trap_(in.trap_number),
        subscribe_(sa::InformInfo(trap_, true)),
        unsubscribe_(sa::InformInfo(trap_, false)) {}

  // InformInfo (IBA 13.4.8.3): any GID and LID, generic, the trap, QP1, any type/producer;
  // Subscribe 1, or 0 to end it (the Delete of a subscription is a Set too). Both built at
  // construction: redo and the end may ask at once.
  sa::SaRequest Request(uint8_t method) override {
    sa::SaRequest request;
    request.method = sa::kSet;
    request.attribute_id = sa::kInformInfoAttribute;
    request.attribute = std::span<const uint8_t>(method == sa::kDelete ? unsubscribe_ : subscribe_);
    return request;
  }

  uint16_t trap() const { return trap_; }

  Status Wait(Irp* irp, abi::GetReportOut& out) {
    {
      kernel::SpinLockGuard guard(lock_);
      if (!notices_.empty()) {
        std::memcpy(out.notice, notices_.front().data(), sizeof out.notice);
        notices_.pop_front();
        return Status::SUCCESS;
      }
    }
    if (irp == nullptr) return Status::CANCELED;
    irp->DriverContext[1] = &out;
    const Status status = waiters.Insert(irp);
    Pump();
    return status;
  }

 private:
  Status Accepted(const sa::SaAnswer&, void*) override { return Status::SUCCESS; }

  // The SA holds one subscription per port and InformInfo: it stays while another
  // subscription of the port (this one is already off the list) asks for the same trap.
  bool ShouldUndo() override {
    bool shared = false;
    for (sa::SaRedo* entry : sa::SaOf(al_)->HeldOnPort(port().ca->guid, port().port)) {
      if (auto* other = dynamic_cast<SaInformObj*>(entry); other && other->trap() == trap_) {
        shared = true;
      }
      entry->Release();
    }
    return !shared;
  }

  void OnReport(std::span<const uint8_t> notice) override {
    if (notice.size() < abi::kNoticeBytes) return;
    // Generic notices carry the trap number in bytes 4..5 (IBA 13.4.8.2).
    const uint16_t number = static_cast<uint16_t>(notice[4] << 8 | notice[5]);
    if ((notice[0] & 0x80) == 0 || (trap_ != 0xFFFF && number != trap_)) return;
    {
      kernel::SpinLockGuard guard(lock_);
      if (ended_ || !published_) return;
      if (notices_.size() == kMaxQueuedNotices) notices_.pop_front();
      Notice copy;
      std::memcpy(copy.data(), notice.data(), copy.size());
      notices_.push_back(copy);
    }
    Pump();
  }

  void Pump() {
    for (;;) {
      Irp* irp;
      {
        kernel::SpinLockGuard guard(lock_);
        if (notices_.empty() || !published_) return;
        irp = waiters.Remove();
        if (irp == nullptr) return;
        auto* out = static_cast<abi::GetReportOut*>(irp->DriverContext[1]);
        std::memcpy(out->notice, notices_.front().data(), sizeof out->notice);
        notices_.pop_front();
      }
      waiters.Complete(irp, Status::SUCCESS, sizeof(abi::GetReportOut));
    }
  }

  const uint16_t trap_;
  const std::array<uint8_t, sa::kInformInfoBytes> subscribe_, unsubscribe_;
  std::deque<Notice> notices_;  // lock_
};

}  // namespace

Status SaSubscribeReport(const kernel::CallContext& ctx, const abi::SubscribeReportIn& in,
                         kernel::SubscribeReportRefs& refs, abi::SubscribeReportOut& out,
                         Irp* irp) {
  sa::SaPort port;
  if (const Status s = sa::SaOf(InstanceOf(ctx)->al)->FindPort(in.port_guid, &port);
      s != Status::SUCCESS) {
    return s;
  }
  auto* object = new SaInformObj(InstanceOf(ctx), port, in);
  return sa::StartMembership(ctx, object, refs.al.get(), Status::INVALID_AL_HANDLE, irp, out,
                             &out.inform.value, object->Request(sa::kSet));
}

Status SaGetReport(kernel::GetReportRefs& refs, abi::GetReportOut& out, Irp* irp) {
  return static_cast<SaInformObj*>(refs.inform.get())->Wait(irp, out);
}

Status SaUnsubscribeReport(const kernel::CallContext& ctx, const abi::UnsubscribeReportIn& in) {
  return DestroyHandle(ctx, in.inform.value, abi::ObjectType::SaInform,
                       Status::INVALID_SA_INFORM_HANDLE);
}

}  // namespace softib::al

// JoinMcast / LeaveMcast (IBAL ib_join_mcast): an MCMemberRecord Set; once the SA answered,
// the UD QP is attached to the group's MGID/MLID by a CiAttachMcast IRP (not for send-only
// members, which only send to the MLID), and the verb completes with the attach's answer.
// LeaveMcast (or the file's end) detaches (a CiDetachMcast IRP, the QP kept busy until it
// completed) and sends the Delete with the same JoinState. After an SM change the join is
// sent again and the QP follows the group if its MLID changed. Nothing waits for the HCA:
// the attaches and detaches after the first one go one after the other from a coroutine
// (so a move to a new MLID and the leave's detach reach the HCA in the order they were
// decided), continuing in each IRP's completion.
#include <endian.h>

#include <cstring>
#include <deque>
#include <memory>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/sa/sa_membership.h"
#include "runtime/al/src/sa/sa_verbs.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

constexpr std::size_t kMlidOffset = 36;
constexpr std::size_t kJoinStateOffset = 48;
constexpr uint8_t kReceivingStates = 0x1 | 0x2;  // FullMember, NonMember

class McastJoinObj final : public sa::SaMembership {
 public:
  McastJoinObj(Instance* owner, QpObj* qp, const sa::SaPort& port, const abi::JoinMcastIn& in)
      : SaMembership(abi::ObjectType::McastJoin, owner, abi::kIoctlJoinMcast, port, in.timeout_ms,
                     in.retry_count),
        qp_(qp),
        mask_(in.component_mask) {
    std::memcpy(record_, in.member_record, sizeof record_);
  }

  sa::SaRequest Request(uint8_t method) override {
    sa::SaRequest request;
    request.method = method;
    request.attribute_id = sa::kMcMemberRecordAttribute;
    request.component_mask = mask_;
    request.attribute = record_;
    return request;
  }

 private:
  bool Receives() const { return (record_[kJoinStateOffset] & 0x0F & kReceivingStates) != 0; }

  static void GroupOf(const sa::SaAnswer& answer, abi::Gid* mgid, uint16_t* mlid) {
    std::memcpy(mgid, answer.data.data(), sizeof *mgid);
    *mlid = static_cast<uint16_t>(answer.data[kMlidOffset] << 8 | answer.data[kMlidOffset + 1]);
  }

  // The CA's device for this QP's CI IRPs; null once the CA is gone (its QPs with it).
  kernel::DeviceObject* Device() const {
    const AlCa* ca = qp_->pd_obj->ca_obj->ca.get();
    return ca->removed.load(std::memory_order_acquire) ? nullptr : ca->lower;
  }
  static kernel::Irp* BuildGroupIrp(kernel::DeviceObject* device, bool attach, uint32_t qpn,
                                    const abi::Gid& mgid, uint16_t mlid) {
    constexpr kernel::ProcessorMode kAl = kernel::ProcessorMode::kKernelMode;
    if (device == nullptr) return nullptr;
    if (attach) return kernel::BuildCiAttachMcastIrp(device, nullptr, kAl, {qpn, mlid, 0, mgid});
    return kernel::BuildCiDetachMcastIrp(device, nullptr, kAl, {qpn, mlid, 0, mgid});
  }

  Status Accepted(const sa::SaAnswer& answer, void* out) override {
    if (answer.data.size() < abi::kMcmemberRecordBytes) return Status::REMOTE_ERROR;
    auto* o = static_cast<abi::JoinMcastOut*>(out);
    std::memcpy(o->joined_record, answer.data.data(), sizeof o->joined_record);
    abi::Gid mgid;
    uint16_t mlid;
    GroupOf(answer, &mgid, &mlid);
    // The SA's answer names the group (an MGID 0 asked it to pick one): later Sets and the
    // Delete name it too.
    std::memcpy(record_, answer.data.data(), sizeof mgid);
    mask_ |= 1;  // MGID
    {
      kernel::SpinLockGuard guard(lock_);
      mgid_ = mgid;
      mlid_ = mlid;
    }
    if (!Receives()) return Status::SUCCESS;
    Hold();  // until the attach's completion concluded the verb
    AttachFirst(mgid, mlid);
    return Status::PENDING;
  }

  // The first attach, before the object is published (nothing else moves the QP yet).
  kernel::IrpTask AttachFirst(abi::Gid mgid, uint16_t mlid) {
    const Status s = co_await CiIrp(Device(), BuildGroupIrp(Device(), true, qp_->qpn, mgid, mlid));
    if (s == Status::SUCCESS) {
      kernel::SpinLockGuard guard(lock_);
      attached_ = true;
    }
    // The CA's group or QP-per-group limit (or the CA went).
    Concluded(s == Status::SUCCESS ? Status::SUCCESS : Status::MAX_MCAST_QPS_REACHED);
    Release();
  }

  // An attach or detach after the first: queued, and the pump started when it is idle.
  // lock_ held; true: the caller starts Pump (Hold()ed) once the lock is dropped.
  bool QueueLocked(bool attach, const abi::Gid& mgid, uint16_t mlid) {
    ops_.push_back({attach, mgid, mlid});
    return !std::exchange(pumping_, true);
  }
  void StartPump() {
    Hold();
    Pump();
  }
  kernel::IrpTask Pump() {
    std::unique_ptr<ReleaseTicket> ticket;
    for (;;) {
      GroupOp op;
      {
        kernel::SpinLockGuard guard(lock_);
        if (ops_.empty()) {
          pumping_ = false;
          ticket = std::move(end_ticket_);
          break;
        }
        op = ops_.front();
        ops_.pop_front();
      }
      kernel::DeviceObject* device = Device();
      const Status s =
          co_await CiIrp(device, BuildGroupIrp(device, op.attach, qp_->qpn, op.mgid, op.mlid));
      if (op.attach && s != Status::SUCCESS) {
        kernel::SpinLockGuard guard(lock_);
        if (mlid_ == op.mlid) attached_ = false;  // not there: nothing to detach at the end
      }
    }
    ticket.reset();  // the QP is free of us now
    Release();       // the last touch of this object
  }

  // A re-join that moved the group to a new MLID: the QP follows it.
  void OnRetold(const sa::SaAnswer& answer) override {
    if (answer.data.size() < abi::kMcmemberRecordBytes || !Receives()) return;
    abi::Gid mgid;
    uint16_t mlid;
    GroupOf(answer, &mgid, &mlid);
    bool start;
    {
      kernel::SpinLockGuard guard(lock_);
      if (ended_ || !attached_ || mlid == mlid_) return;
      start = QueueLocked(false, mgid_, mlid_);  // the first of the two says whether to start
      QueueLocked(true, mgid, mlid);
      mgid_ = mgid;
      mlid_ = mlid;
    }
    if (start) StartPump();
  }

  // The end (OnDestroy): the detach queued behind whatever is in flight, and the QP kept
  // busy (the release ticket, which LeaveMcast's completion waits for) until the pump is
  // done; with nothing in flight the ticket goes at once.
  void OnEnd() override {
    auto ticket = std::make_unique<ReleaseTicket>(this);
    bool start = false;
    {
      kernel::SpinLockGuard guard(lock_);
      if (std::exchange(attached_, false)) start = QueueLocked(false, mgid_, mlid_);
      if (pumping_) end_ticket_ = std::move(ticket);
    }
    if (start) StartPump();
  }

  struct GroupOp {
    bool attach = false;
    abi::Gid mgid{};
    uint16_t mlid = 0;
  };
  QpObj* const qp_;  // the parent
  uint64_t mask_;
  uint8_t record_[abi::kMcmemberRecordBytes];
  abi::Gid mgid_{};
  uint16_t mlid_ = 0;
  bool attached_ = false;                      // lock_
  std::deque<GroupOp> ops_;                    // lock_
  bool pumping_ = false;                       // lock_: Pump runs
  std::unique_ptr<ReleaseTicket> end_ticket_;  // lock_: the end's, dropped when Pump is done
};

}  // namespace

Status SaJoinMcast(const kernel::CallContext& ctx, const abi::JoinMcastIn& in,
                   kernel::JoinMcastRefs& refs, abi::JoinMcastOut& out, Irp* irp) {
  auto* qp = static_cast<QpObj*>(refs.qp.get());
  if (qp->type != abi::QpType::UD) return Status::INVALID_SERVICE_TYPE;
  sa::SaPort port;
  if (const Status s = sa::SaOf(InstanceOf(ctx)->al)->FindPort(in.port_guid, &port);
      s != Status::SUCCESS) {
    return s;
  }
  if (port.ca.get() != qp->pd_obj->ca_obj->ca.get()) return Status::INVALID_GUID;
  auto* object = new McastJoinObj(InstanceOf(ctx), qp, port, in);
  return sa::StartMembership(ctx, object, qp, Status::INVALID_QP_HANDLE, irp, out, &out.join.value,
                             object->Request(sa::kSet));
}

Status SaLeaveMcast(const kernel::CallContext& ctx, const abi::LeaveMcastIn& in,
                    kernel::LeaveMcastRefs&, Irp* irp) {
  return DestroyReleasing(ctx, in.join.value, abi::ObjectType::McastJoin,
                          Status::INVALID_MCAST_JOIN_HANDLE, irp);
}

}  // namespace softib::al

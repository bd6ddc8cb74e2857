// JoinMcast / LeaveMcast (IBAL ib_join_mcast): an MCMemberRecord Set; once the SA answered,
// the UD QP is attached to the group's MGID/MLID through the CI (not for send-only
// members, which only send to the MLID). LeaveMcast (or the file's end) detaches and sends
// the Delete with the same JoinState. After an SM change the join is sent again and the QP
// follows the group if its MLID changed.
#include <endian.h>

#include <cstring>

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

  ci::CaInterface* ci() const { return qp_->pd_obj->ca_obj->ca->ci; }

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
    if (Receives()) {
      if (const Status s = ci()->AttachMcast(qp_->qpn, mgid, mlid); s != Status::SUCCESS) {
        return Status::MAX_MCAST_QPS_REACHED;  // the CA's group or QP-per-group limit
      }
    }
    kernel::SpinLockGuard guard(lock_);
    mgid_ = mgid;
    mlid_ = mlid;
    attached_ = Receives();
    return Status::SUCCESS;
  }

  // The CI's attach and detach run under lock_ (they are DISPATCH-safe), so that a re-join
  // moving the QP to a new MLID and the leave's detach cannot interleave.
  void OnRetold(const sa::SaAnswer& answer) override {
    if (answer.data.size() < abi::kMcmemberRecordBytes || !Receives()) return;
    abi::Gid mgid;
    uint16_t mlid;
    GroupOf(answer, &mgid, &mlid);
    kernel::SpinLockGuard guard(lock_);
    if (ended_ || !attached_ || mlid == mlid_) return;
    ci()->DetachMcast(qp_->qpn, mgid_, mlid_);
    mgid_ = mgid;
    mlid_ = mlid;
    attached_ = ci()->AttachMcast(qp_->qpn, mgid, mlid) == Status::SUCCESS;
  }

  void OnEnd() override {
    kernel::SpinLockGuard guard(lock_);
    if (std::exchange(attached_, false)) ci()->DetachMcast(qp_->qpn, mgid_, mlid_);
  }

  QpObj* const qp_;  // the parent
  uint64_t mask_;
  uint8_t record_[abi::kMcmemberRecordBytes];
  abi::Gid mgid_{};
  uint16_t mlid_ = 0;
  bool attached_ = false;  // lock_
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
                    kernel::LeaveMcastRefs&, Irp*) {
  return DestroyHandle(ctx, in.join.value, abi::ObjectType::McastJoin,
                       Status::INVALID_MCAST_JOIN_HANDLE);
}

}  // namespace softib::al

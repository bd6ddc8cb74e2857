// Memory windows: the key-table side (allocation, R_Key checks through a window) and the
// device side (the BindMw verb, BIND_MW and LOCAL_INV work requests, and the responder's
// remote invalidation). A bind or invalidation the rules refuse completes with
// MW_BIND_ERR, IBA's memory management operation error, and the QP goes to Error.
#include "hca/device/hca.h"

namespace softib::hca {

using abi::AccessFlags;
using abi::WcStatus;

namespace {

constexpr AccessFlags kRemoteRights =
    AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;

}  // namespace

// --- key table -----------------------------------------------------------------------------

abi::Status MrTable::AllocWindow(PdId pd, abi::MwType type, uint32_t* index, uint32_t* rkey) {
  if (!abi::IsValid(type)) return abi::Status::INVALID_PARAMETER;
  if (!AllocateSlot(index)) return abi::Status::INSUFFICIENT_RESOURCES;
  Slot& slot = slots_[*index];
  ++slot.key_byte;
  slot.in_use = true;
  slot.is_window = true;
  slot.mw = MemoryWindow{};
  slot.mw.pd = pd;
  slot.mw.type = type;
  slot.mw.key = *index << 8 | slot.key_byte;
  slot.mw.promised_key_byte = slot.key_byte;
  ++windows_;
  *rkey = slot.mw.key;
  return abi::Status::SUCCESS;
}

abi::Status MrTable::FreeWindow(uint32_t index) {
  if (Window(index) == nullptr) return abi::Status::INVALID_MW_HANDLE;
  Slot& slot = slots_[index];
  slot.key_byte = static_cast<uint8_t>(slot.mw.key);  // the next user moves past this key
  slot.in_use = false;
  slot.is_window = false;
  slot.mw = MemoryWindow{};
  free_.push_back(index);
  --windows_;
  return abi::Status::SUCCESS;
}

MemoryWindow* MrTable::Window(uint32_t index) {
  if (index == 0 || index >= slots_.size()) return nullptr;
  Slot& slot = slots_[index];
  return slot.in_use && slot.is_window ? &slot.mw : nullptr;
}

const MemoryWindow* MrTable::Window(uint32_t index) const {
  return const_cast<MrTable*>(this)->Window(index);
}

MemoryWindow* MrTable::FindWindow(uint32_t key) {
  MemoryWindow* mw = Window(key >> 8);
  return mw != nullptr && mw->key == key ? mw : nullptr;
}

bool MrTable::AnyWindowOn(uint32_t mr_key) const {
  for (const Slot& slot : slots_)
    if (slot.in_use && slot.is_window && slot.mw.bound && slot.mw.mr_key == mr_key) return true;
  return false;
}

void MrTable::InvalidateWindowsOf(uint32_t qp) {
  for (Slot& slot : slots_)
    if (slot.in_use && slot.is_window && slot.mw.IsType2() && slot.mw.qp == qp)
      slot.mw.bound = false;
}

AccessError MrTable::CheckWindow(const MemoryWindow& mw, PdId pd, uint64_t va, uint64_t len,
                                 AccessFlags need, const MemoryRegion** mr, uint32_t qp) const {
  if (!mw.bound) return AccessError::kInvalidKey;  // unbound or invalidated
  // Type 1 windows serve any QP of their PD; type 2 only the QP they were bound through.
  if (mw.pd != pd || (mw.IsType2() && mw.qp != qp)) return AccessError::kPdMismatch;
  if ((mw.access & need) != need) return AccessError::kAccessDenied;
  if (!mw.Contains(va, len)) return AccessError::kOutOfBounds;
  *mr = Find(mw.mr_key);
  return *mr == nullptr ? AccessError::kInvalidKey : AccessError::kNone;
}

// --- verbs ---------------------------------------------------------------------------------

abi::Status Hca::AllocMw(PdId pd, abi::MwType type, uint32_t* mw, uint32_t* rkey) {
  if (!pds_.Contains(pd)) return abi::Status::INVALID_PD_HANDLE;
  if (mrs_.windows() >= config_.max_mws) return abi::Status::INSUFFICIENT_RESOURCES;
  return mrs_.AllocWindow(pd, type, mw, rkey);
}

abi::Status Hca::QueryMw(uint32_t mw, PdId* pd, abi::MwType* type, uint32_t* rkey) const {
  const MemoryWindow* w = mrs_.Window(mw);
  if (w == nullptr) return abi::Status::INVALID_MW_HANDLE;
  *pd = w->pd;
  *type = w->type;
  *rkey = w->key;
  return abi::Status::SUCCESS;
}

abi::Status Hca::DestroyMw(uint32_t mw) { return mrs_.FreeWindow(mw); }

abi::Status Hca::BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                        uint32_t* rkey) {
  MemoryWindow* w = mrs_.Window(mw);
  if (w == nullptr || w->IsType2()) return abi::Status::INVALID_MW_HANDLE;
  QueuePair* qp = Qp(qpn);
  if (qp == nullptr) return abi::Status::INVALID_QP_HANDLE;
  if (qp->type != abi::QpType::RC && qp->type != abi::QpType::UC)
    return abi::Status::INVALID_SERVICE_TYPE;
  if (qp->state == abi::QpState::RESET || qp->state == abi::QpState::INIT ||
      qp->state == abi::QpState::RTR)
    return abi::Status::INVALID_QP_STATE;
  if (mrs_.Find(mr_key) == nullptr) return abi::Status::INVALID_MR_HANDLE;
  // A window grants remote rights only (and may be zero-based); anything else is refused.
  if ((bind.access & ~(kRemoteRights | AccessFlags::ZERO_BASED)) != AccessFlags{})
    return abi::Status::INVALID_PERMISSION;
  if (qp->rc.req.wqes.size() >= qp->caps.sq_depth) return abi::Status::INSUFFICIENT_RESOURCES;
  // The key the window will carry once the bind executes; binds queued behind each other
  // each promise the next key byte.
  ++w->promised_key_byte;
  *rkey = mw << 8 | w->promised_key_byte;
  RcSendWqe wqe;
  wqe.wr.wr_id = bind.wr_id;
  wqe.wr.wr_type = abi::WrType::BIND_MW;
  wqe.wr.send_flags = bind.send_flags;
  wqe.wr.bind_lkey = mr_key;
  wqe.wr.bind_rkey = *rkey;
  wqe.wr.bind_vaddr = bind.vaddr;
  wqe.wr.bind_length = bind.length;
  wqe.wr.bind_access = bind.access;
  wqe.type1_bind = true;
  qp->rc.req.wqes.push_back(wqe);
  ProgressSend(*qp);
  return abi::Status::SUCCESS;
}

// --- execution -----------------------------------------------------------------------------

WcStatus Hca::ExecuteBind(QueuePair& qp, const abi::SendWorkRequest& wr, bool type1) {
  MemoryWindow* w = mrs_.Window(wr.bind_rkey >> 8);
  // Type 1 windows are bound only through BindMw, type 2 only by a posted BIND_MW
  // (IBA 10.6.7.1); both only by a QP of their PD.
  if (w == nullptr || w->IsType2() == type1 || w->pd != qp.pd) return WcStatus::MW_BIND_ERR;
  // A type 2 window must be free (IBA 10.6.7.2.2: bound windows are invalidated first).
  if (w->IsType2() && (w->bound || wr.bind_length == 0)) return WcStatus::MW_BIND_ERR;
  const bool unbind = wr.bind_length == 0;  // type 1 only
  if (!unbind) {
    const MemoryRegion* mr = mrs_.Find(wr.bind_lkey);
    if (mr == nullptr || mr->pd != qp.pd || !abi::HasAny(mr->access, AccessFlags::MW_BIND) ||
        !mr->Contains(wr.bind_vaddr, wr.bind_length))
      return WcStatus::MW_BIND_ERR;
    // Remote writes and atomics through a window need a locally writable region.
    const bool modifies = abi::HasAny(wr.bind_access, AccessFlags::REMOTE_WRITE) ||
                          abi::HasAny(wr.bind_access, AccessFlags::REMOTE_ATOMIC);
    if (modifies && !abi::HasAny(mr->access, AccessFlags::LOCAL_WRITE))
      return WcStatus::MW_BIND_ERR;
    if ((wr.bind_access & ~(kRemoteRights | AccessFlags::ZERO_BASED)) != AccessFlags{})
      return WcStatus::MW_BIND_ERR;
  }
  w->bound = !unbind;
  w->mr_key = unbind ? 0 : wr.bind_lkey;
  w->va = wr.bind_vaddr;
  w->length = wr.bind_length;
  w->access = wr.bind_access & kRemoteRights;
  w->qp = w->IsType2() ? qp.handle : 0;
  // The key byte: type 1 gets the one BindMw promised, type 2 the consumer's choice.
  w->key = (wr.bind_rkey >> 8) << 8 | (wr.bind_rkey & 0xFF);
  return WcStatus::SUCCESS;
}

WcStatus Hca::ExecuteLocalInvalidate(QueuePair& qp, uint32_t rkey) {
  // Only type 2 windows are invalidated (regions here are not fast-register regions):
  // the key must be current, the window bound, in the QP's PD, and for type 2A bound
  // through this very QP.
  MemoryWindow* w = mrs_.FindWindow(rkey);
  if (w == nullptr || !w->IsType2() || !w->bound || w->pd != qp.pd ||
      (w->type == abi::MwType::TYPE2A && w->qp != qp.handle))
    return WcStatus::MW_BIND_ERR;
  w->bound = false;
  return WcStatus::SUCCESS;
}

bool Hca::RemoteInvalidate(QueuePair& qp, uint32_t rkey) {
  // SEND with Invalidate (IETH): the responder invalidates a type 2 window of its QP's PD; a 2A
  // window only when bound through the receiving QP.
  MemoryWindow* w = mrs_.FindWindow(rkey);
  if (w == nullptr || !w->IsType2() || !w->bound || w->pd != qp.pd ||
      (w->type == abi::MwType::TYPE2A && w->qp != qp.handle))
    return false;
  w->bound = false;
  return true;
}

}  // namespace softib::hca

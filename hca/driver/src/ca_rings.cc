// The CA's side of the speed path: creating and mapping the rings of a user process's CQs,
// QPs and SRQs, consuming the work rings (the ring service's pass, and inline before a
// packet reaches a QP) and producing the CQ rings.
//
// Trust (hca/rings/README.md): the CA keeps its own indices and geometry, copies an entry
// out before checking it, and checks it again as the device would (a refused entry
// completes LOCAL_QP_OP_ERR and takes the QP to Error); a corrupt index fails the ring for
// good (QP_FATAL / SRQ_CATASTROPHIC / CQ_ERROR). A process can only hurt its own queues.
//
// Completions: a ring CQ's device CQ is only a staging area. After every call into the
// device (Locked's destructor) its completions move into the ring; the device CQ stays
// armed SOLICITED so that the CA learns whether a solicited or error completion was among
// them (the ring's SOLICITED arm). A full ring is the CQ overflow of IBA 11.6.3: the ring
// fails (OVERFLOW), CQ_OVERFLOW goes out, and the QPs completing into it go to Error.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "hca/driver/src/soft_ca.h"
#include "softib/rings/entry_checks.h"
#include "softib/rings/ring_layout.h"
#include "softib/wire/packet_walker.h"
#include "steady_now.h"

namespace softib::hca {

using kernel::Status;
using rings::PopResult;

namespace {

constexpr uint32_t kMoveBatch = 32;
// Message bytes one hold of the CA's lock starts from a send ring. Transmission happens
// under the lock; the delivery thread needs the same lock for the ACKs, and without a bound
// it would wait out a whole ring of large writes while the data it should deliver piles up.
constexpr uint64_t kSendBytesPerHold = 256 * 1024;

abi::WcOpcode WcOpcodeOf(abi::WrType type) {
  switch (type) {
    case abi::WrType::RDMA_WRITE:
      return abi::WcOpcode::RDMA_WRITE;
    case abi::WrType::RDMA_READ:
      return abi::WcOpcode::RDMA_READ;
    case abi::WrType::COMPARE_SWAP:
      return abi::WcOpcode::COMPARE_SWAP;
    case abi::WrType::FETCH_ADD:
      return abi::WcOpcode::FETCH_ADD;
    case abi::WrType::NOP:
      return abi::WcOpcode::NOP;
    case abi::WrType::LOCAL_INV:
      return abi::WcOpcode::LOCAL_INV;
    case abi::WrType::BIND_MW:
      return abi::WcOpcode::MW_BIND;
    default:
      return abi::WcOpcode::SEND;
  }
}

bool SendBlockedByState(abi::QpState state) {
  // IBA 10.8.2.2: the send queue takes work from RTS on. Entries posted earlier wait in the
  // ring (hardware would leave them in its queue) rather than failing.
  return state == abi::QpState::RESET || state == abi::QpState::INIT || state == abi::QpState::RTR;
}

bool IsConnected(const QueuePair& qp) {
  return qp.type == abi::QpType::RC || qp.type == abi::QpType::UC;
}

bool IsDatagram(const QueuePair& qp) {
  return qp.type == abi::QpType::UD || qp.type == abi::QpType::GSI || qp.type == abi::QpType::SMI ||
         qp.type == abi::QpType::MAD;
}

template <typename Ring>
void Watch(Ring& ring, const std::shared_ptr<RingRegion>& region, std::vector<RingWatch>* watches) {
  if (!ring.attached() || ring.error() != abi::RingError::NONE) return;
  watches->push_back({ring.control(), ring.consumer_index(), region});
}

// BTH:DestQP of an IBA packet (LRH, optional GRH, BTH); false when it is not a well-formed
// one (the HCA drops those anyway: no ring needs serving for it).
bool DestQpOf(std::span<const uint8_t> packet, uint32_t* qpn) {
  const wire::PacketLayout layout = wire::WalkPacket(packet, {.depth = wire::WalkDepth::kBth});
  if (!layout.ok()) return false;
  *qpn = wire::BTHConstView(layout.bytes(packet, wire::Header::kBth)).DestQP();
  return true;
}

}  // namespace

// ---- mapping -------------------------------------------------------------------------------

Status SoftCa::NewRegion(const char* name, const rings::RegionLayout& layout,
                         std::shared_ptr<RingRegion>* region) {
  auto made = std::make_shared<RingRegion>();
  std::string error;
  if (!rings::SharedMemory::Create(name, layout.size(), &made->memory, &error)) {
    return Status::INSUFFICIENT_RESOURCES;
  }
  *region = std::move(made);
  return Status::SUCCESS;
}

Status SoftCa::DupFd(const RingRegion& region, uint32_t* shm_id, int* fd) {
  *fd = fcntl(region.memory.fd(), F_DUPFD_CLOEXEC, 0);
  if (*fd < 0) return Status::INSUFFICIENT_RESOURCES;
  *shm_id = region.id;
  return Status::SUCCESS;
}

Status SoftCa::MapCqRing(uint32_t cq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) {
  *fd = -1;
  std::shared_ptr<RingRegion> region;
  uint32_t entries = 0;
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_cqs_.find(cq); it != ring_cqs_.end()) {
      region = it->second.region;
      *ring = it->second.mapping;
    } else {
      CompletionQueue* q = hca_.Cq(cq);
      if (q == nullptr) return Status::INVALID_CQ_HANDLE;
      entries = rings::RoundUpEntries(q->capacity());
    }
  }
  if (region != nullptr) return DupFd(*region, shm_id, fd);
  if (entries == 0) return Status::INSUFFICIENT_RESOURCES;

  // The memory is made without the lock (it allocates and may block).
  rings::RegionLayout layout;
  abi::RingMapping mapping{};
  layout.Add(abi::RingKind::CQ, entries, &mapping);
  if (const Status s = NewRegion("softib-cq", layout, &region); s != Status::SUCCESS) return s;
  rings::FormatRing(region->memory.base(), mapping, abi::RingKind::CQ);
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_cqs_.find(cq); it != ring_cqs_.end()) {  // a concurrent map won
      region = it->second.region;
      *ring = it->second.mapping;
    } else {
      CompletionQueue* q = hca_.Cq(cq);
      if (q == nullptr) return Status::INVALID_CQ_HANDLE;
      region->id = next_region_id_++;
      RingCq& state = ring_cqs_[cq];
      state.region = region;
      state.mapping = mapping;
      state.producer = rings::CqProducer(
          rings::ControlAt(region->memory.base(), mapping),
          rings::EntriesAt<abi::WorkCompletion>(region->memory.base(), mapping), entries);
      // From now on the device CQ is staging only; what it holds moves at the unlock.
      q->RequestNotify(abi::CqNotify::SOLICITED);
      state.solicited = true;  // unknown for what is already there: let an arm fire
      *ring = mapping;
    }
  }
  return DupFd(*region, shm_id, fd);
}

Status SoftCa::MapQpRings(uint32_t qpn, abi::RingMapping* send_ring, abi::RingMapping* recv_ring,
                          uint32_t* shm_id, int* fd) {
  *fd = -1;
  std::shared_ptr<RingRegion> region;
  uint32_t send_entries = 0, recv_entries = 0;
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_qps_.find(qpn); it != ring_qps_.end()) {
      region = it->second.region;
      *send_ring = it->second.send_mapping;
      *recv_ring = it->second.recv_mapping;
    } else {
      QueuePair* qp = hca_.Qp(qpn);
      if (qp == nullptr) return Status::INVALID_QP_HANDLE;
      send_entries = rings::RoundUpEntries(qp->caps.sq_depth);
      if (qp->srq == 0) recv_entries = rings::RoundUpEntries(qp->caps.rq_depth);
      if (send_entries == 0 || (qp->srq == 0 && recv_entries == 0)) {
        return Status::INSUFFICIENT_RESOURCES;
      }
    }
  }
  if (region != nullptr) return DupFd(*region, shm_id, fd);

  rings::RegionLayout layout;
  abi::RingMapping send_mapping{}, recv_mapping{};
  layout.Add(abi::RingKind::SEND, send_entries, &send_mapping);
  if (recv_entries != 0) layout.Add(abi::RingKind::RECV, recv_entries, &recv_mapping);
  if (const Status s = NewRegion("softib-qp", layout, &region); s != Status::SUCCESS) return s;
  rings::FormatRing(region->memory.base(), send_mapping, abi::RingKind::SEND);
  if (recv_entries != 0) {
    rings::FormatRing(region->memory.base(), recv_mapping, abi::RingKind::RECV);
  }
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_qps_.find(qpn); it != ring_qps_.end()) {
      region = it->second.region;
      *send_ring = it->second.send_mapping;
      *recv_ring = it->second.recv_mapping;
    } else {
      if (hca_.Qp(qpn) == nullptr) return Status::INVALID_QP_HANDLE;
      region->id = next_region_id_++;
      RingQp& state = ring_qps_[qpn];
      void* base = region->memory.base();
      state.region = region;
      state.send_mapping = send_mapping;
      state.recv_mapping = recv_mapping;
      state.send = rings::RingConsumer<abi::SendWorkRequest>(
          rings::ControlAt(base, send_mapping),
          rings::EntriesAt<abi::SendWorkRequest>(base, send_mapping), send_entries,
          rings::Side::kHca);
      if (recv_entries != 0) {
        state.recv = rings::RingConsumer<abi::RecvWorkRequest>(
            rings::ControlAt(base, recv_mapping),
            rings::EntriesAt<abi::RecvWorkRequest>(base, recv_mapping), recv_entries,
            rings::Side::kHca);
      }
      *send_ring = send_mapping;
      *recv_ring = recv_mapping;
    }
  }
  if (rings_ != nullptr) rings_->Serve(this);
  return DupFd(*region, shm_id, fd);
}

Status SoftCa::MapSrqRing(uint32_t srq, abi::RingMapping* ring, uint32_t* shm_id, int* fd) {
  *fd = -1;
  std::shared_ptr<RingRegion> region;
  uint32_t entries = 0;
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_srqs_.find(srq); it != ring_srqs_.end()) {
      region = it->second.region;
      *ring = it->second.mapping;
    } else {
      SharedReceiveQueue* q = hca_.Srq(srq);
      if (q == nullptr) return Status::INVALID_SRQ_HANDLE;
      entries = rings::RoundUpEntries(q->max_wr);
    }
  }
  if (region != nullptr) return DupFd(*region, shm_id, fd);
  if (entries == 0) return Status::INSUFFICIENT_RESOURCES;

  rings::RegionLayout layout;
  abi::RingMapping mapping{};
  layout.Add(abi::RingKind::SRQ, entries, &mapping);
  if (const Status s = NewRegion("softib-srq", layout, &region); s != Status::SUCCESS) return s;
  rings::FormatRing(region->memory.base(), mapping, abi::RingKind::SRQ);
  {
    Locked locked(this);
    if (locked.gone()) return Status::CA_REMOVED;
    if (auto it = ring_srqs_.find(srq); it != ring_srqs_.end()) {
      region = it->second.region;
      *ring = it->second.mapping;
    } else {
      if (hca_.Srq(srq) == nullptr) return Status::INVALID_SRQ_HANDLE;
      region->id = next_region_id_++;
      RingSrq& state = ring_srqs_[srq];
      state.region = region;
      state.mapping = mapping;
      state.ring = rings::RingConsumer<abi::RecvWorkRequest>(
          rings::ControlAt(region->memory.base(), mapping),
          rings::EntriesAt<abi::RecvWorkRequest>(region->memory.base(), mapping), entries,
          rings::Side::kHca);
      *ring = mapping;
    }
  }
  if (rings_ != nullptr) rings_->Serve(this);
  return DupFd(*region, shm_id, fd);
}

void SoftCa::ShutDownRingsLocked() {
  for (auto& [qpn, ring] : ring_qps_) {
    ring.send.Fail(abi::RingError::SHUTDOWN);
    if (ring.recv.attached()) ring.recv.Fail(abi::RingError::SHUTDOWN);
  }
  for (auto& [number, ring] : ring_srqs_) ring.ring.Fail(abi::RingError::SHUTDOWN);
  for (auto& [number, ring] : ring_cqs_) ring.producer.Fail(abi::RingError::SHUTDOWN);
  ring_qps_.clear();
  ring_srqs_.clear();
  ring_cqs_.clear();
}

// ---- consuming work rings -------------------------------------------------------------------

bool SoftCa::ServeRings(std::vector<RingWatch>* watches) {
  Locked locked(this);
  if (locked.gone()) return false;
  hca_.Tick(SteadyNowNs());  // what the work starts is timed from now
  bool worked = false;
  for (auto& [number, ring] : ring_srqs_) {
    worked |= ServeSrqLocked(number, ring);
    if (!ring.stalled) Watch(ring.ring, ring.region, watches);
  }
  for (auto& [qpn, ring] : ring_qps_) {
    worked |= ServeQpLocked(qpn, ring);
    if (!ring.send_stalled) Watch(ring.send, ring.region, watches);
    if (!ring.recv_stalled) Watch(ring.recv, ring.region, watches);
  }
  return worked;
}

bool SoftCa::ServeQpLocked(uint32_t qpn, RingQp& ring) {
  QueuePair* qp = hca_.Qp(qpn);
  if (qp == nullptr) return false;
  bool worked = ServeRecvLocked(*qp, ring);  // receives first: a send may be answered at once
  worked |= ServeSendLocked(*qp, ring);
  if (!ring.failed && (ring.send.error() == abi::RingError::BAD_PRODUCER_INDEX ||
                       ring.recv.error() == abi::RingError::BAD_PRODUCER_INDEX)) {
    // A corrupt index: the work queue is beyond use (a catastrophic local work queue error).
    ring.failed = true;
    QpToErrorLocked(qpn);
    OnAsync(DeviceEvent{abi::AsyncEventType::QP_FATAL, qp->qpn});
  }
  return worked;
}

bool SoftCa::ServeSendLocked(QueuePair& qp, RingQp& ring) {
  ring.send_stalled = false;
  if (!ring.send.attached()) return false;
  bool worked = false;
  bool release = false;
  uint64_t bytes = 0;
  while (bytes < kSendBytesPerHold) {
    const std::size_t queued = IsConnected(qp) ? qp.rc.req.wqes.size() : qp.sq.size();
    if (SendBlockedByState(qp.state) || queued >= qp.caps.sq_depth) {
      ring.send_stalled = ring.send.Available() != 0;
      break;
    }
    abi::SendWorkRequest wr;
    if (ring.send.Pop(&wr, /*defer_release=*/true) != PopResult::kEntry) break;
    release = worked = true;
    if ((wr.send_flags & abi::SendFlags::INLINE) == abi::SendFlags{}) {
      for (uint32_t i = 0; i < wr.num_sge && i < std::size(wr.sge); ++i) bytes += wr.sge[i].length;
    }
    Status status = rings::CheckSendWorkRequest(wr);
    if (status == Status::SUCCESS && IsDatagram(qp)) status = TranslateAvLocked(qp, &wr);
    if (status == Status::SUCCESS) status = hca_.PostSend(qp.handle, wr);
    if (status != Status::SUCCESS) RefuseLocked(qp, wr.wr_id, WcOpcodeOf(wr.wr_type), true, status);
  }
  if (release) ring.send.Release();
  if (worked && qp.type == abi::QpType::RC) ArmTickLocked();
  return worked;
}

Status SoftCa::TranslateAvLocked(const QueuePair& qp, abi::SendWorkRequest* wr) {
  // The entry names its address by the process's AV handle (the user ABI); the AL bound it
  // to an AH in the AV's PD. Looking it up in the QP's PD only is what keeps a process to
  // its own AVs and enforces IBA's "AH and QP in one PD" before the device checks it again.
  uint32_t ah = 0;
  if (!hca_.TranslateAhHandle(qp.pd, wr->av.value, &ah)) return Status::INVALID_AV_HANDLE;
  wr->av.value = ah;
  return Status::SUCCESS;
}

bool SoftCa::ServeRecvLocked(QueuePair& qp, RingQp& ring) {
  ring.recv_stalled = false;
  if (!ring.recv.attached()) return false;
  bool worked = false;
  bool release = false;
  for (;;) {
    // Receives may be posted from Init on (IBA 10.8.2.2); in Error they are flushed.
    if (qp.state == abi::QpState::RESET || qp.rq.size() >= qp.caps.rq_depth) {
      ring.recv_stalled = ring.recv.Available() != 0;
      break;
    }
    abi::RecvWorkRequest wr;
    if (ring.recv.Pop(&wr, /*defer_release=*/true) != PopResult::kEntry) break;
    release = worked = true;
    Status status = rings::CheckRecvWorkRequest(wr);
    if (status == Status::SUCCESS) status = hca_.PostRecv(qp.handle, wr);
    if (status != Status::SUCCESS) RefuseLocked(qp, wr.wr_id, abi::WcOpcode::RECV, false, status);
  }
  if (release) ring.recv.Release();
  return worked;
}

bool SoftCa::ServeSrqLocked(uint32_t number, RingSrq& ring) {
  ring.stalled = false;
  SharedReceiveQueue* srq = hca_.Srq(number);
  if (srq == nullptr) return false;
  bool worked = false;
  bool release = false;
  for (;;) {
    if (srq->wqes.size() >= srq->max_wr) {
      ring.stalled = ring.ring.Available() != 0;
      break;
    }
    abi::RecvWorkRequest wr;
    if (ring.ring.Pop(&wr, /*defer_release=*/true) != PopResult::kEntry) break;
    release = worked = true;
    Status status = rings::CheckRecvWorkRequest(wr);
    if (status == Status::SUCCESS) status = hca_.PostSrqRecv(number, wr);
    if (status != Status::SUCCESS) {
      // No QP owns an SRQ entry to complete it in error: the SRQ itself is broken.
      ring.ring.Fail(abi::RingError::BAD_ENTRY);
      break;
    }
  }
  if (release) ring.ring.Release();
  const abi::RingError error = ring.ring.error();
  if (!ring.failed && error != abi::RingError::NONE && error != abi::RingError::SHUTDOWN) {
    ring.failed = true;
    OnAsync(DeviceEvent{abi::AsyncEventType::SRQ_CATASTROPHIC, number});
  }
  return worked;
}

void SoftCa::RefuseLocked(QueuePair& qp, uint64_t wr_id, abi::WcOpcode opcode, bool send,
                          abi::Status why) {
  abi::WorkCompletion wc{};
  wc.wr_id = wr_id;
  wc.opcode = opcode;
  wc.status = abi::WcStatus::LOCAL_QP_OP_ERR;
  wc.qp_num = qp.qpn;
  wc.vendor_err = static_cast<uint8_t>(abi::ToUnderlying(why));  // which check refused it
  if (CompletionQueue* cq = hca_.Cq(send ? qp.send_cq : qp.recv_cq)) cq->Push(wc);
  QpToErrorLocked(qp.handle);
}

void SoftCa::QpToErrorLocked(uint32_t qpn) {
  QueuePair* qp = hca_.Qp(qpn);
  if (qp == nullptr || qp->state == abi::QpState::ERROR) return;
  abi::QpModifyAttributes error{};
  error.mask = abi::QpAttrMask::STATE;
  error.state = abi::QpState::ERROR;
  hca_.ModifyQp(qpn, error);  // any state may go to Error; it flushes
}

void SoftCa::ServeReceiverLocked(uint8_t, std::span<const uint8_t> packet) {
  uint32_t dest = 0;
  if (!DestQpOf(packet, &dest)) return;
  auto serve = [&](uint32_t qpn, RingQp& ring) {
    QueuePair* qp = hca_.Qp(qpn);
    if (qp == nullptr) return;
    ServeRecvLocked(*qp, ring);
    if (qp->srq != 0) {
      if (auto s = ring_srqs_.find(qp->srq); s != ring_srqs_.end()) {
        ServeSrqLocked(s->first, s->second);
      }
    }
  };
  if (dest == kMulticastQpn) {
    for (auto& [qpn, ring] : ring_qps_) serve(qpn, ring);
  } else if (auto it = ring_qps_.find(dest); it != ring_qps_.end()) {
    serve(it->first, it->second);
  }
}

// ---- after every device call -------------------------------------------------------------

void SoftCa::AfterDeviceCallLocked() {
  // Work that waited for room or for a state: the call may have given either.
  for (auto& [qpn, ring] : ring_qps_) {
    if (!ring.send_stalled && !ring.recv_stalled) continue;
    if (QueuePair* qp = hca_.Qp(qpn)) {
      if (ring.recv_stalled) ServeRecvLocked(*qp, ring);
      if (ring.send_stalled) ServeSendLocked(*qp, ring);
    }
  }
  for (auto& [number, ring] : ring_srqs_) {
    if (ring.stalled) ServeSrqLocked(number, ring);
  }
  for (auto& [number, ring] : ring_cqs_) MoveCompletionsLocked(number, ring);
}

void SoftCa::MoveCompletionsLocked(uint32_t number, RingCq& ring) {
  CompletionQueue* q = hca_.Cq(number);
  if (q == nullptr || (q->count() == 0 && !ring.solicited)) return;
  const bool solicited = ring.solicited;
  ring.solicited = false;
  q->RequestNotify(abi::CqNotify::SOLICITED);
  bool notify = false;
  bool pushed = false;
  abi::WorkCompletion batch[kMoveBatch];
  while (uint32_t n = q->Poll(batch)) {
    for (uint32_t i = 0; i < n; ++i) {
      if (ring.dead) continue;  // a dead CQ reports nothing more
      bool fire = false;
      switch (ring.producer.Push(batch[i], solicited, &fire, /*publish=*/false)) {
        case rings::CqProducer::PushResult::kPushed:
          pushed = true;
          notify |= fire;
          break;
        case rings::CqProducer::PushResult::kOverflow:
          ring.dead = true;  // (OnAsync would take it for the device's own report)
          news_.push_back({ci::CaEventKind::kAsync, abi::AsyncEventType::CQ_OVERFLOW, number, 0});
          for (const uint32_t qpn : qps_) {
            const QueuePair* qp = hca_.Qp(qpn);
            if (qp != nullptr && (qp->send_cq == number || qp->recv_cq == number)) {
              QpToErrorLocked(qpn);
            }
          }
          break;
        case rings::CqProducer::PushResult::kError:
          // The poller's consumer index is corrupt (or the ring was shut down).
          ring.dead = true;
          if (ring.producer.error() == abi::RingError::BAD_CONSUMER_INDEX) {
            news_.push_back({ci::CaEventKind::kAsync, abi::AsyncEventType::CQ_ERROR, number, 0});
          }
          break;
      }
    }
  }
  if (pushed) ring.producer.Publish();
  // Published before the event goes out: the poller it wakes finds the completions.
  if (notify) news_.push_back({ci::CaEventKind::kCompletion, abi::AsyncEventType{}, number, 0});
}

}  // namespace softib::hca

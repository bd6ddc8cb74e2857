// A software CA behind its spin lock: every CI verb takes the lock, calls the device core,
// releases, then hands queued news to waiting event IRPs (outside the lock, so that
// whatever the completion runs may call the CA again).
#include "soft_ca.h"

#include <algorithm>
#include <chrono>

#include "hca/driver/src/port_link.h"
#include "softib/kernel/verb_support.h"
#include "steady_now.h"

namespace softib::hca {

using kernel::Status;

namespace {
constexpr std::chrono::nanoseconds kTickPeriod = std::chrono::milliseconds(1);

}  // namespace

SoftCa::SoftCa(kernel::Node* node, const HcaConfig& config, uint16_t first_lid, RingService* rings)
    : node_(node),
      config_(config),
      hca_(config),
      waiters_(node),
      rings_(rings),
      kernel_dma_(std::make_shared<MemcpyDma>()) {
  for (uint8_t p = 1; p <= config.num_ports; ++p) {
    // first_lid 0: no LIDs, the ports wait in Init for an SM.
    hca_.port(p).lid = first_lid == 0 ? 0 : static_cast<uint16_t>(first_lid + p - 1);
  }
  hca_.async_events = [this](const DeviceEvent& event) { OnAsync(event); };
  hca_.completion_events = [this](uint32_t cq) { OnCompletion(cq); };
  kernel::KeInitializeTimer(&timer_, node);
  kernel::KeInitializeDpc(&tick_dpc_, node, &SoftCa::TickDpc, this);
  kernel::KeInitializeDpc(&completion_dpc_, node, &SoftCa::CompletionDpc, this);
}

SoftCa::~SoftCa() = default;

void SoftCa::Dereference() {
  if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

// ---- news --------------------------------------------------------------------------------

void SoftCa::OnAsync(const DeviceEvent& event) {
  if (event.type == abi::AsyncEventType::CQ_OVERFLOW) {
    // A ring CQ's device CQ overran within one call: the ring CQ is dead too, and says so once.
    if (auto it = ring_cqs_.find(event.object); it != ring_cqs_.end()) {
      if (it->second.dead) return;
      it->second.dead = true;
      it->second.producer.Fail(abi::RingError::OVERFLOW);
    }
  }
  news_.push_back({ci::CaEventKind::kAsync, event.type, event.object, 0});
}

void SoftCa::OnCompletion(uint32_t cq) {
  // A ring CQ's device CQ is armed SOLICITED only to learn this (AfterDeviceCallLocked).
  if (auto it = ring_cqs_.find(cq); it != ring_cqs_.end()) {
    it->second.solicited = true;
    return;
  }
  news_.push_back({ci::CaEventKind::kCompletion, abi::AsyncEventType{}, cq, 0});
}

void SoftCa::FlushEvents() {
  for (;;) {
    kernel::Irp* irp = nullptr;
    {
      kernel::SpinLockGuard guard(lock_);
      if (news_.empty()) return;
      irp = waiters_.Remove();
      if (irp == nullptr) return;
      auto* batch = static_cast<ci::CaEventBatch*>(irp->AssociatedIrp.SystemBuffer);
      const auto n = std::min<std::size_t>(news_.size(), ci::kMaxEventsPerBatch);
      batch->count = static_cast<uint32_t>(n);
      std::copy_n(news_.begin(), n, batch->events);
      news_.erase(news_.begin(), news_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    kernel::CompleteVerbIrp(irp, Status::SUCCESS, sizeof(ci::CaEventBatch));
  }
}

Status SoftCa::WaitEvents(kernel::Irp* irp) {
  if (kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl.OutputBufferLength <
      sizeof(ci::CaEventBatch)) {
    return kernel::CompleteVerbIrp(irp, Status::INVALID_PARAMETER, 0);
  }
  Status status;
  {
    kernel::SpinLockGuard guard(lock_);
    if (removed()) {
      status = Status::CA_REMOVED;
    } else {
      // Queued under the lock, so news arriving meanwhile finds this IRP.
      status = waiters_.Insert(irp);
    }
  }
  if (status == Status::CA_REMOVED) return kernel::CompleteVerbIrp(irp, status, 0);
  FlushEvents();
  return status;
}

void SoftCa::MarkRemoved() {
  {
    kernel::SpinLockGuard guard(lock_);
    removed_.store(true, std::memory_order_release);
    ShutDownRingsLocked();
    news_.clear();
    kernel::KeCancelTimer(&timer_);
    tick_armed_ = false;
  }
  for (;;) {
    kernel::Irp* irp = nullptr;
    {
      kernel::SpinLockGuard guard(lock_);
      irp = waiters_.Remove();
    }
    if (irp == nullptr) break;
    kernel::CompleteVerbIrp(irp, Status::CA_REMOVED, 0);
  }
  kernel::KeFlushQueuedDpcs(node_);  // a tick DPC already queued has run
  if (rings_ != nullptr) rings_->Forget(this);
}

// ---- time --------------------------------------------------------------------------------

void SoftCa::ArmTickLocked(uint64_t due_ns) {
  // The RC path calls this per doorbell: an armed tick within one period needs no clock read.
  if (removed() || (tick_armed_ && !tick_late_)) return;
  const uint64_t now = SteadyNowNs();
  const uint64_t soon = now + static_cast<uint64_t>(kTickPeriod.count());
  const uint64_t at = std::max(due_ns, soon);
  if (tick_armed_ && tick_due_ns_ <= at) return;
  tick_armed_ = true;
  tick_late_ = at > soon;
  tick_due_ns_ = at;
  kernel::KeSetTimer(&timer_, std::chrono::nanoseconds(at - now), &tick_dpc_);  // re-arms
}

void SoftCa::TickDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* self = static_cast<SoftCa*>(context);
  Locked locked(self);
  self->tick_armed_ = false;
  if (locked.gone()) return;
  self->hca_.Tick(SteadyNowNs());
  for (const uint32_t qpn : self->rc_qps_) {
    QueuePair* qp = self->hca_.Qp(qpn);
    if (qp != nullptr && !qp->rc.req.wqes.empty()) {
      self->ArmTickLocked();
      break;
    }
  }
}

// ---- packets -----------------------------------------------------------------------------

void SoftCa::SetPortLink(uint8_t port, Link* link) {
  Locked locked(this);  // its release hands PORT_ACTIVE / PORT_DOWN to the event waiters
  hca_.SetPortLink(port, link);
}

void SoftCa::DeliverPackets(std::span<const InboundPacket> packets) {
  Locked locked(this, Locked::Path::kPacket);
  if (locked.gone()) return;
  hca_.Tick(SteadyNowNs());  // timers are armed relative to the last time the core saw
  for (const InboundPacket& packet : packets) {
    if (!ring_qps_.empty()) ServeReceiverLocked(packet.port, packet.bytes);
    hca_.Receive(packet.port, packet.bytes, packet.sealed);
    // A ring CQ's device CQ is no larger than its ring: its completions move on after each
    // packet, or a batch could overflow it while the ring has room.
    for (auto& [number, ring] : ring_cqs_) MoveCompletionsLocked(number, ring);
  }
}

// ---- CA ----------------------------------------------------------------------------------

Status SoftCa::QueryCa(abi::CaAttributes* attributes, std::span<abi::PortAttributes> ports) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  *attributes = hca_.QueryCa();
  for (uint8_t p = 1; p <= config_.num_ports && p <= ports.size(); ++p) {
    if (const Status s = hca_.QueryPort(p, &ports[p - 1]); s != Status::SUCCESS) return s;
  }
  return Status::SUCCESS;
}

Status SoftCa::QueryGidTable(uint8_t port, uint32_t start, std::span<abi::Gid> out,
                             uint32_t* count) {
  Locked locked(this);
  *count = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.QueryGidTable(port, start, out, count);
}

Status SoftCa::QueryPkeyTable(uint8_t port, uint32_t start, std::span<uint16_t> out,
                              uint32_t* count) {
  Locked locked(this);
  *count = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.QueryPkeyTable(port, start, out, count);
}

Status SoftCa::ModifyCa(uint8_t port, abi::ModifyCaFlags flags, abi::PortCapabilities cap_set,
                        abi::PortCapabilities cap_clear, uint8_t init_type,
                        uint64_t system_image_guid) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.ModifyCa(port, flags, cap_set, cap_clear, init_type, system_image_guid);
}

Status SoftCa::LocalMad(uint8_t port, std::span<const uint8_t, 256> request,
                        std::span<uint8_t, 256> response) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  if (port < 1 || port > config_.num_ports) return Status::INVALID_PORT;
  hca_.SetNow(SteadyNowNs());  // the M_Key lease period runs on the host's clock
  switch (hca_.ProcessLocalMad(port, request, response)) {
    case LocalMadResult::kReply:
      return Status::SUCCESS;
    case LocalMadResult::kNoReply:
      return Status::INVALID_PERMISSION;
    case LocalMadResult::kBad:
      break;
  }
  return Status::INVALID_SETTING;
}

// ---- PD, AH, MR --------------------------------------------------------------------------

Status SoftCa::AllocPd(uint32_t* pd) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  *pd = hca_.AllocPd();
  return Status::SUCCESS;
}

Status SoftCa::FreePd(uint32_t pd) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  return hca_.FreePd(pd);
}

Status SoftCa::CreateAh(uint32_t pd, const abi::AddressVector& av, uint32_t* ah) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.CreateAh(pd, av, ah);
}

Status SoftCa::DestroyAh(uint32_t ah) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  return hca_.DestroyAh(ah);
}

Status SoftCa::BindAhHandle(uint32_t ah, uint64_t handle) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.BindAhHandle(ah, handle);
}

std::shared_ptr<DmaAccessor> SoftCa::AccessorOf(MemoryOwner owner) const {
  return owner.pid == 0 ? kernel_dma_
                        : std::make_shared<ProcessVmDma>(static_cast<pid_t>(owner.pid));
}

Status SoftCa::RegisterMr(uint32_t pd, uint64_t vaddr, uint64_t length, abi::AccessFlags access,
                          MemoryOwner owner, uint32_t* key) {
  // Where the region's bytes are for the DMA engine; the device checks keys and bounds
  // against vaddr (Hca::RegisterMr: iova vs addr) and that addr + length does not wrap.
  const uint64_t addr = vaddr + owner.address_offset;
  if (addr < vaddr) return Status::INVALID_PARAMETER;
  // The accessor is made before taking the lock (allocation).
  std::shared_ptr<DmaAccessor> dma = AccessorOf(owner);
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.RegisterMr(pd, vaddr, length, addr, access, std::move(dma), key);
}

Status SoftCa::RegisterPhysMr(uint32_t pd, uint64_t iova, std::span<const abi::PhysRange> ranges,
                              abi::AccessFlags access, uint32_t* key) {
  if (ranges.empty()) return Status::INVALID_PARAMETER;
  std::vector<PhysRangesDma::Range> pieces;
  pieces.reserve(ranges.size());
  uint64_t length = 0;
  for (const abi::PhysRange& range : ranges) {
    if (range.size == 0 || range.base + range.size < range.base) return Status::INVALID_PARAMETER;
    if (length + range.size < length) return Status::INVALID_PARAMETER;
    length += range.size;
    pieces.push_back({range.base, range.size});
  }
  if (iova + length < iova) return Status::INVALID_PARAMETER;
  // The DMA engine's addresses are offsets into the ranges: the region starts at 0.
  auto dma = std::make_shared<PhysRangesDma>(std::move(pieces));
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.RegisterMr(pd, iova, length, 0, access, std::move(dma), key);
}

Status SoftCa::DeregisterMr(uint32_t key) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  return hca_.DeregisterMr(key);
}

// ---- MR reregistration -------------------------------------------------------------------

Status SoftCa::ReregisterMr(uint32_t key, abi::MrReregFlags what, uint32_t pd, uint64_t vaddr,
                            uint64_t length, abi::AccessFlags access, MemoryOwner owner,
                            uint32_t* new_key) {
  // A new translation needs the accessor of the memory's owner, made before the lock as in
  // RegisterMr; without TRANSLATION the device keeps the region's own.
  const bool translation = abi::HasAny(what, abi::MrReregFlags::TRANSLATION);
  std::shared_ptr<DmaAccessor> dma;
  uint64_t addr = 0;
  if (translation) {
    addr = vaddr + owner.address_offset;
    if (addr < vaddr) return Status::INVALID_PARAMETER;
    dma = AccessorOf(owner);
  }
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.ReregisterMr(key, what, pd, vaddr, length, addr, access, std::move(dma), new_key);
}

// ---- CQ ----------------------------------------------------------------------------------

Status SoftCa::CreateCq(uint32_t size, uint32_t* cq, uint32_t* actual_size) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  if (size == 0 || size > config_.max_cqes) return Status::INVALID_CQ_SIZE;
  const Status status = hca_.CreateCq(size, cq);
  if (status == Status::SUCCESS) *actual_size = hca_.Cq(*cq)->capacity();
  return status;
}

Status SoftCa::ResizeCq(uint32_t cq, uint32_t* size) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  // A mapped ring has its size for good (the process holds it): no resizing under it.
  if (ring_cqs_.count(cq) != 0) return Status::UNSUPPORTED;
  return hca_.ResizeCq(cq, *size, size);
}

Status SoftCa::QueryCq(uint32_t cq, uint32_t* size) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  CompletionQueue* q = hca_.Cq(cq);
  if (q == nullptr) return Status::INVALID_CQ_HANDLE;
  *size = q->capacity();
  return Status::SUCCESS;
}

Status SoftCa::DestroyCq(uint32_t cq) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  const Status status = hca_.DestroyCq(cq);
  if (status == Status::SUCCESS) {
    if (auto it = ring_cqs_.find(cq); it != ring_cqs_.end()) {
      it->second.producer.Fail(abi::RingError::SHUTDOWN);
      ring_cqs_.erase(it);
    }
  }
  return status;
}

Status SoftCa::PollCq(uint32_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* count) {
  Locked locked(this);
  *count = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  CompletionQueue* q = hca_.Cq(cq);
  if (q == nullptr) return Status::INVALID_CQ_HANDLE;
  *count = q->Poll(wcs);
  return *count == 0 ? Status::NOT_FOUND : Status::SUCCESS;
}

Status SoftCa::PeekCq(uint32_t cq, uint32_t* count) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  CompletionQueue* q = hca_.Cq(cq);
  if (q == nullptr) return Status::INVALID_CQ_HANDLE;
  *count = q->count();
  return Status::SUCCESS;
}

Status SoftCa::RearmCq(uint32_t cq, abi::CqNotify notify) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  CompletionQueue* q = hca_.Cq(cq);
  if (q == nullptr) return Status::INVALID_CQ_HANDLE;
  q->RequestNotify(notify);
  return Status::SUCCESS;
}

// ---- QP ----------------------------------------------------------------------------------

Status SoftCa::CreateQp(uint32_t pd, const abi::QpCreateParams& params, uint32_t send_cq,
                        uint32_t recv_cq, uint32_t srq, uint32_t* qpn, abi::QpCaps* caps) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  const Status status = hca_.CreateQp(pd, params, send_cq, recv_cq, srq, qpn);
  if (status != Status::SUCCESS) return status;
  *caps = hca_.Qp(*qpn)->caps;
  if (params.qp_type == abi::QpType::RC) rc_qps_.insert(*qpn);
  qps_.insert(*qpn);
  return status;
}

Status SoftCa::CreateSpecialQp(uint32_t pd, uint8_t port, const abi::QpCreateParams& params,
                               uint32_t send_cq, uint32_t recv_cq, uint32_t* qp, uint32_t* qp_num,
                               abi::QpCaps* caps) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  const Status status = hca_.CreateSpecialQp(pd, port, params, send_cq, recv_cq, qp);
  if (status != Status::SUCCESS) return status;
  *qp_num = *qp & 1;
  *caps = hca_.Qp(*qp)->caps;
  qps_.insert(*qp);
  return status;
}

Status SoftCa::ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attributes) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  const Status status = hca_.ModifyQp(qpn, attributes);
  if (status == Status::SUCCESS && attributes.state == abi::QpState::RESET &&
      abi::HasAny(attributes.mask, abi::QpAttrMask::STATE)) {
    // Reset discards outstanding work (IBA 10.3.1), what still waits in the rings included.
    if (auto it = ring_qps_.find(qpn); it != ring_qps_.end()) {
      abi::SendWorkRequest send;
      while (it->second.send.Pop(&send) == rings::PopResult::kEntry) {
      }
      abi::RecvWorkRequest recv;
      while (it->second.recv.attached() && it->second.recv.Pop(&recv) == rings::PopResult::kEntry) {
      }
    }
  }
  return status;
}

Status SoftCa::QueryQp(uint32_t qpn, abi::QpAttributes* attributes) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.QueryQp(qpn, attributes);
}

Status SoftCa::DestroyQp(uint32_t qpn) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  const Status status = hca_.DestroyQp(qpn);
  if (status != Status::SUCCESS) return status;
  rc_qps_.erase(qpn);
  qps_.erase(qpn);
  if (auto it = ring_qps_.find(qpn); it != ring_qps_.end()) {
    it->second.send.Fail(abi::RingError::SHUTDOWN);
    if (it->second.recv.attached()) it->second.recv.Fail(abi::RingError::SHUTDOWN);
    ring_qps_.erase(it);
  }
  return status;
}

Status SoftCa::PostSend(uint32_t qpn, std::span<const abi::SendWorkRequest> wrs,
                        uint32_t* num_posted) {
  Locked locked(this);
  *num_posted = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  hca_.SetNow(SteadyNowNs());  // the ACK timer of what this posts starts now
  for (const abi::SendWorkRequest& wr : wrs) {
    const Status status = hca_.PostSend(qpn, wr);
    if (status != Status::SUCCESS) return status;
    ++*num_posted;
  }
  if (*num_posted != 0 && rc_qps_.count(qpn) != 0) ArmTickLocked();
  return Status::SUCCESS;
}

Status SoftCa::PostRecv(uint32_t qpn, std::span<const abi::RecvWorkRequest> wrs,
                        uint32_t* num_posted) {
  Locked locked(this);
  *num_posted = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  for (const abi::RecvWorkRequest& wr : wrs) {
    const Status status = hca_.PostRecv(qpn, wr);
    if (status != Status::SUCCESS) return status;
    ++*num_posted;
  }
  return Status::SUCCESS;
}

// ---- SRQ, MW, multicast --------------------------------------------------------------------

Status SoftCa::CreateSrq(uint32_t pd, const abi::SrqAttributes& attributes, uint32_t* srq,
                         abi::SrqAttributes* granted) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.CreateSrq(pd, attributes, srq, granted);
}

Status SoftCa::ModifySrq(uint32_t srq, abi::SrqAttrMask mask,
                         const abi::SrqAttributes& attributes) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.ModifySrq(srq, mask, attributes);
}

Status SoftCa::QuerySrq(uint32_t srq, abi::SrqAttributes* attributes) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.QuerySrq(srq, attributes);
}

Status SoftCa::DestroySrq(uint32_t srq) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  const Status status = hca_.DestroySrq(srq);
  if (status == Status::SUCCESS) {
    if (auto it = ring_srqs_.find(srq); it != ring_srqs_.end()) {
      it->second.ring.Fail(abi::RingError::SHUTDOWN);
      ring_srqs_.erase(it);
    }
  }
  return status;
}

Status SoftCa::PostSrqRecv(uint32_t srq, std::span<const abi::RecvWorkRequest> wrs,
                           uint32_t* num_posted) {
  Locked locked(this);
  *num_posted = 0;
  if (locked.gone()) return Status::CA_REMOVED;
  for (const abi::RecvWorkRequest& wr : wrs) {
    const Status status = hca_.PostSrqRecv(srq, wr);
    if (status != Status::SUCCESS) return status;
    ++*num_posted;
  }
  return Status::SUCCESS;
}

Status SoftCa::AllocMw(uint32_t pd, abi::MwType type, uint32_t* mw, uint32_t* rkey) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.AllocMw(pd, type, mw, rkey);
}

Status SoftCa::QueryMw(uint32_t mw, abi::MwType* type, uint32_t* rkey) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  PdId pd = 0;
  return hca_.QueryMw(mw, &pd, type, rkey);
}

Status SoftCa::DestroyMw(uint32_t mw) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  return hca_.DestroyMw(mw);
}

Status SoftCa::BindMw(uint32_t mw, uint32_t qpn, uint32_t mr_key, const abi::MwBindParams& bind,
                      uint32_t* rkey) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  const Status status = hca_.BindMw(mw, qpn, mr_key, bind, rkey);
  if (status == Status::SUCCESS && rc_qps_.count(qpn) != 0) ArmTickLocked();
  return status;
}

Status SoftCa::AttachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) {
  Locked locked(this);
  if (locked.gone()) return Status::CA_REMOVED;
  return hca_.AttachMcast(qpn, mgid, mlid);
}

Status SoftCa::DetachMcast(uint32_t qpn, const abi::Gid& mgid, uint16_t mlid) {
  Locked locked(this);
  if (locked.gone()) return Status::SUCCESS;
  return hca_.DetachMcast(qpn, mgid, mlid);
}

}  // namespace softib::hca

// The AL's QP0/QP1 of a port: bring-up, buffers, posting, completion processing, and the
// timer that retries sends whose response did not come.
#include "runtime/al/src/special_qp.h"

#include <endian.h>

#include <algorithm>
#include <thread>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/mad_service.h"
#include "softib/kernel/dpc.h"
#include "softib/rmpp/rmpp.h"

namespace softib::al {

using kernel::Status;

namespace {
constexpr uint32_t kRecvBytes = mad::kGrhSize + mad::kMadSize;
constexpr uint64_t kRecvTag = uint64_t{1} << 63;  // wr_id of receives
}  // namespace

MadSend::~MadSend() = default;

SpecialQp::SpecialQp(AlCa* ca, uint8_t port, abi::QpType type)
    : ca_(ca), port_(port), type_(type) {}

SpecialQp::~SpecialQp() = default;

void SpecialQp::InitResources() {
  kernel::KeInitializeTimer(&timer_, ca_->al->node);
  kernel::KeInitializeDpc(&timer_dpc_, ca_->al->node, &SpecialQp::TimerDpc, this);
  kernel::KeInitializeDpc(&completion_dpc_, ca_->al->node, &SpecialQp::CompletionDpc, this);
  kernel::KeInitializeDpc(&ah_dpc_, ca_->al->node, &SpecialQp::AhDpc, this);
  memory_.assign(kRecvDepth * kRecvBytes + kSendSlots * mad::kMadSize, 0);
  slots_.assign(kSendSlots, Slot{});
  slot_to_.assign(kSendSlots, MadAddress{});
  for (uint32_t i = kSendSlots; i > 0; --i) free_slots_.push_back(i - 1);
}

void SpecialQp::Start(std::function<void(Status)> done) { StartTask(std::move(done)); }

// The bring-up as one chain of CI IRPs to the CA's device (issue 17): each step continues
// in the previous one's completion, inline when the HCA completed at once, else in its
// DPC. The receives and the CQ's arming are speed-path calls, direct.
kernel::IrpTask SpecialQp::StartTask(std::function<void(Status)> done) {
  kernel::DeviceObject* const device = ca_->lower;
  constexpr kernel::ProcessorMode kKernel = kernel::ProcessorMode::kKernelMode;
  InitResources();
  abi::CiAllocPdOut pd{};
  Status s = co_await CiIrp(device, kernel::BuildCiAllocPdIrp(device, nullptr, kKernel, &pd), &pd,
                            sizeof pd);
  if (s == Status::SUCCESS) {
    pd_ = pd.pd;
    const abi::CiCreateCqIn in{kRecvDepth + kSendSlots, 0};
    abi::CiCreateCqOut out{};
    s = co_await CiIrp(device, kernel::BuildCiCreateCqIrp(device, nullptr, kKernel, in, &out), &out,
                       sizeof out);
    if (s == Status::SUCCESS) cq_ = out.cq;
  }
  if (s == Status::SUCCESS) {
    abi::CiRegisterMrIn in{};
    in.pd = pd_;
    in.access = abi::AccessFlags::LOCAL_WRITE;
    in.vaddr = reinterpret_cast<uint64_t>(memory_.data());
    in.length = memory_.size();
    abi::CiRegisterMrOut out{};
    s = co_await CiIrp(device, kernel::BuildCiRegisterMrIrp(device, nullptr, kKernel, in, &out),
                       &out, sizeof out);
    if (s == Status::SUCCESS) key_ = out.key;
  }
  if (s == Status::SUCCESS && type_ == abi::QpType::MAD) {
    // A client's MAD QP (mad_qp.cc): a UD QP of the AL's PD, which the client brings up with
    // ModifyQp (OnModified posts the receives then).
    abi::CiCreateQpIn in{};
    in.pd = pd_;
    in.send_cq = cq_;
    in.recv_cq = cq_;
    in.params.qp_type = abi::QpType::UD;
    in.params.sq_signaled = 1;
    in.params.caps = {kSendSlots, kRecvDepth, 1, 1, 0, 0};
    abi::CiCreateQpOut out{};
    s = co_await CiIrp(device, kernel::BuildCiCreateQpIrp(device, nullptr, kKernel, in, &out), &out,
                       sizeof out);
    if (s == Status::SUCCESS) {
      qp_ = out.qpn;
      started_ = true;
      s = ca_->ci->RearmCq(cq_, abi::CqNotify::NEXT);
    }
    done(s);  // the last touch of this QP
    co_return;
  }
  if (s == Status::SUCCESS) {
    abi::CiCreateSpecialQpIn in{};
    in.pd = pd_;
    in.send_cq = cq_;
    in.recv_cq = cq_;
    in.port = port_;
    in.params.qp_type = type_;
    in.params.sq_signaled = 1;
    in.params.caps = {kSendSlots, kRecvDepth, 1, 1, 0, 0};
    abi::CiCreateSpecialQpOut out{};
    s = co_await CiIrp(device,
                       kernel::BuildCiCreateSpecialQpIrp(device, nullptr, kKernel, in, &out), &out,
                       sizeof out);
    if (s == Status::SUCCESS) {
      qp_ = out.qp;
      started_ = true;
      receiving_ = true;
    }
  }
  using M = abi::QpAttrMask;
  for (int step = 0; step < 3 && s == Status::SUCCESS; ++step) {
    abi::CiModifyQpIn in{};
    in.qpn = qp_;
    abi::QpModifyAttributes& a = in.attributes;
    if (step == 0) {
      a.mask = M::STATE | M::PKEY_INDEX | M::QKEY;
      a.state = abi::QpState::INIT;
      a.qkey = htobe32(smi() ? 0 : mad::kGsiQkey);
    } else if (step == 1) {
      a.mask = M::STATE;
      a.state = abi::QpState::RTR;
    } else {
      a.mask = M::STATE | M::SQ_PSN;
      a.state = abi::QpState::RTS;
    }
    s = co_await CiIrp(device, kernel::BuildCiModifyQpIrp(device, nullptr, kKernel, in));
  }
  for (uint32_t i = 0; i < kRecvDepth && s == Status::SUCCESS; ++i) s = PostRecv(i);
  if (s == Status::SUCCESS) s = ca_->ci->RearmCq(cq_, abi::CqNotify::NEXT);
  done(s);  // the last touch of this QP
}

void SpecialQp::Close() {
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    if (stopped_) return;
    stopped_ = true;
    for (MadAgent* svc : services_) {
      std::vector<std::shared_ptr<MadSend>> sends;
      for (auto& [id, send] : svc->sends) sends.push_back(send);
      for (auto& send : sends) Finish(send, abi::WcStatus::CANCELED, after);
    }
  }
  for (auto& f : after) f();
  {
    kernel::SpinLockGuard guard(dpc_gate_);
    dpc_closed_ = true;
  }
  kernel::KeCancelTimer(&timer_);
  if (started_) {
    SendRelease(kernel::BuildCiDestroyQpIrp(ca_->lower, nullptr, kernel::ProcessorMode::kKernelMode,
                                            abi::CiDestroyQpIn{qp_}));
  }
}

kernel::IrpTask SpecialQp::ReleaseTask(kernel::Irp* irp) {
  (void)co_await CiIrp(ca_->lower, irp);  // a release fails only for a removed CA: gone anyway
  ci_in_flight_.fetch_sub(1, std::memory_order_acq_rel);  // the last touch of this QP
}

void SpecialQp::SendRelease(kernel::Irp* irp) {
  ci_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  ReleaseTask(irp);
}

// The QP's CI IRPs complete without the AL's help (the HCA completes a pended one from its
// own DPC), so this only waits, as a removal waits for the device's outstanding I/O.
void SpecialQp::WaitForCiIrps() {
  while (ci_in_flight_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void SpecialQp::Stop() {
  Close();
  {
    kernel::SpinLockGuard guard(lock);
    if (released_) return;
    released_ = true;
  }
  kernel::KeFlushQueuedDpcs(ca_->al->node);  // the timer's and the completions' DPCs
  // The QP's destruction and the SMA/PMA answers in flight (smi.cc; none starts once the
  // completion DPCs are done) finish in their completions.
  WaitForCiIrps();
  constexpr kernel::ProcessorMode kKernel = kernel::ProcessorMode::kKernelMode;
  kernel::DeviceObject* const device = ca_->lower;
  {
    kernel::SpinLockGuard guard(lock);
    FlushAhsLocked();
    for (Slot& slot : slots_) slot = Slot{};
    reassembly_.clear();
  }
  // The MR and CQ before the PD they belong to.
  if (key_ != 0) SendRelease(kernel::BuildCiDeregisterMrIrp(device, nullptr, kKernel, {key_}));
  if (cq_ != 0) SendRelease(kernel::BuildCiDestroyCqIrp(device, nullptr, kKernel, {cq_}));
  WaitForCiIrps();
  if (pd_ != 0) SendRelease(kernel::BuildCiFreePdIrp(device, nullptr, kKernel, {pd_}));
  WaitForCiIrps();
}

Status SpecialQp::PostRecv(uint32_t index) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = kRecvTag | index;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(memory_.data()) + uint64_t{index} * kRecvBytes,
               kRecvBytes, key_};
  uint32_t posted = 0;
  return ca_->ci->PostRecv(qp_, {&wr, 1}, &posted);
}

Status SpecialQp::PostRawLocked(const uint8_t* bytes, const MadAddress& to) {
  return PostLocked(nullptr, bytes, to);
}

// One MAD into a free send slot, through the AH of its address (special_qp_ah.cc): posted
// at once when the AH exists, else when its CiCreateAh IRP completes (the slot is taken
// and the MAD copied now, so a full QP or a bad address is still refused here).
Status SpecialQp::PostLocked(const std::shared_ptr<MadSend>& send, const uint8_t* bytes,
                             const MadAddress& to) {
  if (stopped_ || !started_) return Status::INSUFFICIENT_RESOURCES;
  if (free_slots_.empty()) return Status::INSUFFICIENT_RESOURCES;
  if (ca_->removed.load(std::memory_order_acquire)) return Status::CA_REMOVED;
  abi::AddressVector av = to.av;
  av.port_num = port_;
  AhEntry* entry = AhForLocked(av);
  if (entry == nullptr) return Status::INVALID_SETTING;
  const uint32_t index = free_slots_.back();
  uint8_t* buffer = memory_.data() + kRecvDepth * kRecvBytes + uint64_t{index} * mad::kMadSize;
  std::memcpy(buffer, bytes, mad::kMadSize);
  free_slots_.pop_back();
  ++entry->uses;
  slots_[index] = Slot{send, entry};
  if (entry->ah == 0) {  // its CiCreateAh is in flight: posted from its completion
    slot_to_[index] = to;
    entry->waiting.push_back(index);
  } else if (const Status s = PostSlotLocked(index, to); s != Status::SUCCESS) {
    slots_[index] = Slot{};
    free_slots_.push_back(index);
    ReleaseAhLocked(entry);
    return s;
  }
  if (send) ++send->on_wire;
  return Status::SUCCESS;
}

Status SpecialQp::PostSlotLocked(uint32_t index, const MadAddress& to) {
  uint8_t* buffer = memory_.data() + kRecvDepth * kRecvBytes + uint64_t{index} * mad::kMadSize;
  abi::SendWorkRequest wr{};
  wr.wr_id = index;
  wr.wr_type = abi::WrType::SEND;
  wr.send_flags = abi::SendFlags::SIGNALED;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(buffer), mad::kMadSize, key_};
  wr.av.value = slots_[index].ah->ah;
  wr.remote_qpn = to.remote_qpn;
  wr.remote_qkey = to.remote_qkey;
  wr.pkey_index = to.pkey_index;
  uint32_t posted = 0;
  const Status s = ca_->ci->PostSend(qp_, {&wr, 1}, &posted);
  if (s != Status::SUCCESS) return s;
  return posted == 1 ? Status::SUCCESS : Status::INSUFFICIENT_RESOURCES;
}

Status SpecialQp::Send(std::shared_ptr<MadSend> send) {
  After after;
  Status s;
  {
    kernel::SpinLockGuard guard(lock);
    auto* svc = send->svc.get();
    if (stopped_) return Status::INSUFFICIENT_RESOURCES;
    if (smi() && (s = SmiPrepareSend(*send)) != Status::SUCCESS) return s;
    ApplyRedirectLocked(*send);
    send->send_id = svc->next_send_id++;
    if (send->rmpp) {
      s = StartRmppLocked(send, after);
    } else {
      s = PostLocked(send, send->mad.data(), send->to);
    }
    if (s == Status::SUCCESS) svc->sends[send->send_id] = send;
  }
  for (auto& f : after) f();
  return s;
}

Status SpecialQp::Cancel(MadAgent* svc, uint64_t send_id) {
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    auto it = svc->sends.find(send_id);
    if (it == svc->sends.end()) return Status::NOT_FOUND;
    Finish(it->second, abi::WcStatus::CANCELED, after);
  }
  for (auto& f : after) f();
  return Status::SUCCESS;
}

// The send is over: out of its service's table, and its completion event queued (after
// the lock drops).
void SpecialQp::Finish(std::shared_ptr<MadSend> send, abi::WcStatus status, After& after) {
  if (send->done) return;
  send->done = true;
  send->waiting = false;
  auto* svc = send->svc.get();
  svc->sends.erase(send->send_id);
  abi::MadEventRecord record{};
  record.kind = abi::MadEventKind::SEND_COMPLETED;
  record.status = status;
  record.send_id = send->send_id;
  record.send_context = send->context;
  svc->Hold();  // until the event is posted
  after.push_back([svc, record] {
    svc->Post(record, {});
    svc->Release();
  });
}

void SpecialQp::Wait(const std::shared_ptr<MadSend>& send) {
  send->deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(1u, send->timeout_ms));
  send->waiting = true;
  ArmTimerLocked();
}

// One timer for the QP: due at the earliest deadline of the sends that wait and of the
// RMPP transfers being received.
void SpecialQp::ArmTimerLocked() {
  if (stopped_) return;
  auto earliest = std::chrono::steady_clock::time_point::max();
  for (MadAgent* svc : services_) {
    for (auto& [id, send] : svc->sends) {
      if (send->waiting) earliest = std::min(earliest, send->deadline);
    }
  }
  earliest = std::min(earliest, EarliestInboundLocked());
  if (earliest == std::chrono::steady_clock::time_point::max()) return;
  const auto due = std::max<std::chrono::nanoseconds>(earliest - std::chrono::steady_clock::now(),
                                                      std::chrono::milliseconds(1));
  kernel::KeSetTimer(&timer_, due, &timer_dpc_);
}

void SpecialQp::TimerDpc(kernel::Kdpc*, void* context, void*, void*) {
  static_cast<SpecialQp*>(context)->OnTimer();
}

// Sends whose deadline passed: sent again while retries remain, else RESP_TIMEOUT_ERR.
void SpecialQp::OnTimer() {
  After after;
  {
    kernel::SpinLockGuard guard(lock);
    if (stopped_) return;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<MadSend>> due;
    for (MadAgent* svc : services_) {
      for (auto& [id, send] : svc->sends) {
        if (send->waiting && send->deadline <= now) due.push_back(send);
      }
    }
    for (auto& send : due) {
      send->waiting = false;
      RedirectTimeoutLocked(*send);
      if (send->rmpp) {
        RmppTimeoutLocked(send, after);
        continue;
      }
      if (send->retries_left == 0) {
        Finish(send, abi::WcStatus::RESP_TIMEOUT_ERR, after);
        continue;
      }
      --send->retries_left;
      retries.fetch_add(1, std::memory_order_relaxed);
      const Status s = PostLocked(send, send->mad.data(), send->to);
      if (s != Status::SUCCESS) Finish(send, abi::WcStatus::LOCAL_QP_OP_ERR, after);
    }
    ExpireInboundLocked(now);
    ArmTimerLocked();
  }
  for (auto& f : after) f();
}

void SpecialQp::OnCompletion() {
  // Stop closes the gate before it flushes the DPCs, so nothing is queued after that (a MAD
  // QP's news may race its destruction). Not `lock`: this may run inside a CI call made
  // under it.
  kernel::SpinLockGuard guard(dpc_gate_);
  if (!dpc_closed_) kernel::KeInsertQueueDpc(&completion_dpc_, nullptr, nullptr);
}

void SpecialQp::CompletionDpc(kernel::Kdpc*, void* context, void*, void*) {
  static_cast<SpecialQp*>(context)->ProcessCompletions();
}

void SpecialQp::ProcessCompletions() {
  for (;;) {
    Drain();
    if (ca_->ci->RearmCq(cq_, abi::CqNotify::NEXT) != Status::SUCCESS) return;
    uint32_t count = 0;
    if (ca_->ci->PeekCq(cq_, &count) != Status::SUCCESS || count == 0) return;
  }
}

void SpecialQp::Drain() {
  for (;;) {
    abi::WorkCompletion wcs[16];
    uint32_t n = 0;
    if (ca_->ci->PollCq(cq_, wcs, &n) != Status::SUCCESS || n == 0) return;
    for (uint32_t i = 0; i < n; ++i) {
      if ((wcs[i].wr_id & kRecvTag) != 0) {
        OnReceive(wcs[i]);
      } else {
        After after;
        {
          kernel::SpinLockGuard guard(lock);
          OnSendDone(wcs[i], after);
        }
        for (auto& f : after) f();
      }
    }
  }
}

void SpecialQp::OnSendDone(const abi::WorkCompletion& wc, After& after) {
  if (wc.wr_id >= slots_.size()) return;
  Slot slot = std::exchange(slots_[wc.wr_id], Slot{});
  if (slot.ah != nullptr) ReleaseAhLocked(slot.ah);
  free_slots_.push_back(static_cast<uint32_t>(wc.wr_id));
  const std::shared_ptr<MadSend>& send = slot.send;
  if (!send) return;
  --send->on_wire;
  if (send->done) return;
  if (wc.status != abi::WcStatus::SUCCESS) {
    Finish(send, wc.status, after);
  } else if (send->rmpp) {
    PumpRmppLocked(send, after);
  } else if (!send->response_expected) {
    Finish(send, abi::WcStatus::SUCCESS, after);
  } else if (send->on_wire == 0 && !send->waiting) {
    Wait(send);
  }
}

void SpecialQp::OnReceive(const abi::WorkCompletion& wc) {
  const uint32_t index = static_cast<uint32_t>(wc.wr_id & ~kRecvTag);
  if (index >= kRecvDepth) return;
  if (wc.status == abi::WcStatus::SUCCESS && wc.length >= kRecvBytes) {
    const uint8_t* buffer = memory_.data() + uint64_t{index} * kRecvBytes;
    uint8_t copy[mad::kMadSize];
    std::memcpy(copy, buffer + mad::kGrhSize, sizeof(copy));
    MadOrigin origin;
    origin.wc = wc;
    origin.grh = (wc.flags & abi::WcFlags::GRH) == abi::WcFlags::GRH;
    if (origin.grh) std::memcpy(origin.sgid.raw, buffer + 8, 16);
    // The buffer goes back first: the MAD was copied out.
    if (!stopped_) PostRecv(index);
    Route(copy, origin);
    return;
  }
  if (wc.status != abi::WcStatus::WR_FLUSH_ERR && !stopped_) PostRecv(index);
}

}  // namespace softib::al

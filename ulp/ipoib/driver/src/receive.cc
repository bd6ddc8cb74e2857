// Receive: the receive ring (kRxSlots buffers of the one registration, each with room for
// the GRH), and the CQ's completions handled in a DPC — the CQ's GetCompletionEvent IRP,
// kept pending at the PDO, queues it; it polls, re-arms, polls again, and sends the event
// IRP again. A received packet is translated in place (TranslateToHost: the Ethernet
// header takes the GRH's room) and handed to the face; send completions free their slot.
#include <cstring>

#include "internal.h"
#include "kernel/runtime_ioctls_direct.h"
#include "softib/al/access_layer.h"

namespace softib::ipoib {

using kernel::Status;

void PostReceiveSlot(Interface* i, uint32_t slot) {
  abi::RecvWorkRequest wr{};
  wr.wr_id = slot;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(i->rx_base + static_cast<size_t>(slot) * kSlotBytes),
               kSlotBytes, i->lkey};
  uint32_t posted = 0;
  kernel::IbPostRecv(i->al, i->qp, {&wr, 1}, &posted);
}

namespace {

constexpr uint32_t kPollBatch = 32;  // completions per IbPollCq

void IssueCqEvent(Interface* i);

void OnReceive(Interface* i, const abi::WorkCompletion& wc, std::vector<uint32_t>* repost) {
  const auto slot = static_cast<uint32_t>(wc.wr_id);
  uint8_t* buffer = i->rx_base + static_cast<size_t>(slot) * kSlotBytes;
  RxResult result{};
  bool deliver = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    if (wc.status != abi::WcStatus::SUCCESS) {
      // Flushed (the QP leaving RTS) or an error: nothing to deliver.
      ++i->counters.rx_dropped;
    } else if (wc.length < kGrhBytes + kEncapBytes) {
      CountDropLocked(i, Drop::kRunt, false);
    } else {
      RxSource source{};
      source.qpn = wc.src_qp & 0xFFFFFF;
      source.slid = wc.slid;
      source.has_grh =
          (static_cast<uint32_t>(wc.flags) & static_cast<uint32_t>(abi::WcFlags::GRH)) != 0;
      if (source.has_grh) {
        std::memcpy(source.sgid.data(), buffer + 8, 16);
        std::memcpy(source.dgid.data(), buffer + 24, 16);
      }
      result = i->team != nullptr && LbfoFromSiblingLocked(i, source)
                   ? RxResult{Drop::kLoopedBack}
                   : TranslateToHost({buffer, kSlotBytes}, kGrhBytes, wc.length - kGrhBytes, source,
                                     i->local, i->neighbours);
      if (result.drop != Drop::kNone) {
        CountDropLocked(i, result.drop, false);
      } else {
        ++i->counters.rx_packets;
        i->counters.rx_bytes += result.length;
        deliver = true;
        IbatLearnLocked(i, {buffer + result.offset, result.length}, false);
      }
    }
  }
  if (deliver) i->face->DeliverToHost({buffer + result.offset, result.length});
  repost->push_back(slot);
}

// The receive slots of one poll, posted again in one call (the ring refilled as soon as the
// batch was delivered).
void RepostReceives(Interface* i, std::span<const uint32_t> slots) {
  if (slots.empty()) return;
  abi::RecvWorkRequest wrs[kPollBatch];
  for (size_t n = 0; n < slots.size(); ++n) {
    wrs[n] = {};
    wrs[n].wr_id = slots[n];
    wrs[n].num_sge = 1;
    wrs[n].sge[0] = {
        reinterpret_cast<uint64_t>(i->rx_base + static_cast<size_t>(slots[n]) * kSlotBytes),
        kSlotBytes, i->lkey};
  }
  kernel::SpinLockGuard guard(i->lock);
  if (i->stopping) return;
  uint32_t posted = 0;
  kernel::IbPostRecv(i->al, i->qp, {wrs, slots.size()}, &posted);
}

void OnSendDone(Interface* i, const abi::WorkCompletion& wc) {
  kernel::SpinLockGuard guard(i->lock);
  i->tx_free.push_back(static_cast<uint32_t>(wc.wr_id & ~kSendWrBit));
  if (wc.status != abi::WcStatus::SUCCESS) ++i->counters.tx_dropped;
}

// Polls until the CQ is empty; false when the interface stops.
bool Drain(Interface* i) {
  abi::WorkCompletion wcs[kPollBatch];
  std::vector<uint32_t> repost;
  repost.reserve(kPollBatch);
  for (;;) {
    uint32_t count = 0;
    {
      kernel::SpinLockGuard guard(i->lock);
      if (i->stopping) return false;
      if (kernel::IbPollCq(i->al, i->cq, wcs, &count) != Status::SUCCESS) count = 0;
    }
    if (count == 0) return true;
    repost.clear();
    for (uint32_t n = 0; n < count; ++n) {
      if ((wcs[n].wr_id & kCmWrBit) != 0) {
        CmOnCompletion(i, wcs[n]);
      } else if ((wcs[n].wr_id & kSendWrBit) != 0) {
        OnSendDone(i, wcs[n]);
      } else {
        OnReceive(i, wcs[n], &repost);
      }
    }
    RepostReceives(i, repost);
    SendHeldFrames(i);  // flow.cc: slots the send completions freed take the frames held
  }
}

void CqDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* i = static_cast<Interface*>(context);
  if (Drain(i)) {
    bool rearmed = false;
    {
      kernel::SpinLockGuard guard(i->lock);
      if (!i->stopping) {
        kernel::IbRearmCq(i->al, i->cq, abi::CqNotify::NEXT);
        rearmed = true;
      }
    }
    // What completed between the last poll and the arm.
    if (rearmed && Drain(i)) IssueCqEvent(i);
  }
  i->Release();
}

void IssueCqEvent(Interface* i) {
  if (Stopping(i)) return;
  kernel::Irp* irp = kernel::BuildGetCompletionEventIrp(i->pdo, i->file, {{i->cq}}, &i->cq_event);
  SendVerb(i, irp, &i->cq_event, sizeof i->cq_event, [i](Status status, uint64_t) {
    if (status != Status::SUCCESS || Stopping(i)) return;  // CANCELED: the interface stops
    i->Hold();
    if (!kernel::KeInsertQueueDpc(&i->cq_dpc, nullptr, nullptr)) i->Release();
  });
}

}  // namespace

void StartReceive(Interface* i) {
  kernel::KeInitializeDpc(&i->cq_dpc, i->node, &CqDpc, i);
  {
    kernel::SpinLockGuard guard(i->lock);
    kernel::IbRearmCq(i->al, i->cq, abi::CqNotify::NEXT);
  }
  // Anything that completed before the arm (nothing has been sent yet).
  i->Hold();
  if (!kernel::KeInsertQueueDpc(&i->cq_dpc, nullptr, nullptr)) i->Release();
}

}  // namespace softib::ipoib

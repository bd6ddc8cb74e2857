// The send ring's back-pressure (as a NIC driver's netif_stop_queue / netif_wake_queue): a
// host frame that finds its send ring full (UD or RC) is held, the face is told to stop
// handing frames (EthernetFace::StopQueue: the TAP face stops reading, so the host's stack
// holds them), and when send completions free slots the CQ's DPC sends the held frames in
// order and wakes the face once none is left. Frames arriving while others are held wait
// behind them (order kept). A face that does not stop fills the hold up to kMaxHeldFrames;
// beyond it a frame is dropped and counted (Drop::kSendQueueFull).
#include <utility>

#include "internal.h"

namespace softib::ipoib {

bool HoldFrameLocked(Interface* i, std::span<const uint8_t> frame, bool ring_full, bool resend) {
  TxFlow& flow = i->flow;
  if (!ring_full && (resend || (flow.held.empty() && !flow.draining))) return false;
  if (resend) {
    flow.held.emplace_front(frame.begin(), frame.end());
    ++flow.requeued;
  } else if (flow.held.size() >= kMaxHeldFrames) {
    CountDropLocked(i, Drop::kSendQueueFull, true);
  } else {
    flow.held.emplace_back(frame.begin(), frame.end());
  }
  flow.pending.store(!flow.held.empty(), std::memory_order_relaxed);
  // Under the lock, as WakeQueue is: the face sees them in the order they were decided (a
  // StopQueue told after the unlock could come after the WakeQueue that answers it).
  if (!flow.held.empty() && !flow.face_stopped) {
    flow.face_stopped = true;
    i->face->StopQueue();
  }
  return true;
}

void SendHeldFrames(Interface* i) {
  if (!i->flow.pending.load(std::memory_order_relaxed)) return;
  for (;;) {
    std::vector<uint8_t> frame;
    uint64_t requeued = 0;
    {
      kernel::SpinLockGuard guard(i->lock);
      TxFlow& flow = i->flow;
      if (flow.draining) {  // another DPC resends them: it tries again after its frame
        flow.again = true;
        return;
      }
      if (i->stopping) {
        flow.held.clear();
        flow.pending.store(false, std::memory_order_relaxed);
        return;
      }
      if (flow.held.empty()) {
        flow.pending.store(false, std::memory_order_relaxed);
        if (std::exchange(flow.face_stopped, false)) i->face->WakeQueue();
        return;
      }
      frame = std::move(flow.held.front());
      flow.held.pop_front();
      flow.draining = true;
      flow.again = false;
      requeued = flow.requeued;
    }
    TransmitFrame(i, frame, true);
    kernel::SpinLockGuard guard(i->lock);
    i->flow.draining = false;
    // Back at the front: the ring is full again; the next completion goes on (unless one
    // came meanwhile and found us busy: then try again now).
    if (i->flow.requeued != requeued && !std::exchange(i->flow.again, false)) return;
  }
}

}  // namespace softib::ipoib

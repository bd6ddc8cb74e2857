// The node's DPC thread: runs queued DPCs at DISPATCH in FIFO order and expires timers.
#include "softib/kernel/dpc.h"

#include "node_impl.h"
#include "softib/kernel/event.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {

DpcEngine::DpcEngine(Node* node) : node_(node) {}

DpcEngine::~DpcEngine() { Stop(); }

void DpcEngine::Start() {
  thread_ = std::thread([this] { Run(); });
}

void DpcEngine::Stop() {
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, timer] : timers_) timer->set = false;
    timers_.clear();
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool DpcEngine::InsertLocked(Kdpc* dpc, void* arg1, void* arg2) {
  if (dpc->queued) return false;
  dpc->queued = true;
  dpc->arg1 = arg1;
  dpc->arg2 = arg2;
  queue_.push_back(dpc);
  cv_.notify_all();
  return true;
}

bool DpcEngine::Insert(Kdpc* dpc, void* arg1, void* arg2) {
  std::lock_guard lock(mutex_);
  return InsertLocked(dpc, arg1, arg2);
}

bool DpcEngine::Remove(Kdpc* dpc) {
  std::lock_guard lock(mutex_);
  if (!dpc->queued) return false;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (*it == dpc) {
      queue_.erase(it);
      break;
    }
  }
  dpc->queued = false;
  return true;
}

bool DpcEngine::Idle() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !running_;
}

void DpcEngine::Run() {
  SetCurrentNode(node_);
  SetThreadIrql(Irql::kDispatch);  // the DPC thread never leaves DISPATCH
  std::unique_lock lock(mutex_);
  for (;;) {
    FireExpiredTimers(std::chrono::steady_clock::now());
    if (!queue_.empty()) {
      Kdpc* dpc = queue_.front();
      queue_.pop_front();
      dpc->queued = false;  // it may be queued again from its own routine
      const DeferredRoutine routine = dpc->routine;
      void* const context = dpc->context;
      void* const arg1 = dpc->arg1;
      void* const arg2 = dpc->arg2;
      running_ = true;
      lock.unlock();
      routine(dpc, context, arg1, arg2);
      if (CurrentIrql() != Irql::kDispatch) {
        VerifierFail("DPC routine %p returned at %s (entered at DISPATCH_LEVEL)",
                     reinterpret_cast<void*>(routine), IrqlName(CurrentIrql()));
      }
      lock.lock();
      running_ = false;
      continue;
    }
    if (stop_) break;
    if (timers_.empty()) {
      cv_.wait(lock);
    } else {
      // A copy: the timer (and its map node) may go while this thread waits.
      const std::chrono::steady_clock::time_point next_due = timers_.begin()->first.first;
      cv_.wait_until(lock, next_due);
    }
  }
}

void KeInitializeDpc(Kdpc* dpc, Node* node, DeferredRoutine routine, void* context) {
  *dpc = Kdpc{};
  dpc->routine = routine;
  dpc->context = context;
  dpc->node = node;
}

bool KeInsertQueueDpc(Kdpc* dpc, void* arg1, void* arg2) {
  return dpc->node->impl().dpc.Insert(dpc, arg1, arg2);
}

bool KeRemoveQueueDpc(Kdpc* dpc) { return dpc->node->impl().dpc.Remove(dpc); }

void KeFlushQueuedDpcs(Node* node) {
  VerifyBlockingAllowed("KeFlushQueuedDpcs");
  // FIFO on one thread: once a marker queued now has run, so has everything before it.
  KEvent done(EventType::kNotification);
  Kdpc marker;
  KeInitializeDpc(
      &marker, node,
      [](Kdpc*, void* context, void*, void*) { static_cast<KEvent*>(context)->Set(); }, &done);
  KeInsertQueueDpc(&marker, nullptr, nullptr);
  KeWaitForSingleObject(&done);
}

}  // namespace softib::kernel

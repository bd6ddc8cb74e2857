// PASSIVE worker threads of a node and the IO_WORKITEM front end.
#include "softib/kernel/work_item.h"

#include "node_impl.h"
#include "softib/kernel/device.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {

WorkQueue::WorkQueue(Node* node, int threads) : node_(node), thread_count_(threads) {}

WorkQueue::~WorkQueue() { Stop(); }

void WorkQueue::Start() {
  for (int i = 0; i < thread_count_; ++i) threads_.emplace_back([this] { Run(); });
}

void WorkQueue::Stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void WorkQueue::Queue(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

bool WorkQueue::Idle() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && running_ == 0;
}

void WorkQueue::WaitIdle() {
  std::unique_lock lock(mutex_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
}

void WorkQueue::Run() {
  SetCurrentNode(node_);
  SetThreadIrql(Irql::kPassive);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!queue_.empty()) {
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      lock.unlock();
      work();
      if (CurrentIrql() != Irql::kPassive) {
        VerifierFail("work item returned at %s (entered at PASSIVE_LEVEL)",
                     IrqlName(CurrentIrql()));
      }
      work = nullptr;  // destroy captures outside the lock
      lock.lock();
      --running_;
      if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
      continue;
    }
    if (stop_) break;
    cv_.wait(lock);
  }
}

struct IoWorkItem {
  DeviceObject* device;
  std::atomic<bool> queued{false};
};

IoWorkItem* IoAllocateWorkItem(DeviceObject* device) {
  auto* item = new IoWorkItem{};
  item->device = device;
  return item;
}

void IoQueueWorkItem(IoWorkItem* item, IoWorkItemRoutine routine, void* context) {
  if (item->queued.exchange(true))
    VerifierFail("IoQueueWorkItem: work item %p already queued", item);
  DeviceObject* device = item->device;
  ObReferenceObject(device);  // the driver's device outlives the queued routine
  IoGetDeviceNode(device)->impl().work.Queue([item, routine, context, device] {
    item->queued.store(false);  // the routine may queue or free its item
    routine(device, context);
    ObDereferenceObject(device);
  });
}

void IoFreeWorkItem(IoWorkItem* item) {
  if (item->queued.load()) VerifierFail("IoFreeWorkItem: work item %p is still queued", item);
  delete item;
}

void IoFlushQueuedWorkItems(Node* node) {
  VerifyBlockingAllowed("IoFlushQueuedWorkItems");
  node->impl().work.WaitIdle();
}

}  // namespace softib::kernel

// Private to runtime/kernel: the state a Node owns, one component per concern.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "softib/kernel/dpc.h"
#include "softib/kernel/node.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/timer.h"

namespace softib::kernel {

struct DeviceObject;

// Thread context (irql.cc): the node's threads set their node and IRQL.
void SetCurrentNode(Node* node);
void SetThreadIrql(Irql irql);

// The DPC queue and the timers, served by one thread per node (dpc.cc, timer.cc).
class DpcEngine {
 public:
  explicit DpcEngine(Node* node);
  ~DpcEngine();  // stops the thread (after Stop)
  void Start();
  void Stop();  // drops armed timers, runs queued DPCs, joins

  bool Insert(Kdpc* dpc, void* arg1, void* arg2);
  bool Remove(Kdpc* dpc);
  bool SetTimer(Ktimer* timer, std::chrono::nanoseconds due, Kdpc* dpc,
                std::chrono::nanoseconds period);
  bool CancelTimer(Ktimer* timer);
  bool ReadTimer(Ktimer* timer);
  bool Idle();  // no DPC queued or running

 private:
  void Run();
  void FireExpiredTimers(std::chrono::steady_clock::time_point now);  // mutex_ held
  bool InsertLocked(Kdpc* dpc, void* arg1, void* arg2);

  Node* const node_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Kdpc*> queue_;
  std::map<std::pair<std::chrono::steady_clock::time_point, uint64_t>, Ktimer*> timers_;
  uint64_t next_timer_key_ = 1;
  bool running_ = false;  // a DPC routine is running
  bool stop_ = false;
  std::thread thread_;
};

// PASSIVE worker threads (work_item.cc).
class WorkQueue {
 public:
  WorkQueue(Node* node, int threads);
  ~WorkQueue();
  void Start();
  void Stop();  // runs what is queued, joins
  void Queue(std::function<void()> work);
  bool Idle();
  void WaitIdle();

 private:
  void Run();

  Node* const node_;
  const int thread_count_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The node's namespace and object counts (device.cc).
struct DeviceRegistry {
  std::mutex mutex;
  std::map<std::string, DeviceObject*, std::less<>> names;
  std::size_t devices = 0;
  std::size_t drivers = 0;
};

// Handle-table tags, unique among live tables (handle_table.cc).
struct TagAllocator {
  std::mutex mutex;
  uint32_t next = 1;
  std::deque<uint16_t> free;  // reused oldest-first
  uint16_t Allocate();
  void Free(uint16_t tag);
};

// PnP state (pnp.cc).
class PnpManager {
 public:
  explicit PnpManager(Node* node);
  ~PnpManager();
  Status Register(const std::string& interface_class, bool include_existing, PnpCallback callback,
                  void* context, PnpRegistration** out);
  void Unregister(PnpRegistration* registration);
  Status SetInterfaceState(DeviceObject* device, const std::string& interface_class, bool enable);
  void RemoveAllInterfaces(DeviceObject* device);  // IoDeleteDevice

 private:
  struct Event {
    PnpEvent event;
    std::string interface_class;
    DeviceObject* device;           // referenced while queued
    PnpRegistration* only;          // non-null: an existing interface for one new registration
    uint64_t registrations_before;  // general events go to registrations older than this
  };
  void QueueLocked(Event event);  // mutex_ held
  void Drain();                   // on a worker

  Node* const node_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<PnpRegistration*> registrations_;
  std::vector<std::pair<DeviceObject*, std::string>> interfaces_;
  std::deque<Event> events_;
  uint64_t next_serial_ = 1;
  bool draining_ = false;
};

struct Node::Impl {
  Impl(Node* node, const NodeOptions& options);
  std::string name;
  DpcEngine dpc;
  WorkQueue work;
  KSpinLock cancel_lock;
  DeviceRegistry registry;
  TagAllocator tags;
  PnpManager pnp;
};

}  // namespace softib::kernel

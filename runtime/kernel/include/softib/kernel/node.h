// A Node is one simulated host: it owns every kernel object of that host (devices, drivers,
// DPC queue and timers, worker threads, PnP registrations, the cancel spin lock). Several
// nodes can live in one process and share nothing; the only thread-wide state is the
// current IRQL and the current node of a thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace softib::kernel {

struct NodeOptions {
  std::string name = "node";
  int worker_threads = 2;  // PASSIVE work-item threads
};

class Node {
 public:
  explicit Node(NodeOptions options = {});
  // Runs what is still queued (DPCs, work items, PnP events), then stops the node's threads.
  // Timers still armed are dropped. Drivers and devices must be gone by then.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const;

  // The node whose thread this is (DPC and worker threads), or the one a NodeScope set.
  static Node* Current();

  // Live objects, for leak checks.
  std::size_t device_count() const;
  std::size_t driver_count() const;

  struct Impl;  // runtime/kernel private
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Makes `node` the current node of the calling thread for a scope.
class NodeScope {
 public:
  explicit NodeScope(Node* node);
  ~NodeScope();
  NodeScope(const NodeScope&) = delete;
  NodeScope& operator=(const NodeScope&) = delete;

 private:
  Node* previous_;
};

}  // namespace softib::kernel

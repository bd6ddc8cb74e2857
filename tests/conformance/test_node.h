// A booted node for the conformance harness and the fuzz targets: the node stack (HCA
// driver, two CAs cabled back to back, the Access Layer), the channel servers of the AL
// device and of each CA's device in a private run directory, and a kernel client's own
// device object (what IbOpenAl takes a reference on).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "softib/kernel/device.h"
#include "softib/kernel/node.h"
#include "softib/stack/node_stack.h"

namespace softib::conformance {

class TestNode {
 public:
  // Boots; null with `error` set on failure.
  static std::unique_ptr<TestNode> Start(std::string* error);
  ~TestNode();  // stops the servers, unloads the client driver, shuts the node down
  TestNode(const TestNode&) = delete;
  TestNode& operator=(const TestNode&) = delete;

  kernel::Node* node() const { return stack_->node(); }
  stack::NodeStack* stack() const { return stack_.get(); }
  uint64_t ca_guid() const { return ca_guid_; }  // the first CA, host order
  const std::string& ca_device() const { return ca_device_; }
  const std::string& run_dir() const { return run_dir_; }
  // The socket a user process opens for `device_name`.
  std::string SocketPath(const std::string& device_name) const;
  // The kernel client's device object (for IbOpenAl).
  kernel::DeviceObject* client_device() const { return client_device_; }

 private:
  TestNode() = default;
  bool Listen(const std::string& device_name, std::string* error);

  struct Listener;
  std::unique_ptr<stack::NodeStack> stack_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::string run_dir_;
  uint64_t ca_guid_ = 0;
  std::string ca_device_;
  kernel::DriverObject* client_driver_ = nullptr;
  kernel::DeviceObject* client_device_ = nullptr;
};

}  // namespace softib::conformance

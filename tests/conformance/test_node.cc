#include "test_node.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>

#include "softib/al/access_layer.h"
#include "softib/bridge/kernel_ioctl_sink.h"
#include "softib/channel/server.h"
#include "softib/kernel/io.h"

namespace softib::conformance {

struct TestNode::Listener {
  std::unique_ptr<bridge::KernelIoctlSink> sink;
  std::unique_ptr<channel::Server> server;
};

namespace {

// The kernel client is a driver with one unnamed device and no dispatch routines: the AL
// reaches its clients only by completing their IRPs.
kernel::Status InitClientDriver(kernel::DriverObject* driver, void* context) {
  auto** device = static_cast<kernel::DeviceObject**>(context);
  driver->Unload = [](kernel::DriverObject* self) {
    kernel::IoDeleteDevice(static_cast<kernel::DeviceObject*>(self->DriverExtension));
  };
  const kernel::Status status = kernel::IoCreateDevice(driver, 0, nullptr, 0, device);
  driver->DriverExtension = *device;
  return status;
}

void RemoveTree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str()); d != nullptr) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

}  // namespace

std::unique_ptr<TestNode> TestNode::Start(std::string* error) {
  std::unique_ptr<TestNode> t(new TestNode);
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/softib-conf.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = "mkdtemp failed";
    return nullptr;
  }
  t->run_dir_ = pattern;

  kernel::Status status = kernel::Status::SUCCESS;
  stack::NodeConfig config;
  config.name = "conformance";
  t->stack_ = stack::NodeStack::Boot(config, &status);
  if (t->stack_ == nullptr) {
    *error = std::string("NodeStack::Boot: ") + abi::ToString(status);
    return nullptr;
  }
  const std::vector<uint64_t> guids = t->stack_->ca_guids();
  if (guids.empty()) {
    *error = "the node has no CA";
    return nullptr;
  }
  t->ca_guid_ = guids.front();
  t->ca_device_ = t->stack_->ca_device_name(t->ca_guid_);
  if (!t->Listen(al::kAlDeviceName, error)) return nullptr;
  for (uint64_t guid : guids) {
    if (!t->Listen(t->stack_->ca_device_name(guid), error)) return nullptr;
  }
  status = kernel::IoCreateDriver(t->node(), "conformance-client", &InitClientDriver,
                                  &t->client_device_, &t->client_driver_);
  if (status != kernel::Status::SUCCESS) {
    *error = std::string("IoCreateDriver: ") + abi::ToString(status);
    return nullptr;
  }
  return t;
}

bool TestNode::Listen(const std::string& device_name, std::string* error) {
  auto l = std::make_unique<Listener>();
  l->sink = std::make_unique<bridge::KernelIoctlSink>(node(), device_name);
  l->server = std::make_unique<channel::Server>(l->sink.get());
  if (!l->server->Start(run_dir_, device_name, error)) return false;
  listeners_.push_back(std::move(l));
  return true;
}

std::string TestNode::SocketPath(const std::string& device_name) const {
  return run_dir_ + "/" + device_name;
}

TestNode::~TestNode() {
  for (auto& l : listeners_) l->server->Stop();
  listeners_.clear();  // servers first, then their sinks (member order)
  if (client_driver_ != nullptr) kernel::IoUnloadDriver(client_driver_);
  stack_.reset();
  if (!run_dir_.empty()) RemoveTree(run_dir_);
}

}  // namespace softib::conformance

// The user-visible face of a node: for each named kernel device, a channel server listening
// at <run dir>/<device name> whose connections become files of that device (the bridge).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "softib/bridge/kernel_ioctl_sink.h"
#include "softib/channel/server.h"
#include "softib/kernel/node.h"

namespace softib::softibd {

class DeviceServers {
 public:
  DeviceServers() = default;
  ~DeviceServers();  // Stop()
  DeviceServers(const DeviceServers&) = delete;
  DeviceServers& operator=(const DeviceServers&) = delete;

  // Starts serving `device` of `node` in `run_dir`; false with `error` set on failure
  // (the devices started before stay served).
  bool Serve(kernel::Node* node, const std::string& run_dir, const std::string& device,
             std::string* error);
  // Stops every server (their files are closed, kernel cleanup included), then the
  // bridges; the sockets are gone. The node's drivers may unload afterwards.
  void Stop();

  std::vector<std::string> socket_paths() const;
  size_t open_files() const;  // over every device

 private:
  struct Served {
    std::unique_ptr<bridge::KernelIoctlSink> sink;
    std::unique_ptr<channel::Server> server;  // stopped before its sink goes
  };
  std::vector<Served> served_;
};

}  // namespace softib::softibd

#include "device_servers.h"

namespace softib::softibd {

DeviceServers::~DeviceServers() { Stop(); }

bool DeviceServers::Serve(kernel::Node* node, const std::string& run_dir, const std::string& device,
                          std::string* error) {
  Served served;
  served.sink = std::make_unique<bridge::KernelIoctlSink>(node, device);
  served.server = std::make_unique<channel::Server>(served.sink.get());
  if (!served.server->Start(run_dir, device, error)) return false;
  served_.push_back(std::move(served));
  return true;
}

void DeviceServers::Stop() {
  // Every server first (each unlinks its socket): a process may hold files of several
  // devices.
  for (Served& served : served_) served.server->Stop();
  for (Served& served : served_) {
    served.server.reset();
    served.sink.reset();  // runs the queued closes
  }
  served_.clear();
}

std::vector<std::string> DeviceServers::socket_paths() const {
  std::vector<std::string> paths;
  for (const Served& served : served_) paths.push_back(served.server->socket_path());
  return paths;
}

size_t DeviceServers::open_files() const {
  size_t files = 0;
  for (const Served& served : served_) files += served.sink->open_files();
  return files;
}

}  // namespace softib::softibd

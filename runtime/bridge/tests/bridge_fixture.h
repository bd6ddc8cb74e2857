// A node with the test driver, the bridge sink opening its device, and a channel server
// on a fresh run directory: what every bridge test starts from.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "bridge_test_driver.h"
#include "softib/bridge/kernel_ioctl_sink.h"
#include "softib/channel/server.h"
#include "softib/kernel/node.h"

namespace softib::bridge::test {

// mkdtemp, removed with its contents at destruction.
class TempRunDir {
 public:
  TempRunDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "softib-bridge-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempRunDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class BridgeFixture : public ::testing::Test {
 protected:
  explicit BridgeFixture(const char* device_name = kDeviceName) : sink_(&node_, device_name) {}
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(server_.Start(run_dir_.path(), "dev", &error)) << error;
  }
  // A test that failed while a kBlock held the bridge's worker must not hang the teardown.
  void TearDown() override { driver_.Unblock(); }
  // Stops the channel and runs the bridge's queued closes, so the driver's counts are final.
  void StopChannel() {
    server_.Stop();
    sink_.Flush();
  }

  kernel::Node node_{kernel::NodeOptions{.name = "bridge", .worker_threads = 2}};
  BridgeTestDriver driver_{node_};
  KernelIoctlSink sink_;
  TempRunDir run_dir_;
  channel::Server server_{&sink_};  // destroyed (stopped) first
};

}  // namespace softib::bridge::test

// DeviceServers over the bridge's test driver: each device listens under the run
// directory, its connections are files of that device, and Stop closes them (kernel
// cleanup included) and removes the sockets.
#include "device_servers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "bridge_test_driver.h"
#include "softib/user/device_io.h"
#include "temp_dir.h"

namespace softib::softibd::test {
namespace {

using bridge::test::BridgeTestDriver;
using bridge::test::kDeviceName;
using bridge::test::kEcho;
using user::Status;

class DeviceServersTest : public ::testing::Test {
 protected:
  kernel::Node node_{kernel::NodeOptions{.name = "softibd-test", .worker_threads = 2}};
  BridgeTestDriver driver_{node_};
  TempDir run_dir_;
  DeviceServers servers_;  // stopped before the driver unloads
};

TEST_F(DeviceServersTest, ServesADeviceAtRunDirSlashName) {
  std::string error;
  ASSERT_TRUE(servers_.Serve(&node_, run_dir_.path(), kDeviceName, &error)) << error;
  const std::string path = run_dir_.path() + "/" + kDeviceName;
  ASSERT_EQ(servers_.socket_paths(), std::vector<std::string>{path});

  user::DeviceHandle device = nullptr;
  ASSERT_EQ(user::OpenDevice(path.c_str(), &device), Status::SUCCESS);
  char out[8] = {};
  uint32_t returned = 0;
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "softibd", 7, out, sizeof out, &returned, nullptr),
            Status::SUCCESS);
  EXPECT_EQ(returned, 7u);
  EXPECT_EQ(std::memcmp(out, "softibd", 7), 0);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  EXPECT_EQ(driver_.counts().closes, 1);
}

TEST_F(DeviceServersTest, StopClosesOpenFilesAndRemovesSockets) {
  std::string error;
  ASSERT_TRUE(servers_.Serve(&node_, run_dir_.path(), kDeviceName, &error)) << error;
  user::DeviceHandle device = nullptr;
  ASSERT_EQ(user::OpenDevice(servers_.socket_paths()[0].c_str(), &device), Status::SUCCESS);
  ASSERT_TRUE(driver_.WaitFor([](const auto& c) { return c.creates == 1; }));
  // The driver counts the create inside the IRP; the sink counts the file once
  // IoCreateFileForProcess has returned on its worker, a moment later.
  for (int i = 0; i < 1000 && servers_.open_files() != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(servers_.open_files(), 1u);

  servers_.Stop();
  const auto counts = driver_.counts();
  EXPECT_EQ(counts.cleanups, 1);
  EXPECT_EQ(counts.closes, 1);
  EXPECT_FALSE(std::filesystem::exists(run_dir_.path() + "/" + kDeviceName));
  // The client sees a channel that is gone, not a hang.
  char out[4];
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "x", 1, out, sizeof out, nullptr, nullptr),
            user::kChannelBroken);
  user::CloseDevice(device);
}

TEST_F(DeviceServersTest, UnknownDeviceServesButEveryOpenFails) {
  std::string error;
  ASSERT_TRUE(servers_.Serve(&node_, run_dir_.path(), "no-such-device", &error)) << error;
  user::DeviceHandle device = nullptr;
  ASSERT_EQ(user::OpenDevice(servers_.socket_paths()[0].c_str(), &device), Status::SUCCESS);
  char out[4];
  EXPECT_NE(user::DeviceIoControl(device, kEcho, "x", 1, out, sizeof out, nullptr, nullptr),
            Status::SUCCESS);
  user::CloseDevice(device);
}

TEST_F(DeviceServersTest, UnusableRunDirIsAnError) {
  std::string error;
  EXPECT_FALSE(servers_.Serve(&node_, run_dir_.path() + "/missing/dir", kDeviceName, &error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace softib::softibd::test

// The bridge with its client in this process: user DeviceIoControl -> channel -> IRP ->
// test driver, and back.
#include <unistd.h>

#include <array>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bridge_fixture.h"
#include "softib/bridge/reply_fds.h"
#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"

namespace softib::bridge::test {
namespace {

using user::Status;

class BridgeTest : public BridgeFixture {
 protected:
  user::DeviceHandle Open() {
    user::DeviceHandle device = nullptr;
    EXPECT_EQ(user::OpenDevice(server_.socket_path().c_str(), &device), Status::SUCCESS);
    return device;
  }
  // Overlapped kPend; waits until the driver queued it.
  void Pend(user::DeviceHandle device, user::Overlapped* ov, user::CompletionEvent* event,
            char* out, uint32_t out_length, int pended_before) {
    *ov = {};
    ov->Event = event;
    ASSERT_EQ(user::DeviceIoControl(device, kPend, nullptr, 0, out, out_length, nullptr, ov),
              Status::PENDING);
    ASSERT_TRUE(driver_.WaitFor([&](const auto& c) { return c.pended == pended_before + 1; }));
  }
};

TEST_F(BridgeTest, SyncEchoRoundTrip) {
  user::DeviceHandle device = Open();
  char out[32] = {};
  uint32_t returned = 0;
  EXPECT_EQ(
      user::DeviceIoControl(device, kEcho, "hello kernel", 12, out, sizeof out, &returned, nullptr),
      Status::SUCCESS);
  EXPECT_EQ(returned, 12u);
  EXPECT_EQ(std::memcmp(out, "hello kernel", 12), 0);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  // CloseDevice returns after the driver's cleanup and close, not merely after the channel's.
  const auto counts = driver_.counts();
  EXPECT_EQ(counts.creates, 1);
  EXPECT_EQ(counts.cleanups, 1);
  EXPECT_EQ(counts.closes, 1);
  EXPECT_EQ(counts.kernel_mode_irps, 0);
}

TEST_F(BridgeTest, HandlerSeesUserRequestorModeAndPeerPid) {
  user::DeviceHandle device = Open();
  uint8_t mode = 0xff;
  uint32_t returned = 0;
  ASSERT_EQ(user::DeviceIoControl(device, kMode, nullptr, 0, &mode, 1, &returned, nullptr),
            Status::SUCCESS);
  EXPECT_EQ(returned, 1u);
  EXPECT_EQ(mode, static_cast<uint8_t>(kernel::ProcessorMode::kUserMode));
  EXPECT_EQ(sink_.PeerPidOf(driver_.counts().last_opened), getpid());
  EXPECT_EQ(sink_.open_files(), 1u);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  StopChannel();
  EXPECT_EQ(sink_.open_files(), 0u);
}

TEST_F(BridgeTest, BadLengthIsRejectedWithStatus) {
  user::DeviceHandle device = Open();
  std::vector<uint8_t> in(kMaxEcho + 1, 0x5a), out(kMaxEcho + 1);
  uint32_t returned = 99;
  EXPECT_EQ(
      user::DeviceIoControl(device, kEcho, in.data(), static_cast<uint32_t>(in.size()), out.data(),
                            static_cast<uint32_t>(out.size()), &returned, nullptr),
      Status::INVALID_PARAMETER);
  EXPECT_EQ(returned, 0u);
  // Output too small for the input: the driver says so too.
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "abcd", 4, out.data(), 2, &returned, nullptr),
            Status::INVALID_PARAMETER);
  EXPECT_EQ(user::DeviceIoControl(device, 0x22ffff, nullptr, 0, nullptr, 0, nullptr, nullptr),
            Status::UNSUPPORTED);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, PendedIoctlCompletesOnRelease) {
  user::DeviceHandle device = Open();
  user::Overlapped ov;
  user::CompletionEvent event;
  char out[16] = {};
  Pend(device, &ov, &event, out, sizeof out, 0);
  uint32_t returned = 0;
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, &returned, false), Status::PENDING);
  EXPECT_FALSE(event.IsSet());
  // The release answers at once; the DPC completes the pended IRP afterwards.
  ASSERT_EQ(user::DeviceIoControl(device, kRelease, nullptr, 0, nullptr, 0, nullptr, nullptr),
            Status::SUCCESS);
  ASSERT_TRUE(event.WaitFor(std::chrono::seconds(10)));
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, &returned, false), Status::SUCCESS);
  EXPECT_EQ(returned, 8u);
  EXPECT_EQ(std::memcmp(out, kReleased, 8), 0);
  EXPECT_EQ(driver_.counts().released, 1);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, ManyPendedIoctlsAllReleased) {
  user::DeviceHandle device = Open();
  constexpr int kCount = 16;
  std::vector<user::Overlapped> ov(kCount);
  std::vector<user::CompletionEvent> events(kCount);
  std::vector<std::array<char, 8>> out(kCount);
  for (int i = 0; i < kCount; ++i) Pend(device, &ov[i], &events[i], out[i].data(), 8, i);
  ASSERT_EQ(user::DeviceIoControl(device, kRelease, nullptr, 0, nullptr, 0, nullptr, nullptr),
            Status::SUCCESS);
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(events[i].WaitFor(std::chrono::seconds(10))) << i;
    uint32_t returned = 0;
    EXPECT_EQ(user::GetOverlappedResult(device, &ov[i], &returned, false), Status::SUCCESS);
    EXPECT_EQ(returned, 8u);
  }
  EXPECT_EQ(driver_.counts().released, kCount);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, CancelIoExRunsTheDriversCancelRoutine) {
  user::DeviceHandle device = Open();
  user::Overlapped ov;
  user::CompletionEvent event;
  Pend(device, &ov, &event, nullptr, 0, 0);
  ASSERT_EQ(user::CancelIoEx(device, &ov), Status::SUCCESS);
  ASSERT_TRUE(event.WaitFor(std::chrono::seconds(10)));
  uint32_t returned = 0;
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, &returned, false), Status::CANCELED);
  // Nobody released it, and it left the queue: the queue's cancel routine completed it.
  EXPECT_TRUE(driver_.queue_empty());
  EXPECT_EQ(driver_.counts().released, 0);
  // The file still works afterwards.
  char out[4] = {};
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "ok", 2, out, sizeof out, &returned, nullptr),
            Status::SUCCESS);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, CancelBeforeTheIrpIsSentNeverReachesTheDriver) {
  user::DeviceHandle device = Open();
  // kBlock holds the bridge's worker, so the kPend behind it has no IRP yet.
  user::Overlapped block = {};
  ASSERT_EQ(user::DeviceIoControl(device, kBlock, nullptr, 0, nullptr, 0, nullptr, &block),
            Status::PENDING);
  ASSERT_TRUE(driver_.WaitFor([](const auto& c) { return c.blocked == 1; }));
  user::Overlapped ov = {};
  user::CompletionEvent event;
  ov.Event = &event;
  ASSERT_EQ(user::DeviceIoControl(device, kPend, nullptr, 0, nullptr, 0, nullptr, &ov),
            Status::PENDING);
  ASSERT_EQ(user::CancelIoEx(device, &ov), Status::SUCCESS);
  // The cancel frame travels on its own: unblock once the sink has it.
  ASSERT_TRUE(
      WaitUntil([&] { return sink_.cancels_before_dispatch() == 1; }, std::chrono::seconds(10)));
  driver_.Unblock();
  uint32_t returned = 0;
  EXPECT_EQ(user::GetOverlappedResult(device, &block, &returned, true), Status::SUCCESS);
  ASSERT_TRUE(event.WaitFor(std::chrono::seconds(10)));
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, &returned, false), Status::CANCELED);
  EXPECT_EQ(driver_.counts().pended, 0);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, CloseWithPendingIoctlsCancelsThemBeforeCleanup) {
  user::DeviceHandle device = Open();
  user::Overlapped ov[3];
  user::CompletionEvent events[3];
  for (int i = 0; i < 3; ++i) Pend(device, &ov[i], &events[i], nullptr, 0, i);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  for (auto& o : ov) EXPECT_EQ(o.Internal, Status::CANCELED);
  StopChannel();
  const auto counts = driver_.counts();
  EXPECT_EQ(counts.cleanup_with_queued, 0);
  EXPECT_EQ(counts.released, 0);
  EXPECT_EQ(counts.file_irps,
            (std::vector<kernel::IrpMajor>{kernel::IrpMajor::kCreate, kernel::IrpMajor::kCleanup,
                                           kernel::IrpMajor::kClose}));
}

TEST_F(BridgeTest, ConcurrentFilesAreIndependent) {
  constexpr int kFiles = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kFiles; ++t) {
    threads.emplace_back([this, t] {
      user::DeviceHandle device = Open();
      for (int i = 0; i < 50; ++i) {
        const int value = t * 1000 + i;
        int echoed = -1;
        uint32_t returned = 0;
        EXPECT_EQ(user::DeviceIoControl(device, kEcho, &value, sizeof value, &echoed, sizeof echoed,
                                        &returned, nullptr),
                  Status::SUCCESS);
        EXPECT_EQ(echoed, value);
      }
      EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
    });
  }
  for (auto& thread : threads) thread.join();
  StopChannel();
  const auto counts = driver_.counts();
  EXPECT_EQ(counts.creates, kFiles);
  EXPECT_EQ(counts.cleanups, kFiles);
  EXPECT_EQ(counts.closes, kFiles);
}

TEST_F(BridgeTest, DriverAttachedFdRidesWithTheAnswer) {
  user::DeviceHandle device = Open();
  uint8_t attached = 0;
  uint32_t returned = 0;
  int fds[2] = {-1, -1};
  uint32_t fd_count = 0;
  ASSERT_EQ(user::DeviceIoControlWithFds(device, kMemfd, "ring", 4, &attached, 1, &returned, fds, 2,
                                         &fd_count),
            Status::SUCCESS);
  EXPECT_EQ(attached, 1);
  ASSERT_EQ(fd_count, 1u);
  char content[8] = {};
  EXPECT_EQ(pread(fds[0], content, sizeof content, 0), 4);
  EXPECT_EQ(std::string(content), "ring");
  close(fds[0]);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST_F(BridgeTest, FailedRequestCarriesNoFd) {
  user::DeviceHandle device = Open();
  uint8_t attached = 0;
  int fds[1] = {-1};
  uint32_t fd_count = 7;
  EXPECT_EQ(user::DeviceIoControlWithFds(device, kMemfd, nullptr, 0, &attached, 1, nullptr, fds, 1,
                                         &fd_count),
            Status::ERROR);
  EXPECT_EQ(fd_count, 0u);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

TEST(ReplyFdsTest, OnlyBridgeIrpsTakeFds) {
  alignas(8) unsigned char not_an_irp[64] = {};
  const int fd = dup(0);
  auto* irp = reinterpret_cast<kernel::Irp*>(not_an_irp);
  EXPECT_FALSE(AttachReplyFds(irp, std::span<const int>(&fd, 1)));
  RegisterReplyIrp(irp);
  const int too_many[kMaxReplyFds + 1] = {};
  EXPECT_FALSE(AttachReplyFds(irp, too_many));
  EXPECT_TRUE(AttachReplyFds(irp, std::span<const int>(&fd, 1)));
  int taken[kMaxReplyFds];
  size_t count = 0;
  TakeReplyFds(irp, taken, &count);
  ASSERT_EQ(count, 1u);
  EXPECT_NE(taken[0], fd);  // a duplicate
  close(taken[0]);
  TakeReplyFds(irp, taken, &count);  // gone once taken
  EXPECT_EQ(count, 0u);
  EXPECT_FALSE(AttachReplyFds(irp, std::span<const int>(&fd, 1)));
  close(fd);
}

class BridgeMissingDeviceTest : public BridgeFixture {
 protected:
  BridgeMissingDeviceTest() : BridgeFixture("no_such_device") {}
};

TEST_F(BridgeMissingDeviceTest, RequestsGetTheCreateStatus) {
  user::DeviceHandle device = nullptr;
  ASSERT_EQ(user::OpenDevice(server_.socket_path().c_str(), &device), Status::SUCCESS);
  char out[4];
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "x", 1, out, sizeof out, nullptr, nullptr),
            Status::NOT_FOUND);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  StopChannel();
  EXPECT_EQ(driver_.counts().creates, 0);
  EXPECT_EQ(sink_.open_files(), 0u);
}

}  // namespace
}  // namespace softib::bridge::test

// The client's receiver role (runtime/user/src/device_io.cc): a synchronous caller reads the
// socket itself when nobody else does. These cases put the role in every holder's hands
// (a blocked synchronous caller, the background thread, several callers in turn) and check
// that every answer still reaches its own request.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "softib/channel/server.h"
#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"
#include "test_sink.h"

namespace softib::channel::test {
namespace {

using user::DeviceHandle;
using user::Overlapped;

class ReceiverRoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(server_.Start(run_dir_.path(), "dev", &error)) << error;
    ASSERT_EQ(user::OpenDevice(server_.socket_path().c_str(), &device_), Status::SUCCESS);
  }

  Status SyncEcho(uint32_t code, uint32_t value, uint32_t* out) {
    uint32_t returned = 0;
    Status s = user::DeviceIoControl(device_, code, &value, sizeof value, out, sizeof *out,
                                     &returned, nullptr);
    if (s == Status::SUCCESS) {
      EXPECT_EQ(returned, sizeof value);
    }
    return s;
  }

  // Completes held requests in the order given, echoing their input.
  void CompleteHeld(std::vector<TestSink::Held>& held, const std::vector<size_t>& order) {
    for (size_t i : order) {
      ASSERT_TRUE(held[i].file->Complete(held[i].request.request_id, Status::SUCCESS,
                                         held[i].request.input));
    }
  }

  RunDir run_dir_;
  TestSink sink_;
  Server server_{&sink_};
  DeviceHandle device_ = nullptr;
};

TEST_F(ReceiverRoleTest, BlockedSyncCallerDeliversEveryoneElsesAnswers) {
  uint32_t held_out = 0;
  Status held_status = Status::ERROR;
  // The only caller: it holds the role, blocked until the test completes its request.
  std::thread holder([&] { held_status = SyncEcho(kHold, 7, &held_out); });
  ASSERT_TRUE(sink_.WaitHeld(1));

  uint32_t out = 0;
  EXPECT_EQ(SyncEcho(kEcho, 11, &out), Status::SUCCESS);
  EXPECT_EQ(out, 11u);
  EXPECT_EQ(SyncEcho(kEchoAsync, 12, &out), Status::SUCCESS);
  EXPECT_EQ(out, 12u);
  Overlapped ov = {};
  uint32_t value = 13, ov_out = 0, returned = 0;
  ASSERT_EQ(user::DeviceIoControl(device_, kEchoAsync, &value, sizeof value, &ov_out, sizeof ov_out,
                                  nullptr, &ov),
            Status::PENDING);
  EXPECT_EQ(user::GetOverlappedResult(device_, &ov, &returned, true), Status::SUCCESS);
  EXPECT_EQ(ov_out, 13u);

  auto held = sink_.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  CompleteHeld(held, {0});
  holder.join();
  EXPECT_EQ(held_status, Status::SUCCESS);
  EXPECT_EQ(held_out, 7u);
  EXPECT_EQ(user::CloseDevice(device_), Status::SUCCESS);
}

TEST_F(ReceiverRoleTest, SyncCallWhileBackgroundThreadReceives) {
  // A pending overlapped request makes the background thread take the role.
  Overlapped ov = {};
  uint32_t value = 5, ov_out = 0;
  ASSERT_EQ(user::DeviceIoControl(device_, kHold, &value, sizeof value, &ov_out, sizeof ov_out,
                                  nullptr, &ov),
            Status::PENDING);
  ASSERT_TRUE(sink_.WaitHeld(1));
  uint32_t out = 0;
  for (uint32_t i = 0; i < 50; ++i) {
    ASSERT_EQ(SyncEcho(i % 2 ? kEcho : kEchoAsync, i, &out), Status::SUCCESS);
    EXPECT_EQ(out, i);
  }
  auto held = sink_.TakeHeld();
  CompleteHeld(held, {0});
  EXPECT_EQ(user::GetOverlappedResult(device_, &ov, nullptr, true), Status::SUCCESS);
  EXPECT_EQ(ov_out, 5u);
  // With nothing overlapped left, a sync caller is again its own receiver.
  EXPECT_EQ(SyncEcho(kEcho, 99, &out), Status::SUCCESS);
  EXPECT_EQ(out, 99u);
  EXPECT_EQ(user::CloseDevice(device_), Status::SUCCESS);
}

TEST_F(ReceiverRoleTest, RolePassesBetweenBlockedSyncCallers) {
  constexpr uint32_t kCallers = 4;
  // Completion orders: whichever caller holds the role, it must pass it on once its own
  // answer came and still serve the others' answers before that.
  const std::vector<std::vector<size_t>> orders = {{3, 2, 1, 0}, {0, 1, 2, 3}, {2, 0, 3, 1}};
  for (const auto& order : orders) {
    std::vector<uint32_t> outs(kCallers, 0);
    std::vector<Status> statuses(kCallers, Status::ERROR);
    std::vector<std::thread> callers;
    for (uint32_t c = 0; c < kCallers; ++c) {
      callers.emplace_back([&, c] { statuses[c] = SyncEcho(kHold, 100 + c, &outs[c]); });
    }
    ASSERT_TRUE(sink_.WaitHeld(kCallers));
    auto held = sink_.TakeHeld();
    ASSERT_EQ(held.size(), size_t{kCallers});
    CompleteHeld(held, order);
    for (auto& t : callers) t.join();
    // Each thread got the answer to its own request (the held order is arrival order, so
    // match by the echoed value rather than by position).
    for (uint32_t c = 0; c < kCallers; ++c) {
      EXPECT_EQ(statuses[c], Status::SUCCESS);
      EXPECT_EQ(outs[c], 100 + c);
    }
  }
  uint32_t out = 0;
  EXPECT_EQ(SyncEcho(kEcho, 1, &out), Status::SUCCESS);
  EXPECT_EQ(user::CloseDevice(device_), Status::SUCCESS);
}

TEST_F(ReceiverRoleTest, CloseWhileSyncCallerHoldsTheRole) {
  uint32_t out = 0;
  Status status = Status::SUCCESS;
  std::thread holder([&] { status = SyncEcho(kHold, 3, &out); });
  ASSERT_TRUE(sink_.WaitHeld(1));
  // The close cancels the held request; the holder reads its CANCELED answer, then the
  // background thread reads the close answer. CloseDevice waits for the holder to leave.
  EXPECT_EQ(user::CloseDevice(device_), Status::SUCCESS);
  holder.join();
  EXPECT_EQ(status, Status::CANCELED);
  EXPECT_EQ(sink_.closes(), 1u);
  EXPECT_EQ(sink_.violations(), 0);
}

TEST_F(ReceiverRoleTest, MixedCallersAndCancellationUnderLoad) {
  constexpr int kThreads = 3, kPerThread = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        uint32_t value = static_cast<uint32_t>(t * 100000 + i), out = 0, returned = 0;
        Status s;
        if ((i + t) % 4 == 0) {
          // An overlapped request that is cancelled, interleaved with synchronous ones.
          Overlapped ov = {};
          s = user::DeviceIoControl(device_, kHold, &value, sizeof value, &out, sizeof out, nullptr,
                                    &ov);
          if (s == Status::PENDING) {
            // The cancel follows the request on the same socket: the kernel has it by then.
            if (user::CancelIoEx(device_, &ov) != Status::SUCCESS) ++failures;
            s = user::GetOverlappedResult(device_, &ov, &returned, true);
          }
          if (s != Status::CANCELED) ++failures;
          continue;
        }
        s = user::DeviceIoControl(device_, i % 2 ? kEcho : kEchoAsync, &value, sizeof value, &out,
                                  sizeof out, &returned, nullptr);
        if (s != Status::SUCCESS || returned != sizeof value || out != value) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(user::CloseDevice(device_), Status::SUCCESS);
  EXPECT_EQ(sink_.violations(), 0);
}

}  // namespace
}  // namespace softib::channel::test

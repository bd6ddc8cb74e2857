// softibd as a process: bad command lines, the run directory it serves, ready signal, pid
// file, one daemon per run directory, and orderly shutdown on SIGTERM/SIGINT, also with a
// client still connected.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "softib/user/access_layer.h"
#include "softib/user/completion_event.h"
#include "softibd_instance.h"
#include "status_printer.h"
#include "user/runtime_ioctls_proxy.h"

namespace softib::integration {
namespace {

namespace fs = std::filesystem;
constexpr auto kDaemonTestLimit = std::chrono::seconds(15);

TEST(SoftibdProcessTest, BadCommandLineExitsTwoWithOneErrorLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--cas", "0"}, {"--ports", "9"}, {"--frobnicate"}, {"positional"}, {"--ready-fd", "77"}};
  for (const auto& args : bad) {
    std::vector<std::string> argv = {SOFTIBD_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    Process process;
    ASSERT_TRUE(process.Start(argv));
    const std::string err = process.ReadAllStderr(kDaemonTestLimit);
    EXPECT_EQ(process.Wait(kDaemonTestLimit), 2) << args[0];
    EXPECT_EQ(err.rfind("softibd: error: ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

TEST(SoftibdProcessTest, ServesTheAlAndEachCaThenStopsOnSigterm) {
  SoftibdInstance daemon;
  const std::string pidfile = daemon.run_dir() + ".pid";
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY, {"--pidfile", pidfile}));
  EXPECT_TRUE(fs::exists(daemon.run_dir() + "/ibal"));
  int ca_sockets = 0;
  for (const auto& entry : fs::directory_iterator(daemon.run_dir())) {
    if (entry.path().filename().string().rfind("hca-", 0) == 0 && entry.is_socket()) ++ca_sockets;
  }
  EXPECT_EQ(ca_sockets, 2);
  std::ifstream in(pidfile);
  pid_t pid = 0;
  in >> pid;
  EXPECT_EQ(pid, daemon.process().pid());

  EXPECT_EQ(daemon.Stop(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(daemon.run_dir() + "/ibal"));
  EXPECT_FALSE(fs::exists(pidfile));
  EXPECT_NE(daemon.output().find("softibd: ready"), std::string::npos) << daemon.output();
  EXPECT_NE(daemon.output().find("softibd: stopped"), std::string::npos) << daemon.output();
}

TEST(SoftibdProcessTest, CasOptionSetsTheNumberOfCaDevices) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY, {"--cas", "4"}));
  int ca_sockets = 0;
  for (const auto& entry : fs::directory_iterator(daemon.run_dir())) {
    if (entry.path().filename().string().rfind("hca-", 0) == 0) ++ca_sockets;
  }
  EXPECT_EQ(ca_sockets, 4);
  EXPECT_EQ(daemon.Stop(SIGINT), 0);
}

TEST(SoftibdProcessTest, SecondDaemonOnTheSameRunDirIsRefused) {
  SoftibdInstance first;
  ASSERT_TRUE(first.Start(SOFTIBD_BINARY));
  Process second;
  ASSERT_TRUE(second.Start({SOFTIBD_BINARY, "--run-dir", first.run_dir()}));
  const std::string err = second.ReadAllStderr(kDaemonTestLimit);
  EXPECT_EQ(second.Wait(kDaemonTestLimit), 1);
  EXPECT_NE(err.find("another softibd"), std::string::npos) << err;
  // The first one still serves.
  user::AlFile al;
  EXPECT_EQ(user::OpenAl(first.run_dir().c_str(), &al), user::Status::SUCCESS);
  EXPECT_EQ(user::CloseAl(&al), user::Status::SUCCESS);
  EXPECT_EQ(first.Stop(), 0);
}

TEST(SoftibdProcessTest, ShutdownWithAClientConnectedClosesItsFiles) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
  user::AlFile al;
  ASSERT_EQ(user::OpenAl(daemon.run_dir().c_str(), &al), user::Status::SUCCESS);
  EXPECT_EQ(daemon.Stop(SIGTERM), 0);
  abi::Handle<abi::ObjectType::Al> handle{};
  EXPECT_EQ(user::QueryFileAl(al.device, &handle), user::kChannelBroken);
  user::CloseAl(&al);
}

TEST(SoftibdProcessTest, ShutdownCompletesAPendingInvertedCall) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
  user::AlFile al;
  ASSERT_EQ(user::OpenAl(daemon.run_dir().c_str(), &al), user::Status::SUCCESS);
  abi::GetAsyncEventIn in{};
  in.al = al.al;
  abi::GetAsyncEventOut out{};
  user::CompletionEvent event;
  user::Overlapped overlapped{};
  overlapped.Event = &event;
  ASSERT_EQ(user::proxy::GetAsyncEventAsync(al.device, in, out, &overlapped),
            user::Status::PENDING);
  EXPECT_EQ(daemon.Stop(SIGTERM), 0);
  ASSERT_TRUE(event.WaitFor(std::chrono::milliseconds(kDaemonTestLimit)));
  const user::Status status = user::GetOverlappedResult(al.device, &overlapped, nullptr, true);
  // Cancelled by the kernel, or cut off with the channel: never a result.
  EXPECT_TRUE(status == user::Status::CANCELED || status == user::kChannelBroken)
      << abi::ToString(status);
  user::CloseAl(&al);
}

TEST(SoftibdProcessTest, NothingListensAfterStop) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY));
  EXPECT_EQ(daemon.Stop(), 0);
  user::AlFile al;
  EXPECT_EQ(user::OpenAl(daemon.run_dir().c_str(), &al), user::Status::NOT_FOUND);
}

}  // namespace
}  // namespace softib::integration

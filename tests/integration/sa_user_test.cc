// The AL's SA client from user processes on a softibd fabric brought up by softib-sm
// (--sm external; the SM, with its SA, on host-0001 through its AL — an SM above the AL, as
// users run it; softibd.internal_sm covers the internal SM's GetTable): softib_sa_user_client's
// queries, the path cache, ATS and leased service registrations; then multicast through the SA
// across the default fabric's switches: full members on host-0002 and host-0004 joined by JoinMcast
// (the AL attaches their QPs, the SM programs the MFTs) receive what a send-only member on
// host-0003 sends, and a send-only member on host-0004 (not attached) receives nothing.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

// softibd whose ports wait in Init, and softib-sm on host-0001 staying MASTER once the
// subnet is up (its SA answering).
bool StartWithSm(SoftibdInstance& daemon, Process& sm) {
  if (!daemon.Start(SOFTIBD_BINARY, {"--fabric", "default", "--sm", "external"})) return false;
  if (!sm.Start({"/usr/bin/stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir", daemon.host_dir(1), "-q",
                 "--sweep-interval", "0"})) {
    return false;
  }
  std::string line;
  while (sm.ReadLine(&line, std::chrono::seconds(30))) {
    if (line.find("subnet up") != std::string::npos) return true;
  }
  return false;
}

TEST(SaUserTest, QueriesCacheAndServiceRegistrationsAgainstTheSm) {
  SoftibdInstance daemon;
  Process sm;
  ASSERT_TRUE(StartWithSm(daemon, sm));
  Process client;
  ASSERT_TRUE(client.Start({SOFTIB_SA_USER_CLIENT, daemon.host_dir(2)}));
  const std::string transcript = client.ReadAllStdout(std::chrono::seconds(60));
  const int code = client.Wait(std::chrono::seconds(60));
  std::printf("%s", transcript.c_str());
  EXPECT_EQ(code, 0);
  EXPECT_EQ(transcript.find("FAILED"), std::string::npos);
  EXPECT_NE(transcript.find("ok     7 NodeRecords"), std::string::npos);
  EXPECT_NE(transcript.find("ok     ATS record found by GID and name"), std::string::npos);
  EXPECT_NE(transcript.find("ok     not renewed: the raw one expired"), std::string::npos);
  EXPECT_NE(transcript.find("ok     renewed: still there once the raw one expired"),
            std::string::npos);
  EXPECT_NE(transcript.find("0 failed"), std::string::npos);
  sm.Signal(15);
  EXPECT_NE(sm.Wait(std::chrono::seconds(15)), -1);
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(SaUserTest, MulticastJoinedThroughTheSaReachesMembersAcrossSwitches) {
  SoftibdInstance daemon;
  Process sm;
  ASSERT_TRUE(StartWithSm(daemon, sm));
  const std::string mgid = "ff12401bffff00000000000000005a17";
  // Receivers: full members (attached by the AL) and a send-only member (not attached).
  struct Receiver {
    int host;
    const char* mode;
    Process process;
  };
  std::vector<std::unique_ptr<Receiver>> receivers;
  for (auto [host, mode] : {std::pair{2, "join-recv"}, {4, "join-recv"}, {4, "sendonly-recv"}}) {
    auto r = std::make_unique<Receiver>();
    r->host = host;
    r->mode = mode;
    ASSERT_TRUE(r->process.Start(
        {SOFTIB_MCAST_CLIENT, daemon.host_dir(host), mode, mgid, "0", "4", "0", "3"}));
    std::string line;
    ASSERT_TRUE(r->process.ReadLine(&line, std::chrono::seconds(20)));
    EXPECT_EQ(line.rfind("joined mlid=0xc", 0), 0u) << line;
    ASSERT_TRUE(r->process.ReadLine(&line, std::chrono::seconds(20)));
    EXPECT_EQ(line, "ready");
    receivers.push_back(std::move(r));
  }
  // The sender: a send-only member on host-0003 (another leaf), repeating its burst until the
  // full members have theirs (the SM programs the MFTs after the joins, asynchronously).
  std::string full_outputs;
  for (int round = 0; round < 20; ++round) {
    Process sender;
    ASSERT_TRUE(
        sender.Start({SOFTIB_MCAST_CLIENT, daemon.host_dir(3), "join-send", mgid, "0", "3"}));
    const std::string out = sender.ReadAllStdout(std::chrono::seconds(20));
    ASSERT_EQ(sender.Wait(std::chrono::seconds(20)), 0) << out;
    EXPECT_NE(out.find("sent 3"), std::string::npos) << out;
    bool all = true;
    for (auto& r : receivers) {
      if (std::string(r->mode) != "join-recv") continue;
      all = all && r->process.Wait(std::chrono::milliseconds(200)) != -1;
    }
    if (all) break;
  }
  for (auto& r : receivers) {
    const std::string out = r->process.ReadAllStdout(std::chrono::seconds(20));
    const int code = r->process.Wait(std::chrono::seconds(20));
    EXPECT_EQ(code, 0) << r->host << " " << r->mode << ": " << out;
    if (std::string(r->mode) == "join-recv") {
      EXPECT_NE(out.find("received 3"), std::string::npos) << r->host << ": " << out;
      EXPECT_NE(out.find("mcast 0"), std::string::npos) << r->host << ": " << out;
    } else {
      EXPECT_NE(out.find("received 0"), std::string::npos) << r->host << ": " << out;
    }
  }
  sm.Signal(15);
  EXPECT_NE(sm.Wait(std::chrono::seconds(15)), -1);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration

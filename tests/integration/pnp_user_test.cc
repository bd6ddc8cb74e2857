// PnP news of fabric changes reach a user process (issue 5): on softibd's default fabric, a
// process on host-0002 registered for PORT class events sees
//   - its cable taken down and up again (`softib fabric down|up host-0002:1`): PORT_DOWN,
//     then PORT_ACTIVE once the SM has activated the port again;
//   - the master SM (host-0001) killed and the standby (host-0003) taking over: SM_CHANGE
//     naming the new SM's LID; LID_CHANGE, as the new master's guid2lid file gives the port
//     LID 0x30; GID_CHANGE, as it writes its subnet prefix fec0:: to PortInfo:GIDPrefix; and
//     PKEY_CHANGE, as its partition file has one more partition; and a multicast member on
//     host-0004 joined again at the new master (listed by its SA, reached by a sender).
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

int RunTool(const std::vector<std::string>& argv) {
  Process p;
  if (!p.Start(argv)) return -1;
  return p.Wait(std::chrono::seconds(20));
}

TEST(PnpUserTest, LinkFlapAndSmHandoverReachAUserProcess) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY, {"--fabric", "default", "--sm", "external"}));
  Process master;
  ASSERT_TRUE(master.Start({"/usr/bin/stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir",
                            daemon.host_dir(1), "-q", "--sweep-interval", "0"}));
  std::string master_out;
  ASSERT_TRUE(master.ReadUntil("subnet up", &master_out)) << master_out;
  const std::string partitions = daemon.run_dir() + "/../partitions.conf";
  std::ofstream(partitions) << "Default=0x7fff : ALL=full ;\nstorage=0x0123 : ALL=full ;\n";
  // host-0002's port (the default fabric's GUIDs are fixed) moves to LID 0x30.
  const std::string guid2lid = daemon.run_dir() + "/../guid2lid";
  std::ofstream(guid2lid) << "0x0002c90300a00021 0x0030 0x0030\n";
  Process standby;
  ASSERT_TRUE(standby.Start({"/usr/bin/stdbuf",
                             "-oL",
                             SOFTIB_SM_BINARY,
                             "--run-dir",
                             daemon.host_dir(3),
                             "-q",
                             "--sweep-interval",
                             "0",
                             "--poll-interval",
                             "0.2",
                             "-t",
                             "100",
                             "-r",
                             "1",
                             "--partitions",
                             partitions,
                             "-g",
                             guid2lid,
                             "--subnet-prefix",
                             "0xfec0000000000000"}));
  std::string standby_out;
  ASSERT_TRUE(standby.ReadUntil("STANDBY", &standby_out)) << standby_out;

  Process watcher;
  ASSERT_TRUE(watcher.Start({SOFTIB_PNP_USER_CLIENT, daemon.host_dir(2), "60"}));
  std::string seen;
  ASSERT_TRUE(watcher.ReadUntil("REG_COMPLETE", &seen)) << seen;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(seen, m, std::regex("PORT_ACTIVE port=1 state=4 lid=(\\d+) sm_lid=(\\d+)")))
      << seen;
  const std::string my_lid = m[1], first_sm = m[2];

  // The cable down and up: the port goes Down, then Active again by the master.
  ASSERT_EQ(
      RunTool({SOFTIB_BINARY, "fabric", "--run-dir", daemon.run_dir(), "down", "host-0002:1"}), 0);
  ASSERT_TRUE(watcher.ReadUntil("PORT_DOWN port=1 state=1", &seen)) << seen;
  ASSERT_EQ(RunTool({SOFTIB_BINARY, "fabric", "--run-dir", daemon.run_dir(), "up", "host-0002:1"}),
            0);
  ASSERT_TRUE(watcher.ReadUntil("PORT_ACTIVE port=1 state=4 lid=" + my_lid, &seen)) << seen;

  // A full member of a multicast group on host-0004, joined through the master's SA.
  const std::string mgid = "ff12401bffff0000000000000000a5e1";
  Process member;
  ASSERT_TRUE(member.Start(
      {SOFTIB_MCAST_CLIENT, daemon.host_dir(4), "join-recv", mgid, "0", "60", "0", "3"}));
  std::string line;
  ASSERT_TRUE(member.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(line.rfind("joined mlid=0xc", 0), 0u) << line;
  ASSERT_TRUE(member.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(line, "ready");

  // The master dies; the standby takes over: a new SM LID, LID and subnet prefix, then its
  // partitions.
  ASSERT_TRUE(master.Signal(SIGKILL));
  master.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(standby.ReadUntil("MASTER, subnet up", &standby_out)) << standby_out;
  // The four in any order.
  for (int i = 0; i < 4 && watcher.ReadLine(&line, std::chrono::seconds(30)); ++i) {
    seen += line + "\n";
  }
  ASSERT_TRUE(
      std::regex_search(seen, m, std::regex("SM_CHANGE port=1 state=4 lid=\\d+ sm_lid=(\\d+)")))
      << seen;
  EXPECT_NE(std::string(m[1]), first_sm) << seen;
  EXPECT_NE(seen.find("LID_CHANGE port=1 state=4 lid=48"), std::string::npos) << seen;
  EXPECT_NE(seen.find("PKEY_CHANGE port=1"), std::string::npos) << seen;
  // host-0002's port GUID after the new master's prefix.
  EXPECT_NE(seen.find("GID_CHANGE port=1 state=4 lid=48 sm_lid=" + std::string(m[1]) +
                      " gid=fec0:0000:0000:0000:0002:c903:00a0:0021"),
            std::string::npos)
      << seen;
  std::printf("%s", seen.c_str());

  // The new master knew nothing of the group: host-0004's AL joined it again at the new SA
  // (its redo list, on SM_CHANGE), which now lists the member, and a sender on host-0003
  // reaches it through the MFTs the new master programmed.
  std::string members;
  for (int i = 0; i < 40 && members.find("0002:c903:00a0:0041") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    Process query;
    ASSERT_TRUE(query.Start({SOFTIB_SM_BINARY, "--run-dir", daemon.host_dir(2), "--query", "MCMR",
                             "MGID=ff12:401b:ffff::a5e1"}));
    members = query.ReadAllStdout(std::chrono::seconds(20));
    query.Wait(std::chrono::seconds(20));
  }
  EXPECT_TRUE(std::regex_search(members, std::regex("PortGID:\\.+[0-9a-f:]+:0002:c903:00a0:0041")))
      << members;
  bool received = false;
  for (int round = 0; round < 20 && !received; ++round) {
    Process sender;
    ASSERT_TRUE(
        sender.Start({SOFTIB_MCAST_CLIENT, daemon.host_dir(3), "join-send", mgid, "0", "3"}));
    const std::string out = sender.ReadAllStdout(std::chrono::seconds(20));
    ASSERT_EQ(sender.Wait(std::chrono::seconds(20)), 0) << out;
    received = member.Wait(std::chrono::milliseconds(200)) != -1;
  }
  const std::string member_out = member.ReadAllStdout(std::chrono::seconds(20));
  EXPECT_TRUE(received) << member_out;
  EXPECT_NE(member_out.find("received 3"), std::string::npos) << member_out;

  standby.Signal(SIGTERM);
  EXPECT_NE(standby.Wait(std::chrono::seconds(15)), -1);
  watcher.Signal(SIGTERM);
  watcher.Wait(std::chrono::seconds(10));
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration

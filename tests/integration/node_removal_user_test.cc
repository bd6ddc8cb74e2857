// A host pulled out of the fabric and put back (issue 5's "CA arrival/removal ... driven by
// a node removal"): on softibd's default fabric brought up by softib-sm, `softib fabric
// remove host-0003` takes host-0003's CA out, as a card would go, and `add` puts it back.
//   - On host-0003 a process registered for CA class events, with the CA open, gets
//     CA_REMOVE (its open CA's calls then fail with CA_REMOVED), then CA_ADD, and a new
//     open of the CA works.
//   - On host-0001 a process subscribed to the SA's traps 64/65 gets "GID out of service"
//     for host-0003's port, then "GID in service": the switch's port went down and came
//     back, the SM swept (trap 128) and told its subscribers.
//   - On host-0001 the IOU/IOC watcher loses host-0003's unit and controller (IOC_REMOVE,
//     IOU_REMOVE): the AL's discovery sweeps on that trap.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

int Fabric(const SoftibdInstance& daemon, const std::string& request, const std::string& host,
           std::string* out) {
  Process p;
  if (!p.Start({SOFTIB_BINARY, "fabric", "--run-dir", daemon.run_dir(), request, host})) return -1;
  *out += p.ReadAllStdout(std::chrono::seconds(40));
  return p.Wait(std::chrono::seconds(40));
}

constexpr char kHost3Gid[] = "gid=fe80000000000000:0002c90300a00031";

TEST(NodeRemovalUserTest, AHostPulledOutAndPutBackReachesItsOwnClientsAndTheFabric) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY, {"--fabric", "default", "--sm", "external"}));
  Process sm;
  ASSERT_TRUE(sm.Start({"/usr/bin/stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir", daemon.host_dir(1),
                        "-q", "--sweep-interval", "0"}));
  std::string sm_out;
  ASSERT_TRUE(sm.ReadUntil("subnet up", &sm_out)) << sm_out;

  Process target;  // an I/O controller on host-0003
  ASSERT_TRUE(
      target.Start({SOFTIB_IOC_USER_CLIENT, "target", daemon.host_dir(3), "0002c90300ab0003"}));
  std::string line;
  ASSERT_TRUE(target.ReadLine(&line, std::chrono::seconds(20)));
  ASSERT_EQ(line, "registered slot 1");
  Process units;
  ASSERT_TRUE(units.Start({SOFTIB_IOC_USER_CLIENT, "watch", daemon.host_dir(1), "4", "60"}));
  std::string units_seen;
  ASSERT_TRUE(units.ReadUntil("IOC_ADD guid=0002c90300ab0003", &units_seen)) << units_seen;
  Process traps;
  ASSERT_TRUE(traps.Start({SOFTIB_NODE_USER_CLIENT, "traps", daemon.host_dir(1), "2", "60"}));
  std::string traps_seen;
  ASSERT_TRUE(traps.ReadUntil("subscribed", &traps_seen)) << traps_seen;
  Process ca;
  ASSERT_TRUE(ca.Start({SOFTIB_NODE_USER_CLIENT, "ca", daemon.host_dir(3), "60"}));
  std::string ca_seen;
  ASSERT_TRUE(ca.ReadUntil("REG_COMPLETE", &ca_seen)) << ca_seen;
  EXPECT_NE(ca_seen.find("CA_ADD guid=0002c90300a00030"), std::string::npos) << ca_seen;

  std::string answer;
  ASSERT_EQ(Fabric(daemon, "remove", "host-0003", &answer), 0) << answer;
  EXPECT_EQ(answer, "host-0003: CA 0x0002c90300a00030 removed\n");
  ASSERT_TRUE(ca.ReadUntil("query after removal", &ca_seen)) << ca_seen;
  EXPECT_NE(ca_seen.find("CA_REMOVE guid=0002c90300a00030\nquery after removal: status 62"),
            std::string::npos)
      << ca_seen;  // 62: CA_REMOVED
  ASSERT_TRUE(traps.ReadUntil("REPORT trap=65", &traps_seen)) << traps_seen;
  // Built by append: gcc 12 at -O2 with the tests' precompiled header warned (array-bounds,
  // a false positive) on the operator+ of a short literal and the GID.
  std::string trap65 = "REPORT trap=65 ";
  trap65.append(kHost3Gid);
  EXPECT_NE(traps_seen.find(trap65), std::string::npos) << traps_seen;
  ASSERT_TRUE(units.ReadUntil("IOC_REMOVE guid=0002c90300ab0003", &units_seen)) << units_seen;
  units_seen += units.ReadAllStdout(std::chrono::seconds(30));
  EXPECT_EQ(units.Wait(std::chrono::seconds(30)), 0) << units_seen;
  EXPECT_NE(units_seen.find("IOU_REMOVE guid=0002c90300a00030"), std::string::npos) << units_seen;
  // Its cable is down and stays down until the CA is back.
  EXPECT_NE(Fabric(daemon, "up", "host-0003:1", &answer), 0);

  answer.clear();
  ASSERT_EQ(Fabric(daemon, "add", "host-0003", &answer), 0) << answer;
  EXPECT_EQ(answer, "host-0003: CA 0x0002c90300a00030 added\n");
  ca_seen += ca.ReadAllStdout(std::chrono::seconds(30));
  EXPECT_EQ(ca.Wait(std::chrono::seconds(30)), 0) << ca_seen;
  EXPECT_NE(ca_seen.find("CA_ADD guid=0002c90300a00030\nquery after arrival: status 0 ports=2"),
            std::string::npos)
      << ca_seen;
  traps_seen += traps.ReadAllStdout(std::chrono::seconds(30));
  EXPECT_EQ(traps.Wait(std::chrono::seconds(30)), 0) << traps_seen;
  std::string trap64 = "REPORT trap=64 ";
  trap64.append(kHost3Gid);
  EXPECT_NE(traps_seen.find(trap64), std::string::npos) << traps_seen;
  std::printf("%s%s%s", ca_seen.c_str(), traps_seen.c_str(), units_seen.c_str());

  target.Signal(SIGTERM);
  target.Wait(std::chrono::seconds(20));
  sm.Signal(SIGTERM);
  EXPECT_NE(sm.Wait(std::chrono::seconds(15)), -1);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration

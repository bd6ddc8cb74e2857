// I/O units and controllers end to end (IBA 16.3 device management; IBAL's IOU/IOC PnP):
// on softibd's default fabric brought up by softib-sm, a user process on host-0003
// registers an I/O controller with two services; a watcher on host-0001 (behind another
// leaf) gets IOU_ADD and IOC_ADD with the controller's profile and first service entry;
// when the target process dies (its file's cleanup withdraws the controller, the port
// stops advertising IsDeviceManagementSupported) the watcher gets IOC_REMOVE and IOU_REMOVE.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>

#include "process.h"
#include "softibd_instance.h"

namespace softib::integration {
namespace {

TEST(IocUserTest, AControllerAppearsAndGoesAwayAsPnpEvents) {
  SoftibdInstance daemon;
  ASSERT_TRUE(daemon.Start(SOFTIBD_BINARY, {"--fabric", "default", "--sm", "external"}));
  Process sm;
  ASSERT_TRUE(sm.Start({"/usr/bin/stdbuf", "-oL", SOFTIB_SM_BINARY, "--run-dir", daemon.host_dir(1),
                        "-q", "--sweep-interval", "0"}));
  std::string sm_out;
  ASSERT_TRUE(sm.ReadUntil("subnet up", &sm_out)) << sm_out;

  Process target;
  ASSERT_TRUE(
      target.Start({SOFTIB_IOC_USER_CLIENT, "target", daemon.host_dir(3), "0002c90300ab0001"}));
  std::string line;
  ASSERT_TRUE(target.ReadLine(&line, std::chrono::seconds(20)));
  EXPECT_EQ(line, "registered slot 1");

  Process watcher;
  ASSERT_TRUE(watcher.Start({SOFTIB_IOC_USER_CLIENT, "watch", daemon.host_dir(1), "4", "40"}));
  std::string seen;
  ASSERT_TRUE(watcher.ReadUntil("IOC_ADD", &seen)) << seen;
  EXPECT_NE(seen.find("IOC_ADD guid=0002c90300ab0001"), std::string::npos) << seen;
  EXPECT_NE(seen.find("slot=1 entries=2 id=softib IOC 0002c90300ab0001 first=service-1"),
            std::string::npos)
      << seen;
  ASSERT_TRUE(seen.find("IOU_ADD guid=") != std::string::npos ||
              watcher.ReadUntil("IOU_ADD", &seen))
      << seen;

  target.Signal(SIGTERM);  // the target dies; its controller goes with its file
  EXPECT_EQ(target.Wait(std::chrono::seconds(20)), 128 + SIGTERM);
  ASSERT_TRUE(watcher.ReadUntil("IOC_REMOVE guid=0002c90300ab0001", &seen)) << seen;
  seen += watcher.ReadAllStdout(std::chrono::seconds(40));
  EXPECT_EQ(watcher.Wait(std::chrono::seconds(40)), 0) << seen;
  EXPECT_NE(seen.find("IOU_REMOVE"), std::string::npos) << seen;
  std::printf("%s", seen.c_str());
  sm.Signal(SIGTERM);
  EXPECT_NE(sm.Wait(std::chrono::seconds(15)), -1);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace softib::integration

// Two processes: this one runs the node, the driver, the bridge and the channel server; an
// exec'd child (bridge_child_client) is the user process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "bridge_fixture.h"
#include "tied_child.h"

namespace softib::bridge::test {
namespace {

using kernel::IrpMajor;

class BridgeIntegrationTest : public BridgeFixture {
 protected:
  // The child dies with this test (tied_child.h), however the test ends.
  pid_t SpawnChild(const char* mode) {
    const pid_t pid = test_support::SpawnTied({SOFTIB_BRIDGE_CHILD, server_.socket_path(), mode});
    EXPECT_GT(pid, 0);
    return pid;
  }
  static int WaitExit(pid_t pid) {
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void ExpectOneCleanOpenClose() {
    const auto counts = driver_.counts();
    EXPECT_EQ(counts.file_irps,
              (std::vector<IrpMajor>{IrpMajor::kCreate, IrpMajor::kCleanup, IrpMajor::kClose}));
    EXPECT_EQ(counts.cleanup_with_queued, 0);
    EXPECT_EQ(counts.kernel_mode_irps, 0);
    EXPECT_TRUE(driver_.queue_empty());
  }
};

TEST_F(BridgeIntegrationTest, ChildProcessRoundTrips) {
  const pid_t pid = SpawnChild("work");
  ASSERT_GT(pid, 0);
  EXPECT_EQ(WaitExit(pid), 0);
  ASSERT_TRUE(driver_.WaitFor([](const auto& c) { return c.closes == 1; }));
  ExpectOneCleanOpenClose();
  EXPECT_GE(driver_.counts().released, 1);
  EXPECT_EQ(sink_.open_files(), 0u);
}

TEST_F(BridgeIntegrationTest, KilledChildsIoctlsAreCancelledThenCleanupAndClose) {
  const pid_t pid = SpawnChild("hold");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(driver_.WaitFor([](const auto& c) { return c.pended == 3; }));
  EXPECT_EQ(sink_.PeerPidOf(driver_.counts().last_opened), pid);
  kill(pid, SIGKILL);
  EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);
  ASSERT_TRUE(driver_.WaitFor([](const auto& c) { return c.closes >= 1; }));
  StopChannel();
  ExpectOneCleanOpenClose();
  // Nobody released them: the queue's cancel routine completed all three.
  EXPECT_EQ(driver_.counts().released, 0);
  EXPECT_EQ(sink_.open_files(), 0u);
}

}  // namespace
}  // namespace softib::bridge::test

// Two real processes: the test process runs the server, an exec'd child is the client.
// With SOFTIB_M32_CHANNEL_CLIENT naming the m32 build's channel_child_client (required: the
// M32 tests fail without it), the same runs against a 32-bit child (under SOFTIB_M32_EMULATOR,
// default /usr/bin/qemu-i386 when present; set it empty to exec the child directly).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "softib/channel/server.h"
#include "test_sink.h"
#include "tied_child.h"

namespace softib::channel::test {
namespace {

// The child dies with this test (tied_child.h), however the test ends.
pid_t Spawn(const std::vector<std::string>& args) {
  const pid_t pid = test_support::SpawnTied(args);
  EXPECT_GT(pid, 0) << args[0] << ": " << std::strerror(errno);
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class IntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(server_.Start(run_dir_.path(), "dev", &error)) << error;
  }
  std::vector<std::string> Child(const std::string& binary, const char* mode) {
    std::vector<std::string> args;
    if (binary == SOFTIB_CHILD_CLIENT) {
      // This build's own child needs what runs this test (m32 builds: qemu-i386).
      if (*SOFTIB_CHILD_EMULATOR) args.push_back(SOFTIB_CHILD_EMULATOR);
    } else {
      // This kernel may lack IA32 emulation: run the 32-bit child under qemu when present.
      const char* emulator = std::getenv("SOFTIB_M32_EMULATOR");
      if (!emulator) emulator = access("/usr/bin/qemu-i386", X_OK) == 0 ? "/usr/bin/qemu-i386" : "";
      if (*emulator) args.push_back(emulator);
    }
    args.push_back(binary);
    args.push_back(server_.socket_path());
    args.push_back(mode);
    return args;
  }
  void RunWork(const std::string& binary) {
    pid_t pid = Spawn(Child(binary, "work"));
    ASSERT_GT(pid, 0);
    EXPECT_EQ(WaitExit(pid), 0);
    EXPECT_TRUE(sink_.WaitClosed(1));
    EXPECT_EQ(sink_.violations(), 0);
    EXPECT_EQ(server_.stats().rejected_frames, 0u);
  }
  void RunKilled(const std::string& binary) {
    pid_t pid = Spawn(Child(binary, "hold"));
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(sink_.WaitHeld(3, std::chrono::seconds(20)));
    kill(pid, SIGKILL);
    EXPECT_EQ(WaitExit(pid), 128 + SIGKILL);
    ASSERT_TRUE(sink_.WaitClosed(1));
    EXPECT_EQ(sink_.cancels().size(), 3u);
    EXPECT_EQ(sink_.violations(), 0);
    // The sink's Close runs just before the server forgets the file.
    EXPECT_TRUE(WaitNoOpenFiles(server_));
  }

  RunDir run_dir_;
  TestSink sink_;
  Server server_{&sink_};
};

TEST_F(IntegrationTest, ChildProcessClient) { RunWork(SOFTIB_CHILD_CLIENT); }

TEST_F(IntegrationTest, KilledChildIsCleanedUp) { RunKilled(SOFTIB_CHILD_CLIENT); }

// The m32 build's client (SOFTIB_M32_CHANNEL_CLIENT, set by CMake to the m32 preset's tree),
// or null when it is not there: these tests then fail, they are never skipped.
const char* M32Client() {
  const char* m32 = std::getenv("SOFTIB_M32_CHANNEL_CLIENT");
  return m32 != nullptr && *m32 != '\0' && access(m32, X_OK) == 0 ? m32 : nullptr;
}
constexpr char kNoM32Client[] =
    "no 32-bit client at SOFTIB_M32_CHANNEL_CLIENT: build the m32 preset first (cmake --preset "
    "m32 && cmake --build --preset m32 -t channel_child_client)";

TEST_F(IntegrationTest, M32ChildProcessClient) {
  const char* m32 = M32Client();
  ASSERT_NE(m32, nullptr) << kNoM32Client;
  RunWork(m32);
}

TEST_F(IntegrationTest, M32KilledChildIsCleanedUp) {
  const char* m32 = M32Client();
  ASSERT_NE(m32, nullptr) << kNoM32Client;
  RunKilled(m32);
}

}  // namespace
}  // namespace softib::channel::test

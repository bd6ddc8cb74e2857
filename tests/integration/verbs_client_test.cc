// softib_verbs_client against a softibd process: every check passes, the transcript is
// deterministic, and the 32-bit client's (SOFTIB_M32_VERBS_CLIENT, an m32 build's) transcript
// is byte for byte the 64-bit one. *SpeedPath* tests need the rings (MapCqRing/MapQpRings).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "softibd_instance.h"
#include "status_printer.h"

namespace softib::integration {
namespace {

constexpr auto kClientLimit = std::chrono::seconds(60);  // qemu-i386 is slow

struct ClientRun {
  int exit_code = -1;
  std::string transcript;
};

ClientRun RunClient(std::vector<std::string> command, const char* mode) {
  SoftibdInstance daemon;
  ClientRun run;
  if (!daemon.Start(SOFTIBD_BINARY)) {
    ADD_FAILURE() << "softibd did not start";
    return run;
  }
  command.push_back(daemon.run_dir());
  command.push_back(mode);
  Process client;
  if (!client.Start(command)) {
    ADD_FAILURE() << "cannot start " << command[0];
    return run;
  }
  run.transcript = client.ReadAllStdout(kClientLimit);
  const std::string err = client.ReadAllStderr(std::chrono::seconds(1));
  run.exit_code = client.Wait(kClientLimit);
  EXPECT_EQ(daemon.Stop(), 0);
  EXPECT_EQ(err, "");
  return run;
}

// Control path only: everything up to connected QPs, and the teardown.
TEST(VerbsClientTest, ControlPathEveryCheckPasses) {
  const ClientRun run = RunClient({SOFTIB_VERBS_CLIENT}, "control");
  std::printf("%s", run.transcript.c_str());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.transcript.find("FAILED"), std::string::npos);
  EXPECT_NE(run.transcript.find(", 0 failed"), std::string::npos);
}

TEST(VerbsClientTest, ControlPathTranscriptIsDeterministic) {
  const ClientRun first = RunClient({SOFTIB_VERBS_CLIENT}, "control");
  const ClientRun second = RunClient({SOFTIB_VERBS_CLIENT}, "control");
  EXPECT_EQ(first.exit_code, 0);
  EXPECT_EQ(first.transcript, second.transcript);
}

// The m32 build's client (SOFTIB_M32_VERBS_CLIENT, set by CMake to the m32 preset's tree),
// or null when it is not there: the M32 tests then fail, they are never skipped.
const char* M32Client() {
  const char* m32 = std::getenv("SOFTIB_M32_VERBS_CLIENT");
  return m32 != nullptr && *m32 != '\0' && access(m32, X_OK) == 0 ? m32 : nullptr;
}
constexpr char kNoM32Client[] =
    "no 32-bit client at SOFTIB_M32_VERBS_CLIENT: build the m32 preset first (cmake --preset m32 "
    "&& cmake --build --preset m32 -t softib_verbs_client)";

TEST(VerbsClientTest, M32ControlPathSameTranscript) {
  const char* m32 = M32Client();
  ASSERT_NE(m32, nullptr) << kNoM32Client;
  const ClientRun native = RunClient({SOFTIB_VERBS_CLIENT}, "control");
  const ClientRun m32_run = RunClient(M32Command(m32), "control");
  std::printf("%s", m32_run.transcript.c_str());
  EXPECT_EQ(m32_run.exit_code, 0);
  EXPECT_EQ(native.exit_code, 0);
  EXPECT_EQ(m32_run.transcript, native.transcript);
}

// The whole sequence, RDMA WRITE and SENDs over the speed path included.
TEST(VerbsClientTest, SpeedPathEveryCheckPasses) {
  const ClientRun run = RunClient({SOFTIB_VERBS_CLIENT}, "verbs");
  std::printf("%s", run.transcript.c_str());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.transcript.find("FAILED"), std::string::npos);
  EXPECT_NE(run.transcript.find(", 0 failed"), std::string::npos);
}

TEST(VerbsClientTest, M32SpeedPathSameTranscript) {
  const char* m32 = M32Client();
  ASSERT_NE(m32, nullptr) << kNoM32Client;
  // Natively, or under qemu-i386 where the kernel lacks IA32 emulation: there the client's
  // addresses are guest addresses, and the HCA reaches them through the guest base the
  // client states at open (M32Command, runtime/user DmaAddressOffset).
  const ClientRun native = RunClient({SOFTIB_VERBS_CLIENT}, "verbs");
  const ClientRun m32_run = RunClient(M32Command(m32), "verbs");
  std::printf("%s", m32_run.transcript.c_str());
  EXPECT_EQ(m32_run.exit_code, 0);
  EXPECT_EQ(native.exit_code, 0);
  EXPECT_EQ(m32_run.transcript, native.transcript);
}

}  // namespace
}  // namespace softib::integration

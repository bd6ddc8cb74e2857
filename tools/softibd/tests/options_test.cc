// softibd's command line: defaults, values, and one error line with exit 2 for bad input.
#include "options.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace softib::softibd::test {
namespace {

ParseResult Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "softibd");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(OptionsTest, Defaults) {
  setenv("SOFTIB_RUN_DIR", "/tmp/softibd-options-test", 1);
  const ParseResult result = Parse({});
  unsetenv("SOFTIB_RUN_DIR");
  ASSERT_EQ(result.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(result.options.run_dir, "/tmp/softibd-options-test");
  EXPECT_EQ(result.options.cas, 2);
  EXPECT_EQ(result.options.ports, 1);
  EXPECT_TRUE(result.options.cable);
  EXPECT_EQ(result.options.ready_fd, -1);
  EXPECT_TRUE(result.options.pidfile.empty());
}

TEST(OptionsTest, Values) {
  const ParseResult result = Parse({"--run-dir", "/tmp/x", "--cas", "4", "--ports", "2",
                                    "--no-cable", "--ready-fd", "1", "--pidfile", "/tmp/x.pid"});
  ASSERT_EQ(result.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(result.options.run_dir, "/tmp/x");
  EXPECT_EQ(result.options.cas, 4);
  EXPECT_EQ(result.options.ports, 2);
  EXPECT_FALSE(result.options.cable);
  EXPECT_EQ(result.options.ready_fd, 1);
  EXPECT_EQ(result.options.pidfile, "/tmp/x.pid");
}

TEST(OptionsTest, BadCommandLinesExitTwoWithOneErrorLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--cas", "0"},
      {"--cas", "abc"},
      {"--ports", "3"},
      {"--bogus"},
      {"extra"},
      {"--ready-fd", "-1"},
      {"--ready-fd", "999999"},
      {"--run-dir"},
      {"--cas", "2", "--cas"},
      {"--ibsim", "x"},                                        // needs --fabric
      {"--sm", "external"},                                    // needs --fabric
      {"--fabric", "default", "--sm", "dynamic"},              // static | external
      {"--part", "1/2"},                                       // needs --fabric
      {"--fabric", "default", "--listen", "udp:127.0.0.1:0"},  // needs --hosts/--part
      {"--fabric", "default", "--hosts", "leaf-01", "--part", "1/2"},
  };
  for (const auto& args : bad) {
    testing::internal::CaptureStderr();
    const ParseResult result = Parse(args);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(result.kind, ParseResult::Kind::kExit) << args[0];
    EXPECT_EQ(result.exit_code, 2) << args[0];
    EXPECT_EQ(err.rfind("softibd: error: ", 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

TEST(OptionsTest, FabricOptions) {
  const ParseResult result = Parse({"--fabric", "ft36", "--ibsim", "fab1", "--sm", "external"});
  ASSERT_EQ(result.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(result.options.fabric, "ft36");
  EXPECT_EQ(result.options.ibsim, "fab1");
  EXPECT_EQ(result.options.sm, "external");
  EXPECT_EQ(Parse({"--fabric", "default"}).options.sm, "static");
  // Without --ibsim the SM is a user process on a host (softib-sm --run-dir, the AL's MADs).
  EXPECT_EQ(Parse({"--fabric", "default", "--sm", "external"}).kind, ParseResult::Kind::kRun);
  // Part of a fabric: an SM may reach it through another daemon, so no --ibsim needed.
  const ParseResult split =
      Parse({"--fabric", "default", "--part", "2/2", "--sm", "external", "--listen",
             "udp:127.0.0.1:0", "--peer", "udp:10.0.0.1:7", "--peer", "udp:10.0.0.2:7"});
  ASSERT_EQ(split.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(split.options.part, "2/2");
  EXPECT_EQ(split.options.listen, "udp:127.0.0.1:0");
  EXPECT_EQ(split.options.peers, (std::vector<std::string>{"udp:10.0.0.1:7", "udp:10.0.0.2:7"}));
}

TEST(OptionsTest, HelpExitsZero) {
  testing::internal::CaptureStdout();
  const ParseResult result = Parse({"--help"});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(result.kind, ParseResult::Kind::kExit);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(out.find("--run-dir"), std::string::npos);
}

}  // namespace
}  // namespace softib::softibd::test

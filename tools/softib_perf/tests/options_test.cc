// softib_perf's command line: what it accepts, and one clear error (exit 2) for the rest.
#include "options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace softib::perf {
namespace {

ParseResult Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "softib_perf");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(PerfOptions, ServerAndClientTakePerftestOptions) {
  ParseResult r = Parse({"write_bw", "--oob", "unix:/tmp/x.sock", "-s", "4096", "-n", "77", "-t",
                         "32", "-d", "0002c9f34a400001", "-i", "1"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(r.options.test, TestKind::kWriteBw);
  EXPECT_FALSE(r.options.connect);
  ASSERT_TRUE(r.options.oob.has_value());
  EXPECT_EQ(r.options.oob->kind, OobAddress::Kind::kUnix);
  EXPECT_EQ(r.options.oob->path, "/tmp/x.sock");
  EXPECT_EQ(r.options.sizes, std::vector<uint32_t>{4096});
  EXPECT_EQ(r.options.iterations, 77u);
  EXPECT_EQ(r.options.tx_depth, 32u);
  EXPECT_EQ(r.options.ca_guid, 0x0002c9f34a400001ull);

  r = Parse({"send_lat", "tcp:127.0.0.1:18515", "--validate", "--json"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  EXPECT_TRUE(r.options.connect);  // a positional server address makes a client
  EXPECT_EQ(r.options.oob->kind, OobAddress::Kind::kTcp);
  EXPECT_EQ(r.options.oob->port, 18515);
  EXPECT_EQ(r.options.tx_depth, 1u);
  EXPECT_EQ(r.options.inline_size, 220u);
  EXPECT_TRUE(r.options.validate);
  EXPECT_TRUE(r.options.json);
}

TEST(PerfOptions, AllSizesArePowersOfTwoFrom2To8MiB) {
  ParseResult r = Parse({"write_bw", "--kernel", "-a"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  ASSERT_EQ(r.options.sizes.size(), 23u);
  EXPECT_EQ(r.options.sizes.front(), 2u);
  EXPECT_EQ(r.options.sizes.back(), 8u << 20);
  r = Parse({"read_bw", "--kernel", "-a", "--min-size", "4096", "--max-size", "16384"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(r.options.sizes, (std::vector<uint32_t>{4096, 8192, 16384}));
  r = Parse({"atomic_bw", "--kernel", "-A", "CMP_AND_SWAP"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(r.options.sizes, std::vector<uint32_t>{8});
  EXPECT_EQ(r.options.atomic_type, AtomicType::kCompareSwap);
}

TEST(PerfOptions, BadCommandLinesExitWith2) {
  const std::vector<std::vector<std::string>> bad = {
      {},                                                 // no test
      {"ping_lat", "--kernel"},                           // unknown test
      {"write_bw"},                                       // server without --oob
      {"write_bw", "--connect"},                          // client without an address
      {"write_bw", "--oob", "tcp:10.0.0.1:5000"},         // not loopback
      {"write_bw", "--oob", "tcp:127.0.0.1:0"},           // bad port
      {"write_bw", "--oob", "udp:127.0.0.1:5"},           // unknown scheme
      {"write_bw", "--oob", "unix:"},                     // no path
      {"write_bw", "--kernel", "--oob", "unix:/tmp/x"},   // --kernel has no peer
      {"read_bw", "--kernel", "-c", "UC"},                // UC has no READ
      {"atomic_lat", "--kernel", "-c", "UD"},             // nor atomics
      {"write_lat", "--kernel", "-c", "UD"},              // UD has no WRITE
      {"send_bw", "--kernel", "-c", "XRC"},               // unknown transport
      {"send_bw", "--kernel", "-c", "UD", "-s", "8192"},  // more than an MTU
      {"atomic_bw", "--kernel", "-s", "16"},              // atomics move 8 bytes
      {"write_bw", "--kernel", "-s", "4", "-a"},          // -s and -a
      {"write_bw", "--kernel", "--min-size", "4"},        // range without -a
      {"write_bw", "--kernel", "-s", "2147483648"},       // too large
      {"write_bw", "--kernel", "-n", "0"},                // no iterations
      {"write_bw", "--kernel", "-t", "0"},                // no depth
      {"write_bw", "--kernel", "-t", "100000"},           // beyond max_wrs
      {"send_lat", "--kernel", "-t", "4"},                // latency keeps one in flight
      {"send_bw", "--kernel", "-I", "300"},               // beyond MAX_INLINE_DATA
      {"read_bw", "--kernel", "-I", "16"},                // reads carry no inline data
      {"write_bw", "--kernel", "-d", "xyz"},              // bad GUID
      {"write_bw", "--kernel", "-i", "3"},                // no such port
      {"write_bw", "--kernel", "-A", "SWAP"},             // bad atomic type
      {"write_bw", "--kernel", "--bogus"},                // unknown option
      {"write_bw", "--oob", "unix:/a", "unix:/b"},        // two addresses
  };
  for (const auto& args : bad) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    ParseResult r = Parse(args);
    EXPECT_EQ(r.kind, ParseResult::Kind::kExit) << line;
    EXPECT_EQ(r.exit_code, 2) << line;
  }
}

TEST(PerfOptions, HelpExitsWith0) {
  ParseResult r = Parse({"--help"});
  EXPECT_EQ(r.kind, ParseResult::Kind::kExit);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(PerfOptions, ServiceIdReplacesTheOutOfBandChannel) {
  ParseResult r = Parse({"write_bw", "--service-id", "0x5A00", "--connect"});
  ASSERT_EQ(r.kind, ParseResult::Kind::kRun);
  EXPECT_EQ(r.options.service_id, 0x5A00u);
  EXPECT_TRUE(r.options.connect);
  EXPECT_FALSE(r.options.oob.has_value());
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"send_lat", "--service-id", "0"},
           {"send_lat", "--service-id", "xyz"},
           {"send_lat", "--service-id", "1", "--oob", "unix:/tmp/x"},
           {"send_lat", "--service-id", "1", "-c", "UD"},
           {"send_lat", "--service-id", "1", "-c", "UC"},
           {"send_lat", "--service-id", "1", "--kernel"},
           {"send_lat", "--service-id", "1", "-n", "268435456"}}) {
    EXPECT_EQ(Parse(bad).exit_code, 2) << bad[2];
  }
}

}  // namespace
}  // namespace softib::perf

// A UD exchange between two back-to-back HCAs, captured on the cable as ERF (record type
// InfiniBand) and decoded by tshark, a decoder nobody here wrote: no malformed packet, no
// warning, and the fields we sent. Fails (never skips) when tshark is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "hca/device/tests/tshark_util.h"
#include "softib/wire/capture_file.h"
#include "ud_fixture.h"

namespace softib::hca {
namespace {

using testing::NoPayloadHeuristics;
using testing::RunCommand;

TEST(UdCapture, TsharkDecodesTheExchangeCleanly) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0) << "tshark is required";
  testing::UdPair p;
  std::vector<capture::CapturedPacket> records;
  p.cable.SetTap([&](int, std::span<const uint8_t> bytes) {
    records.push_back({static_cast<uint64_t>(records.size() + 1) << 32,
                       capture::kErfTypeInfiniband,
                       {bytes.begin(), bytes.end()}});
  });
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 200)), abi::Status::SUCCESS);
  abi::SendWorkRequest imm = p.Send(0, 5);
  imm.send_flags = abi::SendFlags::IMMEDIATE;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 64)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, imm), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 0)), abi::Status::SUCCESS);
  p.cable.Pump();
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(p.Poll(p.b).size(), 3u);

  char dir_template[] = "/tmp/softib-hca-erf-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string erf = dir + "/ud.erf";
  ASSERT_EQ(capture::WriteErfFile(erf, records), "");
  const std::string out =
      RunCommand("HOME=" + dir + " tshark -n -r " + erf + NoPayloadHeuristics(dir) +
                 " -T fields -E 'separator=|' -e _ws.malformed -e _ws.expert.severity"
                 " -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.deth.q_key"
                 " -e infiniband.deth.srcqp -e infiniband.bth.padcnt 2>/dev/null");
  char expected[256];
  std::snprintf(expected, sizeof expected,
                "||100|0x%06x|0x%016x|0x%08x|0\n||101|0x%06x|0x%016x|0x%08x|3\n"
                "||100|0x%06x|0x%016x|0x%08x|0\n",
                p.b.qpn, testing::kQkey, p.a.qpn, p.b.qpn, testing::kQkey, p.a.qpn, p.b.qpn,
                testing::kQkey, p.a.qpn);
  EXPECT_EQ(out, expected);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace softib::hca

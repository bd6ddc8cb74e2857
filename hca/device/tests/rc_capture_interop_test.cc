// An RC exchange between two back-to-back HCAs (multi-packet SEND with immediate, RDMA
// WRITE, multi-packet RDMA READ, both atomics, an RNR NAK and its retry), captured on the
// cable as ERF and decoded by tshark: no malformed packet, no expert warning, and the
// opcodes, PSNs and AETH fields IBA prescribes for the sequence.
#include <endian.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "hca/device/tests/tshark_util.h"
#include "rc_fixture.h"
#include "softib/wire/capture_file.h"

namespace softib::hca {
namespace {

using testing::NoPayloadHeuristics;
using testing::RunCommand;

using abi::WrType;

TEST(RcCapture, TsharkDecodesTheExchangeCleanly) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0) << "tshark is required";
  testing::RcOptions options;
  options.a_psn = 0xFFFFFD;  // the capture shows the PSN wrap too
  options.buffer_bytes = 1 << 16;
  testing::RcPair p(options);
  std::vector<capture::CapturedPacket> records;
  p.cable.SetTap([&](int, std::span<const uint8_t> bytes) {
    records.push_back({static_cast<uint64_t>(records.size() + 1) << 32,
                       capture::kErfTypeInfiniband,
                       {bytes.begin(), bytes.end()}});
  });
  const auto post = [&](const abi::SendWorkRequest& wr) {
    ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
    ASSERT_TRUE(p.Run());
  };
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4096)), abi::Status::SUCCESS);
  abi::SendWorkRequest send = p.Wr(WrType::SEND, 0, 2500);
  send.send_flags = abi::SendFlags::IMMEDIATE;
  send.immediate_data = htobe32(0x01020304);
  post(send);
  post(p.Wr(WrType::RDMA_WRITE, 0, 100, 8192));
  post(p.Wr(WrType::RDMA_READ, 0, 1500, 8192));
  abi::SendWorkRequest cas = p.Wr(WrType::COMPARE_SWAP, 0, 8, 16384);
  cas.swap = 5;
  post(cas);
  abi::SendWorkRequest faa = p.Wr(WrType::FETCH_ADD, 0, 8, 16384);
  faa.compare_add = 2;
  post(faa);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 16)), abi::Status::SUCCESS);
  p.cable.Pump();  // no receive posted: RNR NAK
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 4096)), abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  ASSERT_EQ(p.Poll(p.a).size(), 6u);

  char dir_template[] = "/tmp/softib-hca-rc-erf-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string erf = dir + "/rc.erf";
  ASSERT_EQ(capture::WriteErfFile(erf, records), "");
  const std::string out =
      RunCommand("HOME=" + dir + " tshark -n -r " + erf + NoPayloadHeuristics(dir) +
                 " -T fields -E 'separator=|' -e _ws.malformed -e _ws.expert.severity"
                 " -e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.bth.a"
                 " -e infiniband.aeth.syndrome -e infiniband.aeth.msn -e infiniband.reth.dmalen"
                 " -e infiniband.atomicacketh.origremdt 2>/dev/null");
  // opcode|PSN|AckReq|AETH syndrome|MSN|RETH DMALen|original value, in capture order.
  // tshark prints the AETH syndrome and the original value in decimal: 31 = ACK with the
  // invalid credit count 0x1F, 33 = 0x21 RNR NAK with timer code 1.
  const std::string expected =
      "||0|16777213|0||||\n"      // SEND_FIRST
      "||1|16777214|0||||\n"      // SEND_MIDDLE
      "||3|16777215|1||||\n"      // SEND_LAST_WITH_IMMEDIATE, PSN 0xFFFFFF, AckReq
      "||17|16777215|0|31|1||\n"  // ACKNOWLEDGE, MSN 1
      "||10|0|1|||100|\n"         // RDMA_WRITE_ONLY, the PSN wrapped to 0
      "||17|0|0|31|2||\n"         // ACKNOWLEDGE
      "||12|1|1|||1500|\n"        // RDMA_READ_REQUEST: takes PSNs 1 and 2
      "||13|1|0|31|3||\n"         // RDMA_READ_RESPONSE_FIRST
      "||15|2|0|31|3||\n"         // RDMA_READ_RESPONSE_LAST
      "||19|3|1||||\n"            // COMPARE_SWAP
      "||18|3|0|31|4||0\n"        // ATOMIC_ACKNOWLEDGE: the value was 0
      "||20|4|1||||\n"            // FETCH_ADD
      "||18|4|0|31|5||5\n"        // ATOMIC_ACKNOWLEDGE: 5, what the swap left
      "||4|5|1||||\n"             // SEND_ONLY
      "||17|5|0|33|5||\n"         // RNR NAK
      "||4|5|1||||\n"             // the same PSN again after the RNR wait
      "||17|5|0|31|6||\n";        // ACKNOWLEDGE, MSN 6
  EXPECT_EQ(out, expected);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace softib::hca

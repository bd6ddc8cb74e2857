// The SMA's answers on the wire, decoded by tshark (a decoder nobody here wrote): the
// NodeInfo and PortInfo GetResp MADs of ProcessLocalMad, carried as a QP0 UD packet on
// VL15 the way the SMI would send them, decode with no malformed packet or warning and
// with the values we configured. Fails (never skips) when tshark is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "hca/device/packet.h"
#include "hca/device/tests/mad_test_util.h"
#include "hca/device/tests/tshark_util.h"
#include "softib/wire/capture_file.h"

namespace softib::hca {
namespace {

using testing::RunCommand;

std::vector<uint8_t> SmpPacket(const testing::MadBytes& mad) {
  PacketHeaders hdr;
  hdr.lrh.VL = 15;
  hdr.lrh.LNH = 2;  // IBA local: BTH follows
  hdr.lrh.DLID = 1;
  hdr.lrh.SLID = 0x11;
  hdr.bth.OpCode = 0x64;  // UD SEND Only
  hdr.bth.P_Key = 0xFFFF;
  hdr.bth.DestQP = 0;
  hdr.deth.SrcQP = 0;
  return BuildPacket(hdr, mad);
}

TEST(SmaCapture, TsharkDecodesNodeInfoAndPortInfoResponses) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0) << "tshark is required";
  Hca hca;
  BackToBackCable cable;
  hca.port(1).lid = 0x11;
  hca.port(1).sm_lid = 1;
  hca.SetPortLink(1, &cable.end(0));
  const auto node = testing::Process(hca, 1, testing::Mad(0x01, 0x01, 0x0011));
  const auto port = testing::Process(hca, 1, testing::Mad(0x01, 0x01, 0x0015));
  ASSERT_EQ(node.result, LocalMadResult::kReply);
  ASSERT_EQ(port.result, LocalMadResult::kReply);
  std::vector<capture::CapturedPacket> records;
  for (const auto* c : {&node, &port})
    records.push_back({static_cast<uint64_t>(records.size() + 1) << 32, capture::kErfTypeInfiniband,
                       SmpPacket(c->response)});

  char dir_template[] = "/tmp/softib-sma-erf-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string erf = dir + "/sma.erf";
  ASSERT_EQ(capture::WriteErfFile(erf, records), "");
  const std::string out =
      RunCommand("HOME=" + dir + " tshark -n -r " + erf +
                 " -T fields -E 'separator=|' -e _ws.malformed -e _ws.expert.severity"
                 " -e infiniband.mad.method -e infiniband.mad.attributeid"
                 " -e infiniband.nodeinfo.nodetype -e infiniband.nodeinfo.numports"
                 " -e infiniband.nodeinfo.portguid -e infiniband.nodeinfo.localportnum"
                 " -e infiniband.portinfo.lid -e infiniband.portinfo.mastersmlid"
                 " -e infiniband.portinfo.portstate 2>/dev/null");
  EXPECT_EQ(out,
            "||0x81|0x0011|0x01|0x01|0x0002c90300000002|0x01|||\n"
            "||0x81|0x0015|||||0x0011|0x0001|0x04\n");
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace softib::hca

// The HCA ports' SMA through ProcessLocalMad: every attribute's Get/Set with exact bytes
// (written from IBA 14.2.5's tables), the MAD status of bad methods, attributes and
// modifiers, and what is not answered at all.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hca/device/tests/mad_test_util.h"

namespace softib::hca {
namespace {

using testing::GetBe;
using testing::Mad;
using testing::MadBytes;
using testing::Process;
using testing::PutBe;
using testing::SetData;

using testing::kDr;
using testing::kGet;
using testing::kGuidInfo;
using testing::kLid;
using testing::kNodeDescription;
using testing::kNodeInfo;
using testing::kPKeyTable;
using testing::kPortInfo;
using testing::kSet;
using testing::kSlToVl;
using testing::kSmInfo;
using testing::kSwitchInfo;
using testing::kVlArb;

HcaConfig TwoPorts() {
  HcaConfig c;
  c.num_ports = 2;
  return c;
}

std::vector<uint8_t> Data(const testing::MadCall& c, std::size_t n) {
  return {c.data(), c.data() + n};
}

TEST(Sma, NodeInfoGetLidRouted) {
  Hca hca(TwoPorts());
  const auto c = Process(hca, 2, Mad(kLid, kGet, kNodeInfo));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  // Header: GetResp, status 0, TID and attribute kept.
  EXPECT_EQ(c.response[0], 1);
  EXPECT_EQ(c.response[1], 0x01);
  EXPECT_EQ(c.response[3], 0x81);
  EXPECT_EQ(c.status(), 0);
  EXPECT_EQ(GetBe(c.response, 8, 8), 0x0102030405060708ull);
  EXPECT_EQ(GetBe(c.response, 16, 2), kNodeInfo);
  const std::vector<uint8_t> expected = {
      0x01, 0x01, 0x01, 0x02,                          // Base/ClassVersion, CA, 2 ports
      0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x00, 0x01,  // SystemImageGUID (= node GUID)
      0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x00, 0x01,  // NodeGUID
      0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x00, 0x03,  // PortGUID of port 2
      0x00, 0x80, 0x10, 0x03,                          // PartitionCap 128, DeviceID 0x1003
      0x00, 0x00, 0x00, 0x00,                          // Revision
      0x02, 0x00, 0x02, 0xC9,                          // LocalPortNum 2, VendorID
  };
  EXPECT_EQ(Data(c, 40), expected);
  for (int i = 40; i < 64; ++i) EXPECT_EQ(c.data()[i], 0) << i;
  for (int i = 128; i < 256; ++i) EXPECT_EQ(c.response[i], 0) << i;
}

TEST(Sma, DirectedRouteResponseSetsDirectionAndKeepsThePath) {
  Hca hca;
  MadBytes req = Mad(kDr, kGet, kNodeInfo);
  req[6] = 1;  // HopPointer
  req[7] = 1;  // HopCount
  req[128 + 1] = 3;
  const auto c = Process(hca, 1, req);
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(c.response[3], 0x81);
  EXPECT_EQ(c.response[4], 0x80);  // D = 1, status 0
  EXPECT_EQ(c.response[5], 0x00);
  EXPECT_EQ(c.response[6], 1);
  EXPECT_EQ(c.response[7], 1);
  EXPECT_EQ(c.response[129], 3);
  EXPECT_EQ(c.data()[2], 0x01);  // NodeType CA
  // A bad attribute: the status sits under D.
  const auto bad = Process(hca, 1, Mad(kDr, kGet, kSmInfo));
  EXPECT_EQ(bad.response[4], 0x80);
  EXPECT_EQ(bad.response[5], 0x0C);
}

TEST(Sma, NodeDescription) {
  HcaConfig config;
  config.description = "node7 HCA-1";
  Hca hca(config);
  const auto c = Process(hca, 1, Mad(kLid, kGet, kNodeDescription));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(std::memcmp(c.data(), "node7 HCA-1", 11), 0);
  for (int i = 11; i < 64; ++i) EXPECT_EQ(c.data()[i], 0) << i;
  // Read-only: Set is an unsupported method/attribute combination (0x000C).
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kSet, kNodeDescription)).status(), 0x000C);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kSet, kNodeInfo)).status(), 0x000C);
}

TEST(Sma, PortInfoGetOfAPreconfiguredPort) {
  Hca hca;
  BackToBackCable cable;
  hca.port(1).lid = 5;
  hca.SetPortLink(1, &cable.end(0));
  const auto c = Process(hca, 1, Mad(kLid, kGet, kPortInfo));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(c.status(), 0);
  const std::vector<uint8_t> expected = {
      0,    0,    0,    0,    0,    0,    0,    0,     // M_Key
      0xFE, 0x80, 0,    0,    0,    0,    0,    0,     // GIDPrefix
      0x00, 0x05, 0x00, 0x00,                          // LID 5, MasterSMLID 0
      0x02, 0x51, 0x08, 0x68,                          // CapabilityMask (22: trap 144)
      0x00, 0x00, 0x00, 0x00,                          // DiagCode, M_KeyLeasePeriod
      0x01, 0x03, 0x03, 0x02,                          // LocalPortNum, width en/sup/active (4X)
      0x74,                                            // speeds SDR|DDR|QDR, Active
      0x52,                                            // LinkUp, LinkDownDefault Polling
      0x00,                                            // protect bits 0, LMC 0
      0x47,                                            // speed active QDR, enabled all
      0x50,                                            // NeighborMTU 4096, MasterSMSL 0
      0x40,                                            // VLCap VL0-7, InitType 0
      0x00, 0x08, 0x08,                                // VLHighLimit, VLArb high/low cap
      0x05,                                            // InitTypeReply 0, MTUCap 4096
      0x00, 0x40,                                      // VLStall/HOQ, OperationalVLs 4
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00,              // M_/P_/Q_KeyViolations
      0x80, 0x12,                                      // GUIDCap 128, SubnetTimeOut 18
      0x08, 0x00, 0x00, 0x00,                          // RespTimeValue 8, thresholds, hint
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // latency, CapabilityMask2, ext speeds
  };
  EXPECT_EQ(Data(c, 64), expected);
  // Modifier 0 and 1 are the same port; 2 does not exist; bit 31 is ignored.
  EXPECT_EQ(Data(Process(hca, 1, Mad(kLid, kGet, kPortInfo, 1)), 64), expected);
  EXPECT_EQ(Data(Process(hca, 1, Mad(kLid, kGet, kPortInfo, 0x80000000u)), 64), expected);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kPortInfo, 2)).status(), 0x001C);
}

TEST(Sma, PortInfoOfAnUncabledPortIsDownAndPolling) {
  Hca hca;
  const auto c = Process(hca, 1, Mad(kLid, kGet, kPortInfo));
  EXPECT_EQ(c.data()[32], 0x71);  // Down
  EXPECT_EQ(c.data()[33], 0x22);  // Polling
}

TEST(Sma, GuidInfoBlocks) {
  Hca hca;
  auto c = Process(hca, 1, Mad(kLid, kGet, kGuidInfo));
  ASSERT_EQ(c.status(), 0);
  EXPECT_EQ(GetBe(c.response, 64, 8), 0x0002C90300000002ull);
  for (int i = 8; i < 64; ++i) EXPECT_EQ(c.data()[i], 0) << i;
  // Set: entry 0 (the port GUID) stays; entry 1 becomes an alias GUID, so GID 1.
  MadBytes set = Mad(kLid, kSet, kGuidInfo);
  PutBe(set, 64, 0x1111111111111111ull, 8);
  PutBe(set, 72, 0x0002C903000000AAull, 8);
  c = Process(hca, 1, set);
  ASSERT_EQ(c.status(), 0);
  EXPECT_EQ(GetBe(c.response, 64, 8), 0x0002C90300000002ull);
  EXPECT_EQ(GetBe(c.response, 72, 8), 0x0002C903000000AAull);
  abi::Gid gids[2];
  uint32_t count = 0;
  ASSERT_EQ(hca.QueryGidTable(1, 0, gids, &count), abi::Status::SUCCESS);
  const uint8_t gid1[16] = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xC9, 0x03, 0, 0, 0, 0xAA};
  EXPECT_EQ(std::memcmp(gids[1].raw, gid1, 16), 0);
  // Block 15 is the last of 128 GUIDs; 16 does not exist.
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kGuidInfo, 15)).status(), 0);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kGuidInfo, 16)).status(), 0x001C);
}

TEST(Sma, PKeyTableGetSetAndTheDataPathTable) {
  Hca hca;
  std::vector<abi::AsyncEventType> events;
  hca.async_events = [&](const DeviceEvent& e) { events.push_back(e.type); };
  auto c = Process(hca, 1, Mad(kLid, kGet, kPKeyTable));
  ASSERT_EQ(c.status(), 0);
  EXPECT_EQ(c.data()[0], 0xFF);
  EXPECT_EQ(c.data()[1], 0xFF);
  for (int i = 2; i < 64; ++i) EXPECT_EQ(c.data()[i], 0) << i;
  // Block 1 = P_Keys 32..63.
  MadBytes set = Mad(kLid, kSet, kPKeyTable, 1);
  SetData(set, {{0, 0x80}, {1, 0x01}, {62, 0x7F}, {63, 0xFF}});
  c = Process(hca, 1, set);
  ASSERT_EQ(c.status(), 0);
  EXPECT_EQ(c.data()[0], 0x80);
  EXPECT_EQ(c.data()[63], 0xFF);
  EXPECT_EQ(hca.port(1).pkeys[32], 0x8001);
  EXPECT_EQ(hca.port(1).pkeys[63], 0x7FFF);
  EXPECT_EQ(events, std::vector<abi::AsyncEventType>{abi::AsyncEventType::PKEY_CHANGE});
  // The same table again changes nothing and says nothing.
  Process(hca, 1, set);
  EXPECT_EQ(events.size(), 1u);
  // 128 P_Keys: blocks 0..3. Bits 31:16 (a switch's port) are ignored on a CA.
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kPKeyTable, 4)).status(), 0x001C);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kPKeyTable, 0x00010003)).status(), 0);
}

TEST(Sma, SlToVlMappingTable) {
  Hca hca;
  MadBytes set = Mad(kLid, kSet, kSlToVl);
  SetData(set, {{0, 0x01}, {1, 0x23}, {7, 0x70}, {8, 0xAB}});  // byte 8 is past the attribute
  auto c = Process(hca, 1, set);
  ASSERT_EQ(c.status(), 0);
  const std::vector<uint8_t> expected = {0x01, 0x23, 0, 0, 0, 0, 0, 0x70, 0};
  EXPECT_EQ(Data(c, 9), expected);
  EXPECT_EQ(Data(Process(hca, 1, Mad(kLid, kGet, kSlToVl)), 9), expected);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kSlToVl, 0x0101)).status(), 0x001C);
}

TEST(Sma, VlArbitrationTablePortions) {
  Hca hca;
  MadBytes set = Mad(kLid, kSet, kVlArb, 0x00010000);  // low priority, entries 0-31
  SetData(set, {{0, 0x00}, {1, 0x40}, {2, 0x01}, {3, 0x20}, {14, 0x07}, {15, 0xFF}, {16, 0x03}});
  auto c = Process(hca, 1, set);
  ASSERT_EQ(c.status(), 0);
  // 8 entries kept (VLArbitrationLowCap), the rest read 0; the reserved nibble is not kept.
  const std::vector<uint8_t> expected = {0x00, 0x40, 0x01, 0x20, 0, 0,    0,    0,    0,
                                         0,    0,    0,    0,    0, 0x07, 0xFF, 0x00, 0x00};
  EXPECT_EQ(Data(c, 18), expected);
  EXPECT_EQ(Data(Process(hca, 1, Mad(kLid, kGet, kVlArb, 0x00010001)), 18), expected);
  // The high table is separate.
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kVlArb, 0x00030000)).data()[1], 0);
  // Portions 2 and 4 (entries 32-63) are beyond the capability; 0 and 5 are not portions.
  for (uint32_t portion : {0u, 2u, 4u, 5u})
    EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kVlArb, portion << 16)).status(), 0x001C) << portion;
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kVlArb, 0x00010002)).status(), 0x001C);
}

TEST(Sma, StatusesOfBadMethodsAttributesAndVersions) {
  Hca hca;
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kSmInfo)).status(), 0x000C);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kSwitchInfo)).status(), 0x000C);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, 0xFF00)).status(), 0x000C);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, 0x03, kNodeInfo)).status(), 0x0008);  // Send
  EXPECT_EQ(Process(hca, 1, Mad(kLid, kGet, kNodeInfo, 1)).status(), 0x001C);
  MadBytes v2 = Mad(kLid, kGet, kNodeInfo);
  v2[2] = 2;
  EXPECT_EQ(Process(hca, 1, v2).status(), 0x0004);
}

TEST(Sma, WhatIsNotAnswered) {
  Hca hca;
  MadBytes base2 = Mad(kLid, kGet, kNodeInfo);
  base2[0] = 2;
  EXPECT_EQ(Process(hca, 1, base2).result, LocalMadResult::kBad);
  EXPECT_EQ(Process(hca, 1, Mad(0x03, kGet, 0x0011)).result, LocalMadResult::kBad);  // SA
  EXPECT_EQ(Process(hca, 0, Mad(kLid, kGet, kNodeInfo)).result, LocalMadResult::kBad);
  EXPECT_EQ(Process(hca, 2, Mad(kLid, kGet, kNodeInfo)).result, LocalMadResult::kBad);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, 0x81, kNodeInfo)).result, LocalMadResult::kNoReply);
  EXPECT_EQ(Process(hca, 1, Mad(kLid, 0x05, 0x0002)).result, LocalMadResult::kNoReply);  // Trap
  EXPECT_EQ(Process(hca, 1, Mad(kLid, 0x07, 0x0002)).result, LocalMadResult::kNoReply);
}

}  // namespace
}  // namespace softib::hca

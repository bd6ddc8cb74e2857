#include "switch_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "softib/wire/ib_crc.h"

namespace softib::fabric::test {

void Put16(std::span<uint8_t> at, uint16_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}

void Put64(std::span<uint8_t> at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}

uint16_t Get16(std::span<const uint8_t> at) { return static_cast<uint16_t>(at[0] << 8 | at[1]); }

std::span<uint8_t, 64> Data(Mad& mad) { return std::span<uint8_t, 64>(mad.data() + kData, 64); }

uint16_t Status(const Mad& mad) { return Get16(std::span(mad).subspan(kStatus)); }

static Mad Header(uint8_t mgmt_class, uint8_t method, uint16_t attribute, uint32_t modifier,
                  uint64_t mkey) {
  Mad mad{};
  mad[0] = 1;  // BaseVersion
  mad[1] = mgmt_class;
  mad[2] = 1;  // ClassVersion
  mad[3] = method;
  Put64(std::span(mad).subspan(8), 0x1234567890abcdefULL);  // TransactionID
  Put16(std::span(mad).subspan(16), attribute);
  mad[20] = static_cast<uint8_t>(modifier >> 24);
  mad[21] = static_cast<uint8_t>(modifier >> 16);
  mad[22] = static_cast<uint8_t>(modifier >> 8);
  mad[23] = static_cast<uint8_t>(modifier);
  Put64(std::span(mad).subspan(24), mkey);
  return mad;
}

Mad LidSmp(uint8_t method, uint16_t attribute, uint32_t modifier, uint64_t mkey) {
  return Header(0x01, method, attribute, modifier, mkey);
}

Mad DrSmp(uint8_t method, uint16_t attribute, uint32_t modifier,
          std::initializer_list<uint8_t> path, uint64_t mkey) {
  Mad mad = Header(0x81, method, attribute, modifier, mkey);
  mad[kHopCount] = static_cast<uint8_t>(path.size());
  Put16(std::span(mad).subspan(32), 0xFFFF);  // DrSLID
  Put16(std::span(mad).subspan(34), 0xFFFF);  // DrDLID
  std::size_t i = 1;
  for (uint8_t p : path) mad[kInitialPath + i++] = p;
  return mad;
}

std::vector<uint8_t> Packet(uint8_t vl, uint16_t dlid, uint16_t slid, uint32_t dest_qp,
                            std::span<const uint8_t> payload, uint32_t src_qp) {
  std::vector<uint8_t> p;
  p.reserve(28 + payload.size() + 6);  // AppendCrcs must not reallocate
  p.resize(28, 0);
  const std::size_t words = (28 + payload.size() + 4) / 4;  // through the ICRC
  p[0] = static_cast<uint8_t>(vl << 4);                     // VL, LVer 0
  p[1] = 0x02;                                              // SL 0, LNH IBA local
  Put16(std::span(p).subspan(2), dlid);
  Put16(std::span(p).subspan(4), static_cast<uint16_t>(words & 0x7FF));
  Put16(std::span(p).subspan(6), slid);
  p[8] = 0x64;                              // UD SEND only
  p[9] = 0x00;                              // SE 0, M 0, PadCnt 0, TVer 0
  Put16(std::span(p).subspan(10), 0xFFFF);  // P_Key
  p[13] = static_cast<uint8_t>(dest_qp >> 16);
  p[14] = static_cast<uint8_t>(dest_qp >> 8);
  p[15] = static_cast<uint8_t>(dest_qp);
  p[19] = 0x01;  // PSN
  p[20] = 0x80;  // Q_Key 0x80010000
  p[21] = 0x01;
  p[25] = static_cast<uint8_t>(src_qp >> 16);
  p[26] = static_cast<uint8_t>(src_qp >> 8);
  p[27] = static_cast<uint8_t>(src_qp);
  for (uint8_t b : payload) p.push_back(b);
  ibcrc::AppendCrcs(p);
  return p;
}

std::vector<uint8_t> SmpPacket(const Mad& mad, uint16_t dlid, uint16_t slid) {
  return Packet(15, dlid, slid, 0, mad, 0);
}

Mad MadOf(std::span<const uint8_t> packet) {
  Mad mad{};
  std::copy_n(packet.begin() + kMadInPacket, mad.size(), mad.begin());
  return mad;
}

bool CrcsGood(std::span<const uint8_t> packet) {
  const ibcrc::CrcCheck c = ibcrc::CheckCrcs(packet);
  return c.well_formed && c.icrc_ok() && c.vcrc_ok();
}

std::optional<Mad> Ask(Switch& sw, const Mad& mad, uint8_t in_port) {
  return sw.HandleSmp(mad, in_port);
}

SwitchConfig TestConfig(uint64_t guid, uint8_t ports) {
  SwitchConfig c;
  c.node_guid = guid;
  c.num_ports = ports;
  c.description = "softib switch A";
  c.vendor_id = 0x0002c9;
  c.device_id = 0xbd36;
  c.revision = 0xa0;
  return c;
}

void ActivatePort(Switch& sw, uint8_t port) {
  sw.SetLinkUp(port, true);
  for (uint8_t state : {0x03, 0x04}) {  // Armed, Active
    Mad m = LidSmp(kSet, 0x0015, port);
    Data(m)[32] = state;
    Data(m)[36] = 0x50;  // NeighborMTU 4096
    EXPECT_EQ(Status(*Ask(sw, m)), 0);
  }
}

void SetLftBlock0(Switch& sw, std::initializer_list<std::pair<uint16_t, uint8_t>> routes) {
  Mad top = LidSmp(kSet, 0x0012, 0);
  Put16(Data(top).subspan(6), 63);  // LinearFDBTop
  EXPECT_EQ(Status(*Ask(sw, top)), 0);
  Mad lft = LidSmp(kSet, 0x0019, 0);
  std::fill(Data(lft).begin(), Data(lft).end(), 0xFF);
  for (const auto& [lid, port] : routes) Data(lft)[lid] = port;
  EXPECT_EQ(Status(*Ask(sw, lft)), 0);
}

}  // namespace softib::fabric::test

// Port counters for the PMA: packets and data words each way, receive errors, discards,
// and the violation counters, counting real traffic and real drops.
#include <endian.h>
#include <gtest/gtest.h>

#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::Status;

TEST(Counters, CountPacketsWordsErrorsAndViolations) {
  testing::UdPair p;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(i * 200, 200)), Status::SUCCESS);
  std::vector<std::vector<uint8_t>> seen;
  p.cable.SetTap(
      [&](int, std::span<const uint8_t> bytes) { seen.emplace_back(bytes.begin(), bytes.end()); });
  for (int i = 0; i < 3; ++i) ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 64)), Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 64, 0x0BAD)), Status::SUCCESS);  // wrong Q_Key
  p.cable.Pump();
  // LRH 8 + BTH 12 + DETH 8 + 64 payload + ICRC 4 = 96 bytes = 24 words (+ 2 bytes VCRC).
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].size(), 98u);
  const PortCounters& tx = p.a.hca.counters(1);
  const PortCounters& rx = p.b.hca.counters(1);
  EXPECT_EQ(tx.xmit_packets, 4u);
  EXPECT_EQ(tx.xmit_unicast_packets, 4u);
  EXPECT_EQ(tx.xmit_data_words, 4u * 24);
  EXPECT_EQ(rx.rcv_packets, 4u);
  EXPECT_EQ(rx.rcv_unicast_packets, 4u);
  EXPECT_EQ(rx.rcv_data_words, 4u * 24);
  EXPECT_EQ(rx.qkey_violations, 1u);
  EXPECT_EQ(rx.rcv_errors, 0u);
  // A corrupted packet is a receive error and is not counted as received data.
  std::vector<uint8_t> bad = seen[0];
  bad[40] ^= 0x01;
  p.b.hca.Receive(1, bad);
  EXPECT_EQ(rx.rcv_errors, 1u);
  EXPECT_EQ(rx.rcv_packets, 4u);
  // Wrong partition: a P_Key violation.
  p.a.hca.port(1).pkeys[0] = 0x8123;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 64)), Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(rx.pkey_violations, 1u);
  EXPECT_EQ(rx.rcv_packets, 5u);
  // No link: what the port sends is discarded, not transmitted.
  p.a.hca.port(1).link = nullptr;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 64)), Status::SUCCESS);
  EXPECT_EQ(tx.xmit_discards, 1u);
  EXPECT_EQ(tx.xmit_packets, 5u);
  EXPECT_EQ(tx.local_link_integrity_errors, 0u);
}

}  // namespace
}  // namespace softib::hca

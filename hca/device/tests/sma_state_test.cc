// The port's logical state machine as an SM drives it through SubnSet(PortInfo), the
// events it raises, the LID/P_Key the data path then uses, and M_Key protection
// (IBA 14.2.4, 14.2.5.6). PortInfo bytes are written from the spec's table.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "hca/device/tests/mad_test_util.h"
#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::AsyncEventType;
using testing::GetBe;
using testing::Mad;
using testing::MadBytes;
using testing::Process;
using testing::PutBe;

using testing::kGet;
using testing::kPortInfo;
using testing::kSet;

// PortInfo byte offsets (IBA 14.2.5.6).
constexpr unsigned kLidAt = 16, kSmLidAt = 18, kLeaseAt = 26, kStateAt = 32, kPhysAt = 33,
                   kProtectLmcAt = 34, kMtuSlAt = 36, kOpVlsAt = 43, kMKeyViolAt = 44,
                   kTimeoutAt = 51;

struct PortUnderSm {
  Hca hca;
  BackToBackCable cable;
  std::vector<std::pair<AsyncEventType, uint32_t>> events;
  uint64_t mkey = 0;  // what the "SM" puts in its SMPs

  PortUnderSm() {
    hca.async_events = [this](const DeviceEvent& e) { events.emplace_back(e.type, e.object); };
  }
  // The SM's way: read PortInfo, change some bytes, write it back.
  MadBytes Current() {
    const auto c = Process(hca, 1, Mad(0x01, kGet, kPortInfo, 0, mkey));
    EXPECT_EQ(c.result, LocalMadResult::kReply);
    MadBytes set = Mad(0x01, kSet, kPortInfo, 0, mkey);
    std::copy_n(c.data(), 64, set.begin() + 64);
    set[64 + kPhysAt] &= 0x0F;   // PortPhysicalState 0: no change (LinkUp cannot be set)
    set[64 + kStateAt] &= 0xF0;  // PortState 0: no change, as OpenSM writes it
    return set;
  }
  testing::MadCall SetState(uint8_t state) {
    MadBytes set = Current();
    set[64 + kStateAt] = static_cast<uint8_t>((set[64 + kStateAt] & 0xF0) | state);
    return Process(hca, 1, set);
  }
  uint8_t State() {
    return Process(hca, 1, Mad(0x01, kGet, kPortInfo, 0, mkey)).data()[kStateAt] & 0xF;
  }
};

TEST(SmaState, AnSmBringsAPortWithoutLidFromInitThroughArmedToActive) {
  PortUnderSm s;
  s.hca.SetPortLink(1, &s.cable.end(0));
  EXPECT_EQ(s.State(), 2);  // Init: no LID, no SM yet
  EXPECT_TRUE(s.events.empty());

  MadBytes set = s.Current();
  PutBe(set, 64 + kLidAt, 0x0011, 2);
  PutBe(set, 64 + kSmLidAt, 0x0001, 2);
  set[64 + kStateAt] = 0x73;       // Armed (the supported-speed nibble is read-only)
  set[64 + kProtectLmcAt] = 0x01;  // LMC 1
  set[64 + kMtuSlAt] = 0x43;       // NeighborMTU 2048, MasterSMSL 3
  set[64 + kTimeoutAt] = 0x14;     // SubnetTimeOut 20
  auto c = Process(s.hca, 1, set);
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(c.status(), 0);
  EXPECT_EQ(c.response[3], 0x81);
  EXPECT_EQ(GetBe(c.response, 64 + kLidAt, 2), 0x0011u);
  EXPECT_EQ(GetBe(c.response, 64 + kSmLidAt, 2), 0x0001u);
  EXPECT_EQ(c.data()[kStateAt], 0x73);
  EXPECT_EQ(c.data()[kPhysAt], 0x52);
  EXPECT_EQ(c.data()[kProtectLmcAt], 0x01);
  EXPECT_EQ(c.data()[kMtuSlAt], 0x43);
  EXPECT_EQ(c.data()[kTimeoutAt], 0x14);
  const Port& p = s.hca.port(1);
  EXPECT_EQ(p.lid, 0x11);
  EXPECT_EQ(p.lmc, 1);
  EXPECT_EQ(p.sm_lid, 1);
  EXPECT_EQ(p.sm_sl, 3);
  EXPECT_EQ(p.active_mtu, abi::PathMtu::MTU_2048);
  EXPECT_EQ(p.subnet_timeout, 20);
  abi::PortAttributes attrs{};
  ASSERT_EQ(s.hca.QueryPort(1, &attrs), abi::Status::SUCCESS);
  EXPECT_EQ(attrs.link_state, 3);
  EXPECT_EQ(attrs.lid, 0x11);
  EXPECT_EQ(s.events, (std::vector<std::pair<AsyncEventType, uint32_t>>{
                          {AsyncEventType::LID_CHANGE, 1}, {AsyncEventType::SM_CHANGE, 1}}));

  s.events.clear();
  c = s.SetState(4);
  EXPECT_EQ(c.status(), 0);
  EXPECT_EQ(c.data()[kStateAt], 0x74);
  EXPECT_EQ(s.events,
            (std::vector<std::pair<AsyncEventType, uint32_t>>{{AsyncEventType::PORT_ACTIVE, 1}}));
  // Active again: a no-op, no event.
  s.events.clear();
  EXPECT_EQ(s.SetState(4).status(), 0);
  EXPECT_TRUE(s.events.empty());
}

TEST(SmaState, IllegalTransitionsAndValuesAreRefusedAndChangeNothing) {
  PortUnderSm s;
  s.hca.SetPortLink(1, &s.cable.end(0));
  EXPECT_EQ(s.SetState(4).status(), 0x001C);  // Init → Active skips Armed
  EXPECT_EQ(s.SetState(2).status(), 0x001C);  // Init is the link's to give
  EXPECT_EQ(s.SetState(5).status(), 0x001C);  // not a state
  EXPECT_EQ(s.State(), 2);
  ASSERT_EQ(s.SetState(3).status(), 0);
  ASSERT_EQ(s.SetState(4).status(), 0);
  EXPECT_EQ(s.SetState(3).status(), 0x001C);  // Active → Armed
  EXPECT_EQ(s.State(), 4);

  // A refused Set changes nothing, not even the fields that were valid.
  MadBytes set = s.Current();
  PutBe(set, 64 + kLidAt, 0x0022, 2);
  set[64 + kStateAt] = 0x72;
  const auto c = Process(s.hca, 1, set);
  EXPECT_EQ(c.status(), 0x001C);
  EXPECT_EQ(GetBe(c.response, 64 + kLidAt, 2), 0u);  // the attribute as it is
  EXPECT_EQ(s.hca.port(1).lid, 0);

  const std::vector<std::pair<unsigned, uint8_t>> bad = {
      {kMtuSlAt, 0x00},  // NeighborMTU 0
      {kMtuSlAt, 0x60},  // NeighborMTU beyond MTUCap (4096)
      {kOpVlsAt, 0x50},  // OperationalVLs beyond VLCap (VL0-7)
      {29, 0x04},        // LinkWidthEnabled 8X: not supported
      {35, 0x48},        // LinkSpeedEnabled FDR10 bit: not supported
      {kPhysAt, 0x52},   // PortPhysicalState LinkUp cannot be set
      {kPhysAt, 0x23},   // LinkDownDefaultState 3
      {kLidAt, 0xC0},    // LID 0xC0xx: multicast
  };
  ASSERT_EQ(Process(s.hca, 1, s.Current()).status(), 0);  // unchanged, it is accepted
  for (auto [at, value] : bad) {
    MadBytes b = s.Current();
    b[64 + at] = value;
    EXPECT_EQ(Process(s.hca, 1, b).status(), 0x001C) << at << " " << int(value);
  }
  EXPECT_EQ(s.State(), 4);
  EXPECT_EQ(s.hca.port(1).active_mtu, abi::PathMtu::MTU_4096);
}

TEST(SmaState, DownRetrainsToInitAndCablesDecide) {
  PortUnderSm s;
  s.hca.SetPortLink(1, &s.cable.end(0));
  ASSERT_EQ(s.SetState(3).status(), 0);
  ASSERT_EQ(s.SetState(4).status(), 0);
  s.events.clear();
  const auto c = s.SetState(1);  // Down: the link goes down and retrains
  EXPECT_EQ(c.status(), 0);
  EXPECT_EQ(c.data()[kStateAt] & 0xF, 2);
  EXPECT_EQ(s.events,
            (std::vector<std::pair<AsyncEventType, uint32_t>>{{AsyncEventType::PORT_DOWN, 1}}));
  // Active, then unplugged and plugged again: Init until the SM activates it again.
  ASSERT_EQ(s.SetState(3).status(), 0);
  ASSERT_EQ(s.SetState(4).status(), 0);
  s.hca.SetPortLink(1, nullptr);
  s.hca.SetPortLink(1, &s.cable.end(0));
  EXPECT_EQ(s.State(), 2);
  // Unplugged: Down, and Armed cannot be asked for.
  s.hca.SetPortLink(1, nullptr);
  EXPECT_EQ(s.State(), 1);
  EXPECT_EQ(s.SetState(3).status(), 0x001C);
  // Plugged again: Init, although the SM gave it a LID before (the SM activates it).
  s.hca.port(1).lid = 9;
  s.hca.SetPortLink(1, &s.cable.end(0));
  EXPECT_EQ(s.State(), 2);
  // PortPhysicalState Disabled takes it down; Polling brings it back to Init.
  MadBytes dis = s.Current();
  dis[64 + kPhysAt] = 0x32;
  EXPECT_EQ(Process(s.hca, 1, dis).data()[kPhysAt], 0x32);
  EXPECT_EQ(s.State(), 1);
  MadBytes poll = s.Current();
  poll[64 + kPhysAt] = 0x22;
  EXPECT_EQ(Process(s.hca, 1, poll).data()[kPhysAt], 0x52);
  EXPECT_EQ(s.State(), 2);
}

TEST(SmaState, APreconfiguredPortStaysActiveWhenAnSmTakesItOver) {
  PortUnderSm s;
  s.hca.port(1).lid = 5;
  s.hca.SetPortLink(1, &s.cable.end(0));
  EXPECT_EQ(s.State(), 4);
  s.events.clear();
  MadBytes set = s.Current();  // PortState 0: no change
  EXPECT_EQ(Process(s.hca, 1, set).status(), 0);
  EXPECT_EQ(s.State(), 4);
  set[64 + kStateAt] |= 4;  // Active → Active
  EXPECT_EQ(Process(s.hca, 1, set).status(), 0);
  EXPECT_EQ(s.State(), 4);
  EXPECT_TRUE(s.events.empty());
}

TEST(SmaState, ClientReregisterAndGidPrefixRaiseTheirEvents) {
  PortUnderSm s;
  MadBytes set = s.Current();
  set[64 + kTimeoutAt] |= 0x80;  // ClientReregister
  set[64 + 8] = 0xFE;
  set[64 + 15] = 0x42;  // GIDPrefix fe80::42
  ASSERT_EQ(Process(s.hca, 1, set).status(), 0);
  EXPECT_EQ(s.hca.port(1).subnet_prefix, 0xFE80000000000042ull);
  EXPECT_EQ(s.events,
            (std::vector<std::pair<AsyncEventType, uint32_t>>{
                {AsyncEventType::GID_CHANGE, 1}, {AsyncEventType::CLIENT_REREGISTER, 1}}));
}

// ---- the data path follows the SMA ------------------------------------------------------

MadBytes SetPortInfoOf(Hca& hca, uint16_t lid, uint8_t state) {
  const auto c = Process(hca, 1, Mad(0x01, kGet, kPortInfo));
  MadBytes set = Mad(0x01, kSet, kPortInfo);
  std::copy_n(c.data(), 64, set.begin() + 64);
  set[64 + kPhysAt] &= 0x0F;
  PutBe(set, 64 + kLidAt, lid, 2);
  set[64 + kStateAt] = static_cast<uint8_t>((set[64 + kStateAt] & 0xF0) | state);
  return set;
}

TEST(SmaState, ALidSetByTheSmaIsTheOneTheDataPathAnswersTo) {
  testing::UdPair p;
  ASSERT_EQ(Process(p.b.hca, 1, SetPortInfoOf(p.b.hca, 0x40, 0)).status(), 0);
  ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 200)), abi::Status::SUCCESS);
  // To the old LID (2): dropped as not addressed to the port.
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.counters(1).recv_drop(RecvDrop::kWrongDlid), 1u);
  EXPECT_TRUE(p.Poll(p.b).empty());
  // To the new one: received.
  abi::AddressVector av{};
  av.port_num = 1;
  av.dlid = 0x40;
  uint32_t ah = 0;
  ASSERT_EQ(p.a.hca.CreateAh(p.a.pd, av, &ah), abi::Status::SUCCESS);
  abi::SendWorkRequest wr = p.Send(0, 8);
  wr.av.value = ah;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, wr), abi::Status::SUCCESS);
  p.cable.Pump();
  const auto wcs = p.Poll(p.b);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(wcs[0].slid, 1);
}

TEST(SmaState, DataPacketsFlowOnlyOnceTheSmActivatesThePort) {
  testing::UdPair p;
  ASSERT_EQ(Process(p.b.hca, 1, SetPortInfoOf(p.b.hca, 2, 1)).status(), 0);  // Down → Init
  EXPECT_EQ(p.b.hca.port(1).LinkState(), 2);
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 200)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.counters(1).recv_drop(RecvDrop::kPortNotActive), 1u);
  // Init ports send no data either: b's packet is discarded at its port.
  abi::AddressVector av{};
  av.port_num = 1;
  av.dlid = 1;
  uint32_t ah = 0;
  ASSERT_EQ(p.b.hca.CreateAh(p.b.pd, av, &ah), abi::Status::SUCCESS);
  abi::SendWorkRequest back{};
  back.wr_type = abi::WrType::SEND;
  back.num_sge = 1;
  back.sge[0] = {p.b.addr(), 8, p.b.key};
  back.av.value = ah;
  back.remote_qpn = p.a.qpn;
  back.remote_qkey = testing::kQkey;
  const uint64_t discards = p.b.hca.counters(1).xmit_discards;
  ASSERT_EQ(p.b.hca.PostSend(p.b.qpn, back), abi::Status::SUCCESS);
  EXPECT_EQ(p.b.hca.counters(1).xmit_discards, discards + 1);

  ASSERT_EQ(Process(p.b.hca, 1, SetPortInfoOf(p.b.hca, 2, 3)).status(), 0);  // Armed
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  EXPECT_EQ(p.b.hca.counters(1).recv_drop(RecvDrop::kPortNotActive), 2u);
  EXPECT_TRUE(p.Poll(p.b).size() <= 1u);  // at most b's own send completion

  ASSERT_EQ(Process(p.b.hca, 1, SetPortInfoOf(p.b.hca, 2, 4)).status(), 0);  // Active
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 8)), abi::Status::SUCCESS);
  p.cable.Pump();
  const auto wcs = p.Poll(p.b);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].opcode, abi::WcOpcode::RECV);
}

// ---- M_Key ---------------------------------------------------------------------------------

constexpr uint64_t kKey = 0x1122334455667788ull;

void Protect(PortUnderSm& s, uint8_t bits, uint16_t lease) {
  MadBytes set = s.Current();
  PutBe(set, 64, kKey, 8);
  PutBe(set, 64 + kLeaseAt, lease, 2);
  set[64 + kProtectLmcAt] = static_cast<uint8_t>(bits << 6);
  ASSERT_EQ(Process(s.hca, 1, set).status(), 0);
  s.mkey = kKey;
}

TEST(SmaMKey, ProtectBitsDecideWhatAWrongKeyMayDo) {
  PortUnderSm s;
  Protect(s, 1, 0);
  // Right key: everything, the key visible.
  auto c = Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, kKey));
  EXPECT_EQ(GetBe(c.response, 64, 8), kKey);
  // Wrong key, protect 1: Get answered with M_Key read as 0; Set not answered.
  c = Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, 0x99));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(GetBe(c.response, 64, 8), 0u);
  EXPECT_EQ(c.data()[kProtectLmcAt] >> 6, 1);
  MadBytes set = s.Current();
  PutBe(set, 24, 0x99, 8);
  PutBe(set, 64 + kLidAt, 0x77, 2);
  EXPECT_EQ(Process(s.hca, 1, set).result, LocalMadResult::kNoReply);
  EXPECT_EQ(s.hca.port(1).lid, 0);
  EXPECT_EQ(
      GetBe(Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, kKey)).response, 64 + kMKeyViolAt, 2),
      1u);
  // Protect 2: a wrong-key Get is not answered either (directed route alike).
  Protect(s, 2, 0);
  EXPECT_EQ(Process(s.hca, 1, Mad(0x01, kGet, 0x0011, 0, 0x99)).result, LocalMadResult::kNoReply);
  EXPECT_EQ(Process(s.hca, 1, Mad(0x81, kGet, 0x0011, 0, 0x99)).result, LocalMadResult::kNoReply);
  EXPECT_EQ(s.hca.port(1).mkey_violations, 3u);
  EXPECT_EQ(Process(s.hca, 1, Mad(0x81, kGet, 0x0011, 0, kKey)).result, LocalMadResult::kReply);
}

TEST(SmaMKey, TheLeasePeriodReopensThePort) {
  PortUnderSm s;
  Protect(s, 3, 10);
  s.hca.SetNow(5'000'000'000ull);
  EXPECT_EQ(Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, 1)).result, LocalMadResult::kNoReply);
  s.hca.SetNow(14'000'000'000ull);
  EXPECT_EQ(Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, 1)).result, LocalMadResult::kNoReply);
  s.hca.SetNow(15'000'000'000ull);  // 10 s after the first violation
  const auto c = Process(s.hca, 1, Mad(0x01, kGet, kPortInfo, 0, 1));
  ASSERT_EQ(c.result, LocalMadResult::kReply);
  EXPECT_EQ(c.data()[kProtectLmcAt] >> 6, 0);
  EXPECT_EQ(GetBe(c.response, 64, 8), kKey);  // protect 0: the key is not hidden
}

}  // namespace
}  // namespace softib::hca

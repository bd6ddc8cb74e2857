// The in-process fabric: forwarding through programmed switches, drops where nothing is
// programmed or a port is not Active, cable flaps, faults that replay by seed, capture.
#include "softib/fabric/fabric.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "fabric_fixture.h"
#include "hca/device/packet.h"
#include "softib/mad/mad_common.h"
#include "softib/mad/mad_sm.h"
#include "softib/wire/capture_file.h"
#include "softib/wire/ib_crc.h"

namespace softib::fabric {
// static_subnet.h's SMA access (its other helpers would clash with the fixture's).
uint16_t SmaSetOrGet(Switch& sw, uint8_t method, uint16_t attribute, uint32_t modifier,
                     std::array<uint8_t, 64>* data);
namespace {

using K = CableEnd::Kind;
using testing::ActivatePorts;
using testing::ProgramLft;
using testing::UdPacket;

class TwoSwitches : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint64_t i = 0; i < 2; ++i) {
      SwitchConfig config;
      config.node_guid = 0x0002c90300002000ull + i;
      config.num_ports = 4;
      fabric_.AddSwitch(config);
    }
    for (int i = 0; i < 2; ++i) {
      port_[i] = fabric_.AddCaPort([this, i](std::span<const uint8_t> p) {
        received_[i].emplace_back(p.begin(), p.end());
        arrived_from_[i] = p.data();
      });
    }
    cable_[0] = fabric_.Connect({K::kCaPort, port_[0], 0}, {K::kSwitch, 0, 1});
    cable_[1] = fabric_.Connect({K::kSwitch, 0, 3}, {K::kSwitch, 1, 3});
    cable_[2] = fabric_.Connect({K::kSwitch, 1, 1}, {K::kCaPort, port_[1], 0});
  }
  void Program() {
    ProgramLft(fabric_.switch_at(0), {{1, 1}, {2, 3}});
    ProgramLft(fabric_.switch_at(1), {{1, 3}, {2, 1}});
    ActivatePorts(fabric_.switch_at(0));
    ActivatePorts(fabric_.switch_at(1));
  }
  void SendFrom(int side, std::vector<uint8_t> packet) {
    (void)fabric_.ca_link(port_[side]).Transmit(std::move(packet));
    fabric_.Pump();
  }

  Fabric fabric_{7};
  uint32_t port_[2] = {}, cable_[3] = {};
  std::vector<std::vector<uint8_t>> received_[2];
  const uint8_t* arrived_from_[2] = {};  // the buffer the last delivery came in
};

TEST_F(TwoSwitches, PacketsCrossBothSwitchesByTheirLftsUnchanged) {
  Program();
  const std::vector<uint8_t> packet = UdPacket(1, 2, 0xAB);
  SendFrom(0, packet);
  ASSERT_EQ(received_[1].size(), 1u);
  EXPECT_EQ(received_[1][0], packet);  // switches pass data packets on byte for byte
  SendFrom(1, UdPacket(2, 1, 0xCD));
  EXPECT_EQ(received_[0].size(), 1u);
  EXPECT_EQ(fabric_.switch_at(0).counters(1).xmit_packets, 1u);
  EXPECT_EQ(fabric_.switch_at(1).counters(1).rcv_packets, 1u);
}

TEST_F(TwoSwitches, UnicastPacketsCrossBothSwitchesInTheBufferTheSenderFilled) {
  Program();
  std::vector<uint8_t> packet = UdPacket(1, 2, 0x5C);
  const std::vector<uint8_t> expected = packet;
  const uint8_t* buffer = packet.data();
  SendFrom(0, std::move(packet));
  ASSERT_EQ(received_[1].size(), 1u);
  EXPECT_EQ(received_[1][0], expected);
  // Forwarded by reference: no switch copied it into a buffer of its own.
  EXPECT_EQ(arrived_from_[1], buffer);
  EXPECT_EQ(fabric_.switch_at(0).counters(3).xmit_packets, 1u);
  EXPECT_EQ(fabric_.switch_at(1).counters(1).xmit_packets, 1u);
}

TEST_F(TwoSwitches, UnprogrammedLidsAndInactivePortsDropAndCount) {
  SendFrom(0, UdPacket(1, 2, 1));  // ports Init, nothing programmed
  EXPECT_TRUE(received_[1].empty());
  EXPECT_EQ(fabric_.switch_at(0).drops(SwitchDrop::kIngressNotActive), 1u);
  Program();
  SendFrom(0, UdPacket(1, 9, 1));  // LID 9: above LinearFDBTop
  EXPECT_TRUE(received_[1].empty());
  EXPECT_EQ(fabric_.switch_at(0).drops(SwitchDrop::kUnprogrammedLid), 1u);
  EXPECT_EQ(fabric_.switch_at(0).counters(1).rcv_switch_relay_errors, 1u);
}

TEST_F(TwoSwitches, AFlapLosesWhatIsInFlightAndLeavesThePortsForTheSmToActivate) {
  Program();
  (void)fabric_.ca_link(port_[0]).Transmit(UdPacket(1, 2, 3));
  bool ca_up = true;
  fabric_.AddCaPort({}, [&](bool up) { ca_up = up; });
  fabric_.SetCableUp(cable_[0], false);  // with the packet still on the cable
  fabric_.Pump();
  EXPECT_TRUE(received_[1].empty());
  EXPECT_EQ(fabric_.counters(cable_[0], 0).dropped_down, 1u);
  EXPECT_EQ(fabric_.switch_at(0).port_info(1).PortState,
            static_cast<uint8_t>(mad::PortState::DOWN));
  SendFrom(0, UdPacket(1, 2, 3));  // into a dead cable
  EXPECT_EQ(fabric_.counters(cable_[0], 0).dropped_down, 2u);
  fabric_.SetCableUp(cable_[0], true);
  EXPECT_EQ(fabric_.switch_at(0).port_info(1).PortState,
            static_cast<uint8_t>(mad::PortState::INIT));
  SendFrom(0, UdPacket(1, 2, 3));  // Init: the switch takes no data from it yet
  EXPECT_TRUE(received_[1].empty());
  ActivatePorts(fabric_.switch_at(0));
  SendFrom(0, UdPacket(1, 2, 3));
  EXPECT_EQ(received_[1].size(), 1u);
}

// A flap behind switch 1 (LID 5) reaches the SM (CA port 0, LID 1) as Trap 128, relayed
// through switch 0, and is repeated on the fabric's clock until the SM represses it.
TEST_F(TwoSwitches, AFlapSendsTrap128ToTheSmUntilRepressed) {
  Program();
  Switch& sw = fabric_.switch_at(1);
  std::array<uint8_t, 64> data{};
  ASSERT_EQ(SmaSetOrGet(sw, 0x01, mad::PortInfo::kAttributeId, 0, &data), 0);
  mad::PortInfo pi;
  pi.Unpack(data);
  pi.LID = 5;
  pi.MasterSMLID = 1;
  pi.SubnetTimeOut = 8;  // 4.096 us * 256 ~ 1 ms
  pi.PortState = pi.PortPhysicalState = pi.LinkWidthEnabled = pi.LinkSpeedEnabled = 0;
  pi.Pack(data);
  ASSERT_EQ(SmaSetOrGet(sw, 0x02, mad::PortInfo::kAttributeId, 0, &data), 0);
  ASSERT_EQ(SmaSetOrGet(sw, 0x01, mad::SwitchInfo::kAttributeId, 0, &data), 0);
  data[11] |= 0x04;  // clear PortStateChange (the cabling of the set-up)
  ASSERT_EQ(SmaSetOrGet(sw, 0x02, mad::SwitchInfo::kAttributeId, 0, &data), 0);
  EXPECT_EQ(fabric_.next_due(), UINT64_MAX) << "nothing outstanding, nothing due";

  fabric_.AdvanceTo(1'000'000);
  fabric_.SetCableUp(cable_[2], false);
  fabric_.Pump();
  ASSERT_EQ(received_[0].size(), 1u);
  const std::vector<uint8_t> trap = received_[0][0];
  const auto mad = std::span(trap).subspan(28, 256);
  EXPECT_EQ(mad[3], 0x05);                                   // Trap
  EXPECT_EQ(mad[64 + 4] << 8 | mad[64 + 5], 128);            // TrapNumber
  EXPECT_EQ(trap[6] << 8 | trap[7], 5) << "SLID: switch 1";  // from its LID
  EXPECT_EQ(fabric_.next_due(), 1'000'000u + 1'048'576u);
  fabric_.AdvanceTo(fabric_.next_due());
  fabric_.Pump();
  ASSERT_EQ(received_[1].size(), 0u);
  ASSERT_EQ(received_[0].size(), 2u);
  EXPECT_EQ(received_[0][1], trap) << "the same notice again";

  // The SM's TrapRepress (LID-routed back to switch 1, same TID) ends the repeats.
  std::array<uint8_t, 256> repress;
  std::copy(mad.begin(), mad.end(), repress.begin());
  repress[3] = 0x07;
  EXPECT_FALSE(sw.HandleSmp(repress, 3).has_value());
  EXPECT_EQ(fabric_.next_due(), UINT64_MAX);
  fabric_.AdvanceTo(100'000'000);
  fabric_.Pump();
  EXPECT_EQ(received_[0].size(), 2u);
}

TEST_F(TwoSwitches, ACorruptedPacketFailsItsCrcCheckAtTheReceiver) {
  Program();
  LinkFaults faults;
  faults.corrupt = 1000;  // every packet on the middle cable gets a byte flipped
  fabric_.SetFaults(cable_[1], 0, faults);
  SendFrom(0, UdPacket(1, 2, 5));
  EXPECT_EQ(fabric_.counters(cable_[1], 0).corrupted, 1u);
  // The second switch forwards data without checking its CRCs (cut-through), so the
  // corrupted packet may reach the CA; its ICRC/VCRC no longer match.
  for (const auto& p : received_[1]) {
    hca::ParsedPacket parsed;
    EXPECT_NE(hca::ParsePacket(p, &parsed), hca::DropReason::kNone);
  }
}

TEST(FabricFaults, TheSameSeedGivesTheSameLossesAndReorders) {
  auto counts = [](uint32_t seed) {
    Fabric fabric(seed);
    std::vector<uint8_t> got;
    const uint32_t a = fabric.AddCaPort({});
    const uint32_t b = fabric.AddCaPort([&](std::span<const uint8_t> p) { got.push_back(p[0]); });
    const uint32_t cable = fabric.Connect({K::kCaPort, a, 0}, {K::kCaPort, b, 0});
    LinkFaults faults;
    faults.loss = 200;
    faults.reorder = 300;
    faults.duplicate = 100;
    fabric.SetFaults(cable, 0, faults);
    for (uint8_t i = 0; i < 200; ++i) (void)fabric.ca_link(a).Transmit({i, 0, 0, 0});
    fabric.Pump();
    return got;
  };
  const std::vector<uint8_t> first = counts(99);
  EXPECT_EQ(first, counts(99));
  EXPECT_NE(first, counts(100));
  EXPECT_LT(first.size(), 200u + 40u);
  EXPECT_FALSE(std::is_sorted(first.begin(), first.end()));
}

TEST(FabricDelay, PacketsWaitOutTheCablesDelay) {
  Fabric fabric(1);
  int got = 0;
  const uint32_t a = fabric.AddCaPort({});
  const uint32_t b = fabric.AddCaPort([&](std::span<const uint8_t>) { ++got; });
  const uint32_t cable = fabric.Connect({K::kCaPort, a, 0}, {K::kCaPort, b, 0});
  LinkFaults faults;
  faults.delay_ns = 5000;
  fabric.SetFaults(cable, 0, faults);
  (void)fabric.ca_link(a).Transmit({1, 2, 3, 4});
  EXPECT_EQ(fabric.Pump(), 0u);
  fabric.AdvanceTo(4999);
  EXPECT_EQ(fabric.Pump(), 0u);
  fabric.AdvanceTo(5000);
  EXPECT_EQ(fabric.Pump(), 1u);
  EXPECT_EQ(got, 1);
}

// ERF time (32.32 fixed-point seconds) as nanoseconds since the Unix epoch.
uint64_t ErfToUnixNs(uint64_t erf) {
  return (erf >> 32) * 1'000'000'000u + (((erf & 0xFFFFFFFFu) * 1'000'000'000u) >> 32);
}

uint64_t WallClockNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

TEST_F(TwoSwitches, ACaptureOfACableIsAnErfFileOfItsPacketsAtWallClockTime) {
  Program();
  fabric_.StartCapture(cable_[1]);
  // The fabric's own clock is whatever its host drives (here 1.5 s): not what a capture shows.
  fabric_.AdvanceTo(1'500'000'000);
  const uint64_t before_ns = WallClockNs();
  SendFrom(0, UdPacket(1, 2, 0x11));
  // A batch: three packets queued, then delivered by one Pump at one fabric instant.
  for (uint8_t i = 0; i < 3; ++i)
    (void)fabric_.ca_link(port_[1]).Transmit(UdPacket(2, 1, static_cast<uint8_t>(0x22 + i)));
  fabric_.Pump();
  ASSERT_EQ(received_[0].size(), 3u);
  const uint64_t after_ns = WallClockNs();
  char dir[] = "/tmp/softib-fabric-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/middle.erf";
  ASSERT_EQ(fabric_.WriteCapture(cable_[1], path), "");
  std::vector<uint8_t> file;
  ASSERT_EQ(capture::ReadFile(path, &file), "");
  std::vector<capture::CapturedPacket> packets;
  ASSERT_EQ(capture::ParseErf(file, &packets), "");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(packets.size(), 4u);
  EXPECT_EQ(packets[0].bytes, UdPacket(1, 2, 0x11));
  for (uint8_t i = 0; i < 3; ++i)
    EXPECT_EQ(packets[1 + i].bytes, UdPacket(2, 1, static_cast<uint8_t>(0x22 + i)));
  // Wall-clock time: between the reads of the clock around the sends (to the ERF fraction's
  // resolution, and a nanosecond per packet of a batch), so within seconds of the time of day.
  for (const capture::CapturedPacket& p : packets) {
    EXPECT_GE(ErfToUnixNs(p.timestamp) + 1, before_ns);
    EXPECT_LE(ErfToUnixNs(p.timestamp), after_ns + packets.size());
  }
  // Strictly increasing, the three of one batch included.
  for (std::size_t i = 1; i < packets.size(); ++i)
    EXPECT_GT(packets[i].timestamp, packets[i - 1].timestamp) << i;
}

// The CRC offload across the fabric (hca/device/packet.h): a CA's unsealed packet crosses
// switches unsealed and reaches an owning CA port so, in the buffer it was sent in; it is
// sealed wherever it can be observed (a capture, a fault injector) and before a CA port
// that takes sealed packets only.
class UnsealedAcrossTwoSwitches : public TwoSwitches {
 protected:
  void SetUp() override {
    TwoSwitches::SetUp();
    // A third CA, behind switch 1's port 2 (LID 3), that takes buffers and unsealed packets.
    owning_ = fabric_.AddOwningCaPort([this](std::vector<uint8_t>&& p, bool sealed) {
      arrived_from_owning_ = p.data();
      owned_.emplace_back(std::move(p), sealed);
    });
    cable_owning_ = fabric_.Connect({K::kSwitch, 1, 2}, {K::kCaPort, owning_, 0});
    ProgramLft(fabric_.switch_at(0), {{1, 1}, {2, 3}, {3, 3}});
    ProgramLft(fabric_.switch_at(1), {{1, 3}, {2, 1}, {3, 2}});
    ActivatePorts(fabric_.switch_at(0));
    ActivatePorts(fabric_.switch_at(1));
  }
  static std::vector<uint8_t> Unsealed(std::vector<uint8_t> packet) {
    std::fill(packet.end() - 6, packet.end(), 0);  // ICRC and VCRC never computed
    return packet;
  }
  static bool CrcsValid(std::span<const uint8_t> packet) {
    const ibcrc::CrcCheck check = ibcrc::CheckCrcs(packet);
    return check.well_formed && check.has_icrc && check.icrc_ok() && check.vcrc_ok();
  }

  uint32_t owning_ = 0, cable_owning_ = 0;
  std::vector<std::pair<std::vector<uint8_t>, bool>> owned_;  // bytes, sealed
  const uint8_t* arrived_from_owning_ = nullptr;
};

TEST_F(UnsealedAcrossTwoSwitches, AnOwningPortGetsItUnsealedInTheSendersBuffer) {
  std::vector<uint8_t> packet = Unsealed(UdPacket(1, 3, 0x31));
  const std::vector<uint8_t> sent = packet;
  const uint8_t* buffer = packet.data();
  (void)fabric_.ca_link(port_[0]).TransmitUnsealed(std::move(packet));
  fabric_.Pump();
  ASSERT_EQ(owned_.size(), 1u);
  EXPECT_FALSE(owned_[0].second);
  EXPECT_EQ(owned_[0].first, sent);  // no CRC computed anywhere on the way
  EXPECT_EQ(arrived_from_owning_, buffer);
  // A sealed packet arrives sealed, as it was.
  (void)fabric_.ca_link(port_[0]).Transmit(UdPacket(1, 3, 0x32));
  fabric_.Pump();
  ASSERT_EQ(owned_.size(), 2u);
  EXPECT_TRUE(owned_[1].second);
  EXPECT_EQ(owned_[1].first, UdPacket(1, 3, 0x32));
}

TEST_F(UnsealedAcrossTwoSwitches, APlainPortACaptureAndAFaultSeeExactCrcs) {
  // A CA port that takes sealed packets only gets the exact bytes.
  (void)fabric_.ca_link(owning_).TransmitUnsealed(Unsealed(UdPacket(3, 1, 0x41)));
  fabric_.Pump();
  ASSERT_EQ(received_[0].size(), 1u);
  EXPECT_EQ(received_[0][0], UdPacket(3, 1, 0x41));
  // A capture on the cable between the switches records exact packets.
  fabric_.StartCapture(cable_[1]);
  (void)fabric_.ca_link(port_[0]).TransmitUnsealed(Unsealed(UdPacket(1, 3, 0x42)));
  fabric_.Pump();
  char dir[] = "/tmp/softib-fabric-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/middle.erf";
  ASSERT_EQ(fabric_.WriteCapture(cable_[1], path), "");
  std::vector<uint8_t> file;
  ASSERT_EQ(capture::ReadFile(path, &file), "");
  std::vector<capture::CapturedPacket> packets;
  ASSERT_EQ(capture::ParseErf(file, &packets), "");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(packets.size(), 1u);
  EXPECT_EQ(packets[0].bytes, UdPacket(1, 3, 0x42));
  EXPECT_TRUE(CrcsValid(packets[0].bytes));
  ASSERT_EQ(owned_.size(), 1u);
  EXPECT_TRUE(owned_[0].second);  // sealed where it was observed, and checked at the CA
  EXPECT_TRUE(CrcsValid(owned_[0].first));
  fabric_.StopCapture(cable_[1]);
  // A corrupting fault acts on the sealed packet: the receiver sees sealed bytes whose
  // CRCs fail (the HCA counts kBadVcrc/kBadIcrc), never an unsealed packet it would accept.
  LinkFaults corrupt;
  corrupt.corrupt = 1000;
  fabric_.SetFaults(cable_owning_, -1, corrupt);
  (void)fabric_.ca_link(port_[0]).TransmitUnsealed(Unsealed(UdPacket(1, 3, 0x43)));
  fabric_.Pump();
  ASSERT_EQ(owned_.size(), 2u);
  EXPECT_TRUE(owned_[1].second);
  EXPECT_FALSE(CrcsValid(owned_[1].first));
  EXPECT_EQ(fabric_.counters(cable_owning_, 0).corrupted, 1u);
}

}  // namespace
}  // namespace softib::fabric

// CRC offload (packet.h, cable.h): unsealed packets have the exact bytes of sealed ones but
// for their CRCs; links that someone can observe seal them; a receiver checks the CRCs of
// every sealed packet and skips only those of packets that came unsealed; SetForceCrcs (the
// SOFTIB_FORCE_CRC run option) seals everything.
#include <gtest/gtest.h>

#include <deque>
#include <utility>

#include "hca/device/packet.h"
#include "hca/device/tests/rc_fixture.h"
#include "softib/wire/ib_crc.h"

namespace softib::hca {
namespace {

using abi::WcStatus;
using abi::WrType;
using testing::Fill;
using testing::Matches;
using testing::RcOptions;
using testing::RcPair;
using wire::BthOpcode;

constexpr uint8_t Op(BthOpcode op) { return static_cast<uint8_t>(op); }

PacketHeaders WriteFirstHeaders(bool global) {
  PacketHeaders hdr;
  hdr.lrh.VL = 0;
  hdr.lrh.DLID = 0x0022;
  hdr.lrh.SLID = 0x0011;
  if (global) {
    hdr.grh.emplace();
    hdr.grh->HopLmt = 64;
    hdr.grh->SGID[15] = 1;
    hdr.grh->DGID[15] = 2;
  }
  hdr.bth.OpCode = Op(BthOpcode::RC_RDMA_WRITE_FIRST);
  hdr.bth.P_Key = 0xFFFF;
  hdr.bth.DestQP = 0x12;
  hdr.bth.PSN = 0x345;
  hdr.reth.VA = 0x1000;
  hdr.reth.R_Key = 0x4242;
  hdr.reth.DMALen = 8192;
  return hdr;
}

std::vector<uint8_t> Payload(std::size_t n) {
  std::vector<uint8_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 13 + 5);
  return p;
}

// Restores the process's force setting at the end of a test.
class ForceCrcsGuard {
 public:
  explicit ForceCrcsGuard(bool force) : before_(ForceCrcs()) { SetForceCrcs(force); }
  ~ForceCrcsGuard() { SetForceCrcs(before_); }

 private:
  bool before_;
};

TEST(CrcOffload, SealingAnUnsealedPacketGivesTheBytesOfBuildPacket) {
  for (const bool global : {false, true}) {
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{1023}, std::size_t{4096}}) {
      const std::vector<uint8_t> payload = Payload(n);
      const std::vector<uint8_t> sealed = BuildPacket(WriteFirstHeaders(global), payload);
      std::vector<uint8_t> unsealed = BuildUnsealedPacket(WriteFirstHeaders(global), payload, {});
      ASSERT_EQ(unsealed.size(), sealed.size()) << global << " " << n;
      // Everything but the 6 CRC bytes is already there; the CRC slots are zero.
      const std::size_t crcs = sealed.size() - 6;
      EXPECT_TRUE(std::equal(sealed.begin(), sealed.begin() + crcs, unsealed.begin()));
      EXPECT_EQ(std::vector<uint8_t>(unsealed.begin() + crcs, unsealed.end()),
                std::vector<uint8_t>(6, 0));
      const uint8_t* before = unsealed.data();
      SealPacket(unsealed);
      EXPECT_EQ(unsealed, sealed);
      EXPECT_EQ(unsealed.data(), before);  // sealed in place, nothing reallocated
      const ibcrc::CrcCheck check = ibcrc::CheckCrcs(unsealed);
      EXPECT_TRUE(check.well_formed && check.has_icrc && check.icrc_ok() && check.vcrc_ok());
    }
  }
}

TEST(CrcOffload, AnUnsealedPacketParsesOnlyWhenSaidToBeUnsealed) {
  const std::vector<uint8_t> payload = Payload(300);
  const std::vector<uint8_t> unsealed = BuildUnsealedPacket(WriteFirstHeaders(true), payload, {});
  ParsedPacket parsed;
  // Its zero CRCs fail the check of a sealed packet: the VCRC first.
  EXPECT_EQ(ParsePacket(unsealed, &parsed), DropReason::kBadVcrc);
  ASSERT_EQ(ParsePacket(unsealed, &parsed, /*sealed=*/false), DropReason::kNone);
  EXPECT_EQ(parsed.hdr.bth.OpCode, Op(BthOpcode::RC_RDMA_WRITE_FIRST));
  EXPECT_EQ(parsed.hdr.bth.PSN, 0x345u);
  EXPECT_EQ(parsed.hdr.reth.R_Key, 0x4242u);
  ASSERT_TRUE(parsed.hdr.grh.has_value());
  EXPECT_EQ(parsed.hdr.grh->HopLmt, 64);
  EXPECT_EQ(std::vector<uint8_t>(parsed.payload.begin(), parsed.payload.end()), payload);
  // Every other check still runs on an unsealed packet.
  std::vector<uint8_t> bad_lver = unsealed;
  bad_lver[0] |= 0x01;  // LRH:LVer
  EXPECT_EQ(ParsePacket(bad_lver, &parsed, false), DropReason::kBadLver);
  std::vector<uint8_t> short_packet(unsealed.begin(), unsealed.begin() + 20);
  EXPECT_NE(ParsePacket(short_packet, &parsed, false), DropReason::kNone);
}

// A link that records what the HCA hands it: only Transmit is overridden, so unsealed
// packets reach it through Link's default TransmitUnsealed (an observable link).
class RecordingLink final : public Link {
 public:
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    packets.push_back(std::move(packet));
    return {};
  }
  std::vector<std::vector<uint8_t>> packets;
};

// A link that takes unsealed packets, as an in-daemon cable does, and says how each came.
class UnsealedLink final : public Link {
 public:
  std::vector<uint8_t> Transmit(std::vector<uint8_t> packet) override {
    queue.emplace_back(std::move(packet), true);
    return {};
  }
  std::vector<uint8_t> TransmitUnsealed(std::vector<uint8_t> packet) override {
    queue.emplace_back(std::move(packet), false);
    return {};
  }
  std::deque<std::pair<std::vector<uint8_t>, bool>> queue;  // bytes, sealed
};

// The two ends of a cable of UnsealedLinks between the HCAs of an RcPair.
struct UnsealedCable {
  explicit UnsealedCable(RcPair& p) : pair(p) {
    p.a.hca.port(1).link = &to_b;
    p.b.hca.port(1).link = &to_a;
  }
  // Delivers until both directions are empty; `observe` sees (from a, bytes, sealed) first.
  template <typename Observe>
  void Pump(Observe observe) {
    while (!to_a.queue.empty() || !to_b.queue.empty()) {
      for (UnsealedLink* link : {&to_b, &to_a}) {
        if (link->queue.empty()) continue;
        auto [bytes, sealed] = std::move(link->queue.front());
        link->queue.pop_front();
        const bool from_a = link == &to_b;
        observe(from_a, bytes, sealed);
        (from_a ? pair.b : pair.a).hca.Receive(1, bytes, sealed);
      }
    }
  }
  RcPair& pair;
  UnsealedLink to_b, to_a;
};

TEST(CrcOffload, AnObservableLinkGetsSealedPacketsWithValidCrcs) {
  ForceCrcsGuard offload(false);
  RcPair p;
  // Every packet on the fixture's BackToBackCable (it has a tap: a capture) is sealed.
  uint32_t seen = 0, valid = 0;
  p.cable.SetTap([&](int, std::span<const uint8_t> bytes) {
    ++seen;
    const ibcrc::CrcCheck check = ibcrc::CheckCrcs(bytes);
    if (check.well_formed && check.has_icrc && check.icrc_ok() && check.vcrc_ok()) ++valid;
  });
  Fill(p.a.buffer, 0, 10000, 4);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 10000, 64)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_TRUE(Matches(p.b.buffer, 64, 10000, 4));
  EXPECT_EQ(seen, 11u);  // 10 packets of MTU 1024 and the ACK
  EXPECT_EQ(valid, seen);

  // A link overriding only Transmit gets sealed packets too.
  RecordingLink recorder;
  p.a.hca.port(1).link = &recorder;
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 3000, 0)), abi::Status::SUCCESS);
  ASSERT_EQ(recorder.packets.size(), 3u);
  for (const auto& packet : recorder.packets) {
    const ibcrc::CrcCheck check = ibcrc::CheckCrcs(packet);
    EXPECT_TRUE(check.icrc_ok() && check.vcrc_ok());
  }
}

TEST(CrcOffload, AnInDaemonLinkCarriesUnsealedPacketsAndTheReceiverAcceptsThem) {
  ForceCrcsGuard offload(false);
  RcPair p;
  UnsealedCable cable(p);
  Fill(p.a.buffer, 0, 10000, 5);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 10000, 128)),
            abi::Status::SUCCESS);
  uint32_t unsealed = 0, sealed = 0;
  cable.Pump([&](bool, const std::vector<uint8_t>& bytes, bool is_sealed) {
    ++(is_sealed ? sealed : unsealed);
    // The CRC bytes of an unsealed packet were never computed.
    if (!is_sealed) {
      EXPECT_EQ(ibcrc::LoadLe16(&bytes[bytes.size() - 2]), 0u);
    }
  });
  EXPECT_EQ(unsealed, 11u);  // the 10 request packets and the ACK
  EXPECT_EQ(sealed, 0u);
  EXPECT_TRUE(Matches(p.b.buffer, 128, 10000, 5));
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
  EXPECT_EQ(p.b.hca.port(1).counters.rcv_errors, 0u);
}

TEST(CrcOffload, ForcedModeSealsEveryPacketAndTheReceiverChecksIt) {
  ForceCrcsGuard forced(true);
  RcPair p;
  UnsealedCable cable(p);
  Fill(p.a.buffer, 0, 5000, 6);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 5000, 0)), abi::Status::SUCCESS);
  uint32_t sealed = 0, valid = 0, packets = 0;
  cable.Pump([&](bool from_a, std::vector<uint8_t>& bytes, bool is_sealed) {
    ++packets;
    if (!is_sealed) return;
    ++sealed;
    const ibcrc::CrcCheck check = ibcrc::CheckCrcs(bytes);
    if (check.icrc_ok() && check.vcrc_ok()) ++valid;
    // The third request packet is corrupted on the way: the receiver must see it.
    if (from_a && packets == 3) bytes[bytes.size() - 20] ^= 0x40;
  });
  EXPECT_EQ(sealed, packets);
  EXPECT_EQ(valid, packets);
  // The corrupted packet was dropped as a VCRC error; the rest of the message then finds a
  // PSN gap (a NAK), and the requester's retransmission completes it.
  EXPECT_EQ(p.b.hca.port(1).counters.parse_drops[static_cast<std::size_t>(DropReason::kBadVcrc)],
            1u);
  for (int i = 0; i < 50 && !p.a.qp().rc.req.wqes.empty(); ++i) {
    p.Advance(1'000'000);
    cable.Pump([](bool, std::vector<uint8_t>&, bool) {});
  }
  EXPECT_TRUE(Matches(p.b.buffer, 0, 5000, 6));
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
}

TEST(CrcOffload, AReceiverChecksTheIcrcOfEverySealedPacket) {
  ForceCrcsGuard offload(false);
  RcPair p;
  UnsealedCable cable(p);
  Fill(p.a.buffer, 0, 2048, 7);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 2048, 0)), abi::Status::SUCCESS);
  // Seals the first request packet with a payload byte changed after the ICRC was computed
  // and the VCRC recomputed over it: only the end-to-end CRC can tell.
  ASSERT_FALSE(cable.to_b.queue.empty());
  auto& [first, sealed] = cable.to_b.queue.front();
  SealPacket(first);
  first[first.size() - 10] ^= 0x01;
  first.resize(first.size() - 2);
  const uint16_t vcrc = ibcrc::ComputeVcrc(first);
  first.push_back(static_cast<uint8_t>(vcrc));
  first.push_back(static_cast<uint8_t>(vcrc >> 8));
  sealed = true;
  cable.Pump([](bool, std::vector<uint8_t>&, bool) {});
  EXPECT_EQ(p.b.hca.port(1).counters.parse_drops[static_cast<std::size_t>(DropReason::kBadIcrc)],
            1u);
  EXPECT_EQ(p.b.hca.port(1).counters.parse_drops[static_cast<std::size_t>(DropReason::kBadVcrc)],
            0u);
  // The dropped packet is sent again (the next one's PSN gap NAKs); the write completes
  // with the right bytes.
  for (int i = 0; i < 50 && !p.a.qp().rc.req.wqes.empty(); ++i) {
    p.Advance(1'000'000);
    cable.Pump([](bool, std::vector<uint8_t>&, bool) {});
  }
  EXPECT_TRUE(Matches(p.b.buffer, 0, 2048, 7));
  const auto done = p.Poll(p.a);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::SUCCESS);
}

}  // namespace
}  // namespace softib::hca

// UD sends through a user process's send ring: the entry names its address by the
// process's AV handle (the user ABI), which the AL binds to the CA's AH in the AV's PD
// (a CiBindAhHandle IRP); the CA translates it through the sending QP's PD. A handle
// that names nothing there (never bound, destroyed, another PD's) completes the request
// LOCAL_QP_OP_ERR and takes the QP to Error; nothing else is harmed.
#include <endian.h>

#include "ring_fixture.h"

namespace softib::hca::testing {
namespace {

using abi::WcOpcode;
using abi::WcStatus;

constexpr uint32_t kQkey = 0x11223344;
constexpr uint32_t kGrh = 40;  // a UD receive buffer starts with the GRH's room (IBA 11.4.1.2)
// What a user file's handle looks like: a type/generation in the high bits, an index low.
constexpr uint64_t kHandle = 0x0007'0003'0000'0005ull;

class UdRingFixture : public RingFixture {
 protected:
  // Both sides' UD QPs made, their rings mapped, and brought to RTS.
  void BringUp() {
    for (Side& s : sides_) {
      MakeQp(s, 32, 16, abi::QpType::UD);
      MapRings(s);
      abi::QpModifyAttributes init{};
      init.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::PKEY_INDEX | abi::QpAttrMask::PORT |
                  abi::QpAttrMask::QKEY;
      init.state = abi::QpState::INIT;
      init.port_num = 1;
      init.qkey = htobe32(kQkey);
      ASSERT_EQ(Modify(s, init), Status::SUCCESS);
      abi::QpModifyAttributes rtr{};
      rtr.mask = abi::QpAttrMask::STATE;
      rtr.state = abi::QpState::RTR;
      ASSERT_EQ(Modify(s, rtr), Status::SUCCESS);
      abi::QpModifyAttributes rts{};
      rts.mask = abi::QpAttrMask::STATE | abi::QpAttrMask::SQ_PSN;
      rts.state = abi::QpState::RTS;
      ASSERT_EQ(Modify(s, rts), Status::SUCCESS);
    }
  }
  // An AH in `pd` of side a towards side b's LID.
  uint32_t AhToB(uint32_t pd) {
    abi::AddressVector av{};
    av.port_num = 1;
    av.dlid = sides_[1].lid;
    uint32_t ah = 0;
    EXPECT_EQ(CreateAh(sides_[0], pd, av, &ah), Status::SUCCESS);
    return ah;
  }
  abi::SendWorkRequest UdSend(uint64_t wr_id, uint64_t av_handle, uint32_t length) {
    Side& a = sides_[0];
    abi::SendWorkRequest wr = Send(a, wr_id, abi::WrType::SEND, 0, length);
    wr.av.value = av_handle;
    wr.remote_qpn = sides_[1].qpn;
    wr.remote_qkey = kQkey;
    return wr;
  }
  // Posts a send naming `av_handle` and expects it refused: LOCAL_QP_OP_ERR naming the
  // translation as the refusing check, the QP in Error, b receiving nothing.
  void ExpectRefused(uint64_t av_handle) {
    Side& a = sides_[0];
    Side& b = sides_[1];
    ASSERT_EQ(PostRecv(b, Recv(b, 9, 0, kGrh + 64)), Status::SUCCESS);
    ASSERT_EQ(PostSend(a, UdSend(3, av_handle, 16)), Status::SUCCESS);
    abi::WorkCompletion wc{};
    ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
    EXPECT_EQ(wc.wr_id, 3u);
    EXPECT_EQ(wc.status, WcStatus::LOCAL_QP_OP_ERR);
    EXPECT_EQ(wc.vendor_err,
              static_cast<uint8_t>(abi::ToUnderlying(abi::Status::INVALID_AV_HANDLE)));
    EXPECT_EQ(StateOf(a), abi::QpState::ERROR);
    uint32_t n = 0;
    EXPECT_EQ(b.cq_ring.PollCq(std::span<abi::WorkCompletion>(&wc, 1), &n), Status::NOT_FOUND);
    EXPECT_EQ(StateOf(b), abi::QpState::RTS);  // the peer is untouched
  }
};

TEST_F(UdRingFixture, SendNamingABoundAvHandleDelivers) {
  BringUp();
  Side& a = sides_[0];
  Side& b = sides_[1];
  const uint32_t ah = AhToB(a.pd);
  ASSERT_EQ(BindAhHandle(a, ah, kHandle), Status::SUCCESS);

  for (uint32_t i = 0; i < 300; ++i) a.buffer[i] = static_cast<uint8_t>(i * 3 + 1);
  b.buffer[kGrh + 300] = 0xEE;
  ASSERT_EQ(PostRecv(b, Recv(b, 20, 0, kGrh + 1024)), Status::SUCCESS);
  ASSERT_EQ(PostSend(a, UdSend(1, kHandle, 300)), Status::SUCCESS);

  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 1u);
  EXPECT_EQ(wc.opcode, WcOpcode::SEND);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.wr_id, 20u);
  EXPECT_EQ(wc.opcode, WcOpcode::RECV);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  EXPECT_EQ(wc.length, kGrh + 300);
  EXPECT_EQ(wc.qp_num, b.qpn);
  EXPECT_EQ(wc.src_qp, a.qpn);
  EXPECT_EQ(wc.slid, a.lid);
  for (uint32_t i = 0; i < 300; ++i) {
    ASSERT_EQ(b.buffer[kGrh + i], static_cast<uint8_t>(i * 3 + 1)) << i;
  }
  EXPECT_EQ(b.buffer[kGrh + 300], 0xEE);  // nothing past the message
  EXPECT_EQ(StateOf(a), abi::QpState::RTS);
}

TEST_F(UdRingFixture, AHandleMovedToANewAhFollowsIt) {
  // ModifyAv: a new AH, the handle bound to it, then the old AH destroyed.
  BringUp();
  Side& a = sides_[0];
  Side& b = sides_[1];
  const uint32_t first = AhToB(a.pd);
  ASSERT_EQ(BindAhHandle(a, first, kHandle), Status::SUCCESS);
  const uint32_t second = AhToB(a.pd);
  ASSERT_EQ(BindAhHandle(a, second, kHandle), Status::SUCCESS);
  ASSERT_EQ(DestroyAh(a, first), Status::SUCCESS);

  ASSERT_EQ(PostRecv(b, Recv(b, 21, 0, kGrh + 64)), Status::SUCCESS);
  std::memcpy(a.buffer.data(), "moved", 6);
  ASSERT_EQ(PostSend(a, UdSend(2, kHandle, 6)), Status::SUCCESS);
  abi::WorkCompletion wc{};
  ASSERT_EQ(PollOne(a, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  ASSERT_EQ(PollOne(b, &wc), Status::SUCCESS);
  EXPECT_EQ(wc.status, WcStatus::SUCCESS);
  EXPECT_EQ(wc.length, kGrh + 6);
  EXPECT_STREQ(reinterpret_cast<const char*>(b.buffer.data() + kGrh), "moved");
}

TEST_F(UdRingFixture, AnUnboundHandleCompletesInError) {
  BringUp();
  const uint32_t ah = AhToB(sides_[0].pd);
  // The AH number itself is not a name the process may use, nor any unbound value.
  ASSERT_NE(static_cast<uint64_t>(ah), kHandle);
  ExpectRefused(ah);
}

TEST_F(UdRingFixture, ADestroyedAvsHandleCompletesInError) {
  BringUp();
  Side& a = sides_[0];
  const uint32_t ah = AhToB(a.pd);
  ASSERT_EQ(BindAhHandle(a, ah, kHandle), Status::SUCCESS);
  ASSERT_EQ(DestroyAh(a, ah), Status::SUCCESS);  // DestroyAv
  ExpectRefused(kHandle);
}

TEST_F(UdRingFixture, AnotherPdsAvIsRefused) {
  // IBA: the AH and the QP of a UD send share a PD. The handle names an AH of another PD
  // (of this CA), so in the QP's PD it names nothing.
  BringUp();
  Side& a = sides_[0];
  uint32_t other_pd = 0;
  ASSERT_EQ(AllocPd(a, &other_pd), Status::SUCCESS);
  const uint32_t ah = AhToB(other_pd);
  ASSERT_EQ(BindAhHandle(a, ah, kHandle), Status::SUCCESS);
  ExpectRefused(kHandle);
}

TEST_F(UdRingFixture, BindingChecksItsArguments) {
  Side& a = sides_[0];
  ASSERT_EQ(AllocPd(a, &a.pd), Status::SUCCESS);
  const uint32_t ah = AhToB(a.pd);
  EXPECT_EQ(BindAhHandle(a, ah, 0), Status::INVALID_PARAMETER);
  EXPECT_EQ(BindAhHandle(a, ah + 1000, kHandle), Status::INVALID_AV_HANDLE);
  EXPECT_EQ(BindAhHandle(a, ah, kHandle), Status::SUCCESS);
  EXPECT_EQ(DestroyAh(a, ah), Status::SUCCESS);
  EXPECT_EQ(BindAhHandle(a, ah, kHandle), Status::INVALID_AV_HANDLE);
}

}  // namespace
}  // namespace softib::hca::testing

// Every work-completion status of idl/types.idl WcStatus that RC, UC or UD can produce,
// each reached by a real exchange between two back-to-back HCAs and asserted exactly.
//
// Not produced by the device, and why:
//   LOCAL_EEC_OP_ERR, LOCAL_RDD_VIOL_ERR, REM_INV_RD_REQ_ERR, INV_EECN_ERR,
//   INV_EEC_STATE_ERR   Reliable Datagram only (EE contexts, RD domains, the "invalid RD
//                       request" NAK). softib implements no RD: CreateQp refuses QpType RD,
//                       so no EEC or RDD exists to be wrong.
//   REM_ABORT_ERR       No RC/UC/UD responder rule of IBA 9.7/9.8 aborts an operation in a
//                       way the requester can tell: RC NAK codes map to REM_INV_REQ_ERR,
//                       REM_ACCESS_ERR and REM_OP_ERR, a responder that dies is seen as
//                       RETRY_EXC_ERR, and UC/UD responders never answer.
//   UNMATCHED_RESPONSE, CANCELED, RESP_TIMEOUT_ERR
//                       statuses of the Access Layer's MAD service (runtime/al), not of an
//                       HCA's work queues.
#include <endian.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "hca/device/tests/rc_fixture.h"
#include "hca/device/tests/ud_fixture.h"

namespace softib::hca {
namespace {

using abi::Status;
using abi::WcStatus;
using abi::WrType;
using testing::RcOptions;
using testing::RcPair;
using testing::UdPair;

// Memory whose pages are gone: every transfer fails after the key check passed.
class VanishedDma final : public DmaAccessor {
 public:
  bool Read(uint64_t, std::span<uint8_t>) override { return false; }
  bool Write(uint64_t, std::span<const uint8_t>) override { return false; }
};

WcStatus Only(const std::vector<abi::WorkCompletion>& wcs) {
  EXPECT_EQ(wcs.size(), 1u);
  return wcs.empty() ? WcStatus::SUCCESS : wcs.front().status;
}

// The status of a's (requester's) single completion after `wr` ran.
WcStatus RcRequester(RcPair& p, const abi::SendWorkRequest& wr) {
  EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
  EXPECT_TRUE(p.Run());
  return Only(p.Poll(p.a));
}

struct Case {
  WcStatus status;
  std::string how;
  std::function<WcStatus()> run;
};

std::vector<Case> Cases() {
  return {
      {WcStatus::SUCCESS, "RC RDMA write",
       [] {
         RcPair p;
         return RcRequester(p, p.Wr(WrType::RDMA_WRITE, 0, 100));
       }},
      {WcStatus::LOCAL_LENGTH_ERR, "UD send longer than the path MTU",
       [] {
         UdPair p;
         p.a.hca.port(1).active_mtu = abi::PathMtu::MTU_1024;
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, p.Send(0, 1025)), Status::SUCCESS);
         return Only(p.Poll(p.a));
       }},
      {WcStatus::LOCAL_LENGTH_ERR, "UC receive smaller than the message (responder)",
       [] {
         RcOptions o;
         o.type = abi::QpType::UC;
         RcPair p(o);
         EXPECT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 10)), Status::SUCCESS);
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::SEND, 0, 100)), Status::SUCCESS);
         p.cable.Pump();
         return Only(p.Poll(p.b));
       }},
      {WcStatus::LOCAL_QP_OP_ERR, "UD send through an AH of another PD",
       [] {
         UdPair p;
         abi::AddressVector av{};
         av.port_num = 1;
         av.dlid = 2;
         uint32_t foreign = 0;
         EXPECT_EQ(p.a.hca.CreateAh(p.a.hca.AllocPd(), av, &foreign), Status::SUCCESS);
         abi::SendWorkRequest wr = p.Send(0, 8);
         wr.av.value = foreign;
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
         return Only(p.Poll(p.a));
       }},
      {WcStatus::LOCAL_PROT_ERR, "RC send from an unknown L_Key",
       [] {
         RcPair p;
         abi::SendWorkRequest wr = p.Wr(WrType::SEND, 0, 8);
         wr.sge[0].lkey ^= 0x100;
         return RcRequester(p, wr);
       }},
      {WcStatus::LOCAL_PROT_ERR, "UC send beyond its region",
       [] {
         RcOptions o;
         o.type = abi::QpType::UC;
         RcPair p(o);
         abi::SendWorkRequest wr = p.Wr(WrType::SEND, p.a.buffer.size() - 4, 8);
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
         return Only(p.Poll(p.a));
       }},
      {WcStatus::WR_FLUSH_ERR, "UD receive outstanding when the QP is moved to Error",
       [] {
         UdPair p;
         EXPECT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64)), Status::SUCCESS);
         EXPECT_EQ(p.b.hca.ModifyQp(p.b.qpn, testing::ToState(abi::QpState::ERROR)),
                   Status::SUCCESS);
         return Only(p.Poll(p.b));
       }},
      {WcStatus::MW_BIND_ERR, "RC BIND_MW of a window that does not exist",
       [] {
         RcPair p;
         abi::SendWorkRequest wr{};
         wr.wr_type = WrType::BIND_MW;
         wr.bind_rkey = 0x4242;
         wr.bind_lkey = p.a.key;
         wr.bind_length = 8;
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
         return Only(p.Poll(p.a));
       }},
      {WcStatus::REM_ACCESS_ERR, "RC RDMA write with a bad R_Key",
       [] {
         RcPair p;
         abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 8);
         wr.rkey ^= 0x100;
         return RcRequester(p, wr);
       }},
      {WcStatus::REM_OP_ERR, "RC send into a receive with a bad L_Key",
       [] {
         RcPair p;
         abi::RecvWorkRequest r = p.Recv(0, 64);
         r.sge[0].lkey ^= 0x100;
         EXPECT_EQ(p.b.hca.PostRecv(p.b.qpn, r), Status::SUCCESS);
         return RcRequester(p, p.Wr(WrType::SEND, 0, 8));
       }},
      {WcStatus::RNR_RETRY_EXC_ERR, "RC send, no receive posted, rnr_retry 0",
       [] {
         RcOptions o;
         o.rnr_retry = 0;
         RcPair p(o);
         return RcRequester(p, p.Wr(WrType::SEND, 0, 8));
       }},
      {WcStatus::RETRY_EXC_ERR, "RC write over a link that loses everything",
       [] {
         RcOptions o;
         o.retry_count = 1;
         RcPair p(o);
         p.cable.SetFaults({1000, 0, 0, 1});
         return RcRequester(p, p.Wr(WrType::RDMA_WRITE, 0, 8));
       }},
      {WcStatus::REM_INV_REQ_ERR, "RC send larger than the responder's receive",
       [] {
         RcPair p;
         EXPECT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 10)), Status::SUCCESS);
         return RcRequester(p, p.Wr(WrType::SEND, 0, 100));
       }},
      {WcStatus::BAD_RESPONSE_ERR, "RC read answered with a response of the wrong length",
       [] {
         RcPair p;
         p.cable.DropPacket(1);  // b's genuine response
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_READ, 0, 8)), Status::SUCCESS);
         p.cable.Pump();
         PacketHeaders hdr;
         hdr.lrh.DLID = 1;
         hdr.lrh.SLID = 2;
         hdr.bth.OpCode = static_cast<uint8_t>(wire::BthOpcode::RC_RDMA_READ_RESPONSE_ONLY);
         hdr.bth.P_Key = 0xFFFF;
         hdr.bth.DestQP = p.a.qpn;
         hdr.bth.PSN = RcOptions{}.a_psn;
         hdr.aeth.Syndrome = 0x1F;
         const uint8_t four[4] = {1, 2, 3, 4};
         const std::vector<uint8_t> bytes = BuildPacket(hdr, four);
         p.a.hca.Receive(1, bytes);
         return Only(p.Poll(p.a));
       }},
      {WcStatus::LOCAL_ACCESS_ERR, "RC write with immediate refused by the R_Key (responder)",
       [] {
         RcPair p;
         EXPECT_EQ(p.b.hca.PostRecv(p.b.qpn, p.Recv(0, 64)), Status::SUCCESS);
         abi::SendWorkRequest wr = p.Wr(WrType::RDMA_WRITE, 0, 8);
         wr.send_flags = abi::SendFlags::IMMEDIATE;
         wr.rkey ^= 0x100;
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
         EXPECT_TRUE(p.Run());
         EXPECT_EQ(Only(p.Poll(p.a)), WcStatus::REM_ACCESS_ERR);
         return Only(p.Poll(p.b));
       }},
      {WcStatus::GENERAL_ERR, "UD send from a region whose memory vanished",
       [] {
         UdPair p;
         uint32_t key = 0;
         EXPECT_EQ(p.a.hca.RegisterMr(p.a.pd, 0x10000, 4096, 0x10000, abi::AccessFlags{},
                                      std::make_shared<VanishedDma>(), &key),
                   Status::SUCCESS);
         abi::SendWorkRequest wr = p.Send(0, 8);
         wr.sge[0] = {0x10000, 8, key};
         EXPECT_EQ(p.a.hca.PostSend(p.a.qpn, wr), Status::SUCCESS);
         return Only(p.Poll(p.a));
       }},
  };
}

TEST(WcStatus, EachReachableStatusIsProducedExactly) {
  std::set<WcStatus> seen;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.how);
    EXPECT_EQ(c.run(), c.status);
    seen.insert(c.status);
  }
  // Every status of the IDL is either reached above or listed as unreachable in the header.
  const std::set<WcStatus> unreachable = {
      WcStatus::LOCAL_EEC_OP_ERR,   WcStatus::LOCAL_RDD_VIOL_ERR, WcStatus::REM_INV_RD_REQ_ERR,
      WcStatus::INV_EECN_ERR,       WcStatus::INV_EEC_STATE_ERR,  WcStatus::REM_ABORT_ERR,
      WcStatus::UNMATCHED_RESPONSE, WcStatus::CANCELED,           WcStatus::RESP_TIMEOUT_ERR};
  for (const WcStatus s : abi::EnumTraits<WcStatus>::kValues)
    EXPECT_TRUE(seen.count(s) + unreachable.count(s) == 1) << abi::ToString(s);
}

}  // namespace
}  // namespace softib::hca

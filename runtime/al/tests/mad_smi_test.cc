// The SMI between the two CAs of one node (back to back): a directed-route NodeInfo Get
// from port 1 of the first CA (a kernel client on an SMI alias) reaches the second CA's SMA
// through QP0, which answers through the CA's LocalMad, and the response travels the return
// path to the agent that sent the request.
#include "mad_client.h"

namespace softib::testing {
namespace {

std::vector<uint8_t> DrNodeInfoGet(uint64_t tid) {
  std::vector<uint8_t> m = MakeMad(0x81, 0x01, tid, 0x0011);
  std::fill(m.begin() + 20, m.end(), 0);
  m[6] = 0;              // HopPointer
  m[7] = 1;              // HopCount
  m[32] = m[33] = 0xFF;  // DrSLID permissive
  m[34] = m[35] = 0xFF;  // DrDLID permissive
  m[128 + 1] = 1;        // InitialPath[1]: out of port 1
  return m;
}

TEST(MadSmi, DirectedRouteNodeInfoToThePeerSmaAndBack) {
  auto node = BootDefault("mad-smi-dr");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd sm;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::SMI_ALIAS, &sm));
  ASSERT_EQ(RegSvc(client, &sm, SvcParams(0x81, {})), Status::SUCCESS);
  abi::SendMadIn in = SendTo(sm.svc, 0xFFFF, 256, 2000, 2, true, 0x5A);
  in.params.remote_qpn = 0;
  in.params.remote_qkey = 0;
  uint64_t send_id = 0;
  ASSERT_EQ(SendMadTo(client, in, DrNodeInfoGet(0x42), &send_id), Status::SUCCESS);

  MadEvent got;
  ASSERT_TRUE(NextMadEvent(client, sm.svc, &got));
  ASSERT_EQ(got.out.event.kind, abi::MadEventKind::RECEIVED);
  EXPECT_EQ(got.out.event.send_id, send_id);
  EXPECT_EQ(got.out.event.send_context, 0x5Au);
  ASSERT_EQ(got.mad.size(), 256u);
  EXPECT_EQ(got.mad[1], 0x81);
  EXPECT_EQ(got.mad[3], 0x81);         // GetResp
  EXPECT_EQ(got.mad[4] & 0x80, 0x80);  // D: returning
  EXPECT_EQ(got.mad[4] & 0x7F, 0);     // status
  EXPECT_EQ(got.mad[5], 0);
  EXPECT_EQ(TidOf(got.mad) & 0xFFFFFFFF, 0x42u);
  EXPECT_EQ(got.mad[193], 1);  // ReturnPath[1]: the port it arrived on at the peer
  // NodeInfo: NodeType 1 (CA), NodeGUID the second CA's.
  EXPECT_EQ(got.mad[64 + 2], 1);
  uint64_t guid = 0;
  for (int i = 0; i < 8; ++i) guid = guid << 8 | got.mad[64 + 12 + i];
  EXPECT_EQ(guid, node->ca_guids()[1]);
  MadEvent done;
  ASSERT_TRUE(NextMadEvent(client, sm.svc, &done));
  EXPECT_EQ(done.out.event.kind, abi::MadEventKind::SEND_COMPLETED);
  EXPECT_EQ(done.out.event.status, abi::WcStatus::SUCCESS);
}

TEST(MadSmi, DirectedRouteThatDoesNotStartAtThisPortIsRefused) {
  auto node = BootDefault("mad-smi-bad");
  ASSERT_TRUE(node);
  Client client(node->node());
  MadEnd sm;
  ASSERT_NO_FATAL_FAILURE(OpenMadEnd(client, node->ca_guids()[0], 1, abi::QpType::SMI_ALIAS, &sm));
  ASSERT_EQ(RegSvc(client, &sm, SvcParams(0x81, {})), Status::SUCCESS);
  auto smp = DrNodeInfoGet(0x43);
  smp[128 + 1] = 2;  // out of port 2: not the alias's port
  abi::SendMadIn in = SendTo(sm.svc, 0xFFFF, 256, 2000, 0, true, 0);
  in.params.remote_qpn = 0;
  EXPECT_EQ(SendMadTo(client, in, smp, nullptr), Status::INVALID_SETTING);
  smp = DrNodeInfoGet(0x44);
  smp[7] = 64;  // HopCount beyond 63
  EXPECT_EQ(SendMadTo(client, in, smp, nullptr), Status::INVALID_SETTING);
  smp = DrNodeInfoGet(0x45);
  smp[7] = 0;  // HopCount 0: this port's own SMA (LocalMad)
  EXPECT_EQ(SendMadTo(client, in, smp, nullptr), Status::INVALID_SETTING);
}

}  // namespace
}  // namespace softib::testing

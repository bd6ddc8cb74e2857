// The CM between kernel clients on the two CAs of one node (LIDs 1 and 2): a listen by
// service ID with a private-data compare, REQ/REP/RTU, the QP brought to RTS from the CEP's
// attributes, RDMA write and send both ways, DREQ/DREP, time-wait, nothing left. The CM
// messages are checked byte by byte at the offsets of the IBA 12.6 tables.
#include "cm_client.h"

namespace softib::testing {
namespace {

constexpr uint64_t kService = 0x0000000012345678;

// Offsets in a MAD: the CM message starts at 24 (IBA 12.6: MAD header, then the message).
const uint8_t* Msg(const abi::CepGetEventOut& e) { return e.mad + 24; }

void ExpectCmHeader(const abi::CepGetEventOut& e, uint16_t attribute) {
  EXPECT_EQ(e.mad[0], 1);     // BaseVersion
  EXPECT_EQ(e.mad[1], 0x07);  // ComMgt
  EXPECT_EQ(e.mad[2], 2);     // ClassVersion
  EXPECT_EQ(e.mad[3], 0x03);  // Send
  EXPECT_EQ(Be(e.mad + 4, 2), 0u);
  EXPECT_EQ(Be(e.mad + 16, 2), attribute);
  EXPECT_EQ(Be(e.mad + 20, 4), 0u);  // AttributeModifier
}

struct CmPair {
  explicit CmPair(const char* name) : node(BootDefault(name)) {}
  void Open(Client& client) {
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a));
    ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b));
    ASSERT_NO_FATAL_FAILURE(InitQp(client, a));
    ASSERT_NO_FATAL_FAILURE(InitQp(client, b));
  }
  std::unique_ptr<stack::NodeStack> node;
  Side a, b;
};

TEST(CmConnect, ListenConnectTrafficDisconnectWithTheSpecsBytes) {
  CmPair pair("cm-connect");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  const uint64_t guid_a = pair.node->ca_guids()[0];
  const uint64_t guid_b = pair.node->ca_guids()[1];

  // B listens for kService with "abc" at private-data offset 2; a second listen of the same
  // service without a compare would overlap it.
  const uint64_t listen = CreateCep(client, 0x11);
  ASSERT_EQ(Listen(client, listen, kService, "abc", 2), Status::SUCCESS);
  const uint64_t other = CreateCep(client, 0x12);
  EXPECT_EQ(Listen(client, other, kService), Status::INVALID_SETTING);
  EXPECT_EQ(Listen(client, listen, kService + 1), Status::INVALID_STATE);

  const uint64_t active = CreateCep(client, 0xA);
  const abi::CmReqParams req_params = ReqParams(kService, 1, 2);
  ASSERT_EQ(SendReq(client, active, pair.a.qp, req_params, "xxabc-req"), Status::SUCCESS);
  EXPECT_EQ(SendReq(client, active, pair.a.qp, req_params), Status::INVALID_STATE);

  // REQ (IBA 12.6.5).
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, listen, &req));
  ASSERT_EQ(req.event, abi::CepEventType::REQ_RECEIVED);
  EXPECT_EQ(req.context, 0x11u);
  ASSERT_NE(req.new_cep.value, 0u);
  const uint64_t passive = req.new_cep.value;
  ExpectCmHeader(req, 0x0010);
  const uint8_t* m = Msg(req);
  const uint32_t active_id = Be(m + 0, 4);
  EXPECT_NE(active_id, 0u);
  EXPECT_EQ(Be(req.mad + 12, 4), active_id);  // TID low half: the local communication ID
  EXPECT_EQ(Be64(m + 8), kService);
  EXPECT_EQ(Be64(m + 16), guid_a);  // LocalCAGUID
  EXPECT_EQ(Be(m + 28, 4), 0u);     // LocalQ_Key (RC)
  EXPECT_EQ(Be(m + 32, 3), pair.a.qpn);
  EXPECT_EQ(m[35], 4);                     // ResponderResources
  EXPECT_EQ(m[39], 2);                     // InitiatorDepth
  EXPECT_EQ(m[43], 16 << 3 | 0 << 1 | 0);  // RemoteCMResponseTimeout, RC, no flow control
  EXPECT_EQ(Be(m + 44, 3), 0x111111u);     // StartingPSN
  EXPECT_EQ(m[47], 16 << 3 | 6);           // LocalCMResponseTimeout, RetryCount
  EXPECT_EQ(Be(m + 48, 2), 0xFFFFu);       // P_Key
  EXPECT_EQ(m[50], 3 << 4 | 0 << 3 | 5);   // MTU 1024, no RDC, RNRRetryCount
  EXPECT_EQ(m[51], 3 << 4);                // MaxCMRetries, no SRQ
  EXPECT_EQ(Be(m + 52, 2), 1u);            // PrimaryLocalPortLID
  EXPECT_EQ(Be(m + 54, 2), 2u);            // PrimaryRemotePortLID
  EXPECT_EQ(m[91] & 0x3F, 3);              // PrimaryPacketRate
  EXPECT_EQ(m[94], 0 << 4 | 1 << 3);       // SL 0, SubnetLocal
  EXPECT_EQ(m[95], 1 << 3);                // LocalACKTimeout: packet lifetime 0 + 1
  EXPECT_EQ(Be(m + 96, 2), 0u);            // no alternate path
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 140), 9), "xxabc-req");

  // REP (IBA 12.6.8).
  // The passive side may take its QP to RTR from the REQ on (before its REP, as Linux's rdma_accept
  // does); the REQ gave the peer's QPN, PSN and path. RTS waits for the REP.
  abi::CepGetRtrAttributesOut early{};
  ASSERT_EQ(kernel::IbCepGetRtrAttributes(client.al(), {{passive}}, early), Status::SUCCESS);
  EXPECT_EQ(early.attributes.state, abi::QpState::RTR);
  EXPECT_EQ(early.attributes.dest_qpn, pair.a.qpn);
  EXPECT_EQ(early.attributes.rq_psn, 0x111111u);
  EXPECT_EQ(early.attributes.av.dlid, 1);
  abi::CepGetRtsAttributesOut early_rts{};
  EXPECT_EQ(kernel::IbCepGetRtsAttributes(client.al(), {{passive}}, early_rts),
            Status::INVALID_STATE);
  ASSERT_EQ(SendRep(client, passive, pair.b.qp, RepParams(), "rep-data"), Status::SUCCESS);
  abi::CepGetEventOut rep{};
  ASSERT_TRUE(NextCepEvent(client, active, &rep));
  ASSERT_EQ(rep.event, abi::CepEventType::REP_RECEIVED);
  EXPECT_EQ(rep.context, 0xAu);
  EXPECT_EQ(rep.new_cep.value, 0u);
  ExpectCmHeader(rep, 0x0013);
  m = Msg(rep);
  const uint32_t passive_id = Be(m + 0, 4);
  EXPECT_NE(passive_id, 0u);
  EXPECT_EQ(Be(m + 4, 4), active_id);
  EXPECT_EQ(Be(m + 12, 3), pair.b.qpn);
  EXPECT_EQ(Be(m + 20, 3), 0x222222u);
  EXPECT_EQ(m[24], 2);                    // ResponderResources
  EXPECT_EQ(m[25], 3);                    // InitiatorDepth
  EXPECT_EQ(m[26], 9 << 3 | 0 << 1 | 0);  // TargetACKDelay, failover accepted, no flow ctl
  EXPECT_EQ(m[27], 4 << 5);               // RNRRetryCount, no SRQ
  EXPECT_EQ(Be64(m + 28), guid_b);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 36), 8), "rep-data");

  // The active QP to RTS from the CEP, then RTU (IBA 12.6.9).
  abi::QpModifyAttributes rtr{}, rts{};
  ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, active, pair.a, &rtr, &rts));
  EXPECT_EQ(rtr.state, abi::QpState::RTR);
  EXPECT_EQ(rtr.dest_qpn, pair.b.qpn);
  EXPECT_EQ(rtr.rq_psn, 0x222222u);
  EXPECT_EQ(rtr.av.dlid, 2);
  EXPECT_EQ(rtr.av.port_num, 1);
  EXPECT_EQ(rtr.path_mtu, static_cast<uint8_t>(abi::PathMtu::MTU_1024));
  EXPECT_EQ(rtr.max_dest_rd_atomic, 3);  // the peer's initiator depth
  EXPECT_EQ(rts.sq_psn, 0x111111u);
  EXPECT_EQ(rts.max_rd_atomic, 2);  // min(ours, the peer's responder resources)
  EXPECT_EQ(rts.retry_count, 6);
  EXPECT_EQ(rts.rnr_retry, 4);  // the REP's
  EXPECT_EQ(rts.timeout, 1);
  abi::CepSendRtuIn rtu_in{};
  rtu_in.cep.value = active;
  rtu_in.private_data_length = 3;
  ASSERT_EQ(kernel::IbCepSendRtu(client.al(), rtu_in, Bytes("rtu")), Status::SUCCESS);
  abi::CepGetEventOut rtu{};
  ASSERT_TRUE(NextCepEvent(client, passive, &rtu));
  ASSERT_EQ(rtu.event, abi::CepEventType::RTU_RECEIVED);
  EXPECT_EQ(rtu.context, 0x11u);  // the listen's
  ExpectCmHeader(rtu, 0x0014);
  EXPECT_EQ(Be(Msg(rtu) + 0, 4), active_id);
  EXPECT_EQ(Be(Msg(rtu) + 4, 4), passive_id);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(Msg(rtu) + 8), 3), "rtu");
  ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, passive, pair.b, &rtr, &rts));
  EXPECT_EQ(rtr.dest_qpn, pair.a.qpn);
  EXPECT_EQ(rtr.rq_psn, 0x111111u);
  EXPECT_EQ(rtr.av.dlid, 1);
  EXPECT_EQ(rtr.max_dest_rd_atomic, 2);
  EXPECT_EQ(rts.sq_psn, 0x222222u);
  EXPECT_EQ(rts.max_rd_atomic, 3);
  EXPECT_EQ(rts.rnr_retry, 5);  // the REQ's

  // Traffic both ways: RDMA write, then send/receive.
  uint32_t posted = 0;
  Pattern(pair.a.buffer, 0, 512, 1);
  Pattern(pair.b.buffer, 0, 512, 2);
  auto wa = Write(pair.a, 0, 512, pair.b, 4096, 1);
  wa.send_flags = abi::SendFlags::SIGNALED;
  auto wb = Write(pair.b, 0, 512, pair.a, 4096, 2);
  wb.send_flags = abi::SendFlags::SIGNALED;
  ASSERT_EQ(kernel::IbPostSend(client.al(), pair.a.qp, {&wa, 1}, &posted), Status::SUCCESS);
  ASSERT_EQ(kernel::IbPostSend(client.al(), pair.b.qp, {&wb, 1}, &posted), Status::SUCCESS);
  ASSERT_EQ(client.PollN(pair.a.cq, 1).size(), 1u);
  ASSERT_EQ(client.PollN(pair.b.cq, 1).size(), 1u);
  EXPECT_TRUE(HasPattern(pair.b.buffer, 4096, 512, 1));
  EXPECT_TRUE(HasPattern(pair.a.buffer, 4096, 512, 2));
  auto ra = Recv(pair.a, 8192, 256, 3);
  auto rb = Recv(pair.b, 8192, 256, 4);
  ASSERT_EQ(kernel::IbPostRecv(client.al(), pair.a.qp, {&ra, 1}, &posted), Status::SUCCESS);
  ASSERT_EQ(kernel::IbPostRecv(client.al(), pair.b.qp, {&rb, 1}, &posted), Status::SUCCESS);
  auto sa = Send(pair.a, 0, 256, 5);
  sa.send_flags = abi::SendFlags::SIGNALED;
  auto sb = Send(pair.b, 0, 256, 6);
  sb.send_flags = abi::SendFlags::SIGNALED;
  ASSERT_EQ(kernel::IbPostSend(client.al(), pair.a.qp, {&sa, 1}, &posted), Status::SUCCESS);
  ASSERT_EQ(kernel::IbPostSend(client.al(), pair.b.qp, {&sb, 1}, &posted), Status::SUCCESS);
  const auto done_a = client.PollN(pair.a.cq, 2);
  const auto done_b = client.PollN(pair.b.cq, 2);
  ASSERT_EQ(done_a.size(), 2u);
  ASSERT_EQ(done_b.size(), 2u);
  for (const auto& wc : done_a) EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  for (const auto& wc : done_b) EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(pair.b.buffer, 8192, 256, 1));
  EXPECT_TRUE(HasPattern(pair.a.buffer, 8192, 256, 2));

  // DREQ (IBA 12.6.10), DREP (12.6.11), time-wait on both sides.
  abi::CepSendDreqIn dreq_in{};
  dreq_in.cep.value = active;
  dreq_in.private_data_length = 4;
  ASSERT_EQ(kernel::IbCepSendDreq(client.al(), dreq_in, Bytes("bye!")), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendDreq(client.al(), dreq_in, Bytes("bye!")), Status::INVALID_STATE);
  abi::CepGetEventOut dreq{};
  ASSERT_TRUE(NextCepEvent(client, passive, &dreq));
  ASSERT_EQ(dreq.event, abi::CepEventType::DREQ_RECEIVED);
  ExpectCmHeader(dreq, 0x0015);
  EXPECT_EQ(Be(Msg(dreq) + 0, 4), active_id);
  EXPECT_EQ(Be(Msg(dreq) + 4, 4), passive_id);
  EXPECT_EQ(Be(Msg(dreq) + 8, 3), pair.b.qpn);  // RemoteQPN
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(Msg(dreq) + 12), 4), "bye!");
  abi::CepSendDrepIn drep_in{};
  drep_in.cep.value = passive;
  drep_in.private_data_length = 2;
  ASSERT_EQ(kernel::IbCepSendDrep(client.al(), drep_in, Bytes("ok")), Status::SUCCESS);
  abi::CepGetEventOut drep{};
  ASSERT_TRUE(NextCepEvent(client, active, &drep));
  ASSERT_EQ(drep.event, abi::CepEventType::DREP_RECEIVED);
  ExpectCmHeader(drep, 0x0016);
  EXPECT_EQ(Be(Msg(drep) + 0, 4), passive_id);
  EXPECT_EQ(Be(Msg(drep) + 4, 4), active_id);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(Msg(drep) + 8), 2), "ok");
  abi::CepGetEventOut exit{};
  ASSERT_TRUE(NextCepEvent(client, active, &exit));
  EXPECT_EQ(exit.event, abi::CepEventType::TIMEWAIT_EXIT);
  EXPECT_EQ(exit.mad[0], 0);
  ASSERT_TRUE(NextCepEvent(client, passive, &exit));
  EXPECT_EQ(exit.event, abi::CepEventType::TIMEWAIT_EXIT);

  for (uint64_t cep : {active, passive, listen, other}) {
    EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{cep}}), Status::SUCCESS);
  }
  EXPECT_EQ(CepsLeft(pair.node->access_layer()), 0u);
}

}  // namespace
}  // namespace softib::testing

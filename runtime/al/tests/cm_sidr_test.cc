// Service ID resolution (IBA 12.11) between kernel clients on the two CAs of one node: a
// SIDR_REQ to a listened service reaches the listen as SIDR_REQ_RECEIVED, its SIDR_REP
// names a UD QP and Q_Key the requester then sends a datagram to; a service nobody
// listens to is answered "service ID not supported" by the CM; a SIDR_REQ nobody answers
// ends in SIDR_REQ_TIMEOUT. Messages checked at the offsets of the IBA 12.6 tables.
#include "cm_client.h"

namespace softib::testing::cm_sidr_test {
namespace {

constexpr uint64_t kService = 0x0000000001110000 | 4791;  // rdma_cm UDP port space, port 4791
constexpr uint32_t kQkey = 0x01234567;

const uint8_t* Msg(const abi::CepGetEventOut& e) { return e.mad + 24; }

Status SidrReq(Client& client, uint64_t cep, uint64_t service, uint16_t slid, uint16_t dlid,
               uint32_t timeout_ms, uint32_t retries, std::string_view private_data = {}) {
  abi::CepSendSidrReqIn in{};
  in.cep.value = cep;
  in.service_id = htobe64(service);
  const auto path = PathRecordBytes(slid, dlid);
  std::memcpy(in.path, path.data(), path.size());
  in.timeout_ms = timeout_ms;
  in.max_retries = retries;
  in.private_data_length = static_cast<uint32_t>(private_data.size());
  return kernel::IbCepSendSidrReq(client.al(), in, Bytes(private_data));
}

TEST(CmSidr, ResolvesAServiceToAUdQpAndSendsItADatagram) {
  auto node = BootDefault("cm-sidr");
  ASSERT_TRUE(node);
  Side a, b;
  Client client(node->node());
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[0], 1, &a, abi::QpType::UD));
  ASSERT_NO_FATAL_FAILURE(client.Build(node->ca_guids()[1], 2, &b, abi::QpType::UD));
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, a.qp, 0x1111));
  ASSERT_NO_FATAL_FAILURE(BringUpUd(client, b.qp, kQkey));

  const uint64_t listen = CreateCep(client, 0x51);
  ASSERT_EQ(Listen(client, listen, kService), Status::SUCCESS);
  const uint64_t requester = CreateCep(client, 0x52);
  ASSERT_EQ(SidrReq(client, requester, kService, 1, 2, 1000, 3, "who?"), Status::SUCCESS);
  EXPECT_EQ(SidrReq(client, requester, kService, 1, 2, 1000, 3), Status::INVALID_STATE);

  // SIDR_REQ (IBA 12.6.14).
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, listen, &req));
  ASSERT_EQ(req.event, abi::CepEventType::SIDR_REQ_RECEIVED);
  EXPECT_EQ(req.context, 0x51u);
  ASSERT_NE(req.new_cep.value, 0u);
  EXPECT_EQ(Be(req.mad + 16, 2), 0x0017u);
  const uint8_t* m = Msg(req);
  const uint32_t request_id = Be(m + 0, 4);
  EXPECT_NE(request_id, 0u);
  EXPECT_EQ(Be(m + 4, 2), 0xFFFFu);  // PartitionKey
  EXPECT_EQ(Be(m + 6, 2), 0u);
  EXPECT_EQ(Be64(m + 8), kService);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 16), 4), "who?");

  // SIDR_REP (IBA 12.6.15) naming B's UD QP; none would not do.
  abi::CepSendSidrRepIn rep_in{};
  rep_in.cep.value = req.new_cep.value;
  EXPECT_EQ(kernel::IbCepSendSidrRep(client.al(), rep_in, {}), Status::INVALID_SERVICE_TYPE);
  rep_in.qp.value = b.qp;
  rep_in.status = 0;  // valid
  rep_in.qkey = htobe32(kQkey);
  rep_in.info_length = 1;
  rep_in.info[0] = 0x5A;
  rep_in.private_data_length = 2;
  ASSERT_EQ(kernel::IbCepSendSidrRep(client.al(), rep_in, Bytes("ok")), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendSidrRep(client.al(), rep_in, Bytes("ok")), Status::INVALID_STATE);
  abi::CepGetEventOut rep{};
  ASSERT_TRUE(NextCepEvent(client, requester, &rep));
  ASSERT_EQ(rep.event, abi::CepEventType::SIDR_REP_RECEIVED);
  EXPECT_EQ(rep.context, 0x52u);
  EXPECT_EQ(Be(rep.mad + 16, 2), 0x0018u);
  m = Msg(rep);
  EXPECT_EQ(Be(m + 0, 4), request_id);
  EXPECT_EQ(m[4], 0);  // Status: valid
  EXPECT_EQ(m[5], 1);  // AdditionalInfoLength
  EXPECT_EQ(Be(m + 8, 3), b.qpn);
  EXPECT_EQ(Be64(m + 12), kService);
  EXPECT_EQ(Be(m + 20, 4), kQkey);
  EXPECT_EQ(m[24], 0x5A);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 96), 2), "ok");

  // The datagram to what the SIDR_REP named.
  abi::CreateAvIn av_in{};
  av_in.pd.value = a.pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = b.lid;
  abi::CreateAvOut av{};
  ASSERT_EQ(kernel::IbCreateAv(client.al(), av_in, av), Status::SUCCESS);
  uint32_t posted = 0;
  const abi::RecvWorkRequest recv = Recv(b, 0, 40 + 128, 1);
  ASSERT_EQ(kernel::IbPostRecv(client.al(), b.qp, {&recv, 1}, &posted), Status::SUCCESS);
  Pattern(a.buffer, 0, 128, 5);
  abi::SendWorkRequest wr = Send(a, 0, 128, 2);
  wr.av = av.av;
  wr.remote_qpn = Be(m + 8, 3);
  wr.remote_qkey = Be(m + 20, 4);
  ASSERT_EQ(kernel::IbPostSend(client.al(), a.qp, {&wr, 1}, &posted), Status::SUCCESS);
  const auto got = client.PollN(b.cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, abi::WcStatus::SUCCESS);
  EXPECT_EQ(got[0].src_qp, a.qpn);
  EXPECT_TRUE(HasPattern(b.buffer, 40, 128, 5));
  EXPECT_EQ(client.PollN(a.cq, 1).size(), 1u);

  // Both CEPs are one-shot: idle again, the requester may resolve once more.
  ASSERT_EQ(SidrReq(client, requester, kService + 1, 1, 2, 1000, 0), Status::SUCCESS);
  abi::CepGetEventOut none{};
  ASSERT_TRUE(NextCepEvent(client, requester, &none));
  ASSERT_EQ(none.event, abi::CepEventType::SIDR_REP_RECEIVED);
  EXPECT_EQ(Msg(none)[4], 1);  // service ID not supported, from the CM
  EXPECT_EQ(Be64(Msg(none) + 12), kService + 1);
  EXPECT_EQ(kernel::IbDestroyAv(client.al(), {av.av}), Status::SUCCESS);
}

TEST(CmSidr, ARequestNobodyAnswersTimesOutAfterItsRetries) {
  auto node = BootDefault("cm-sidr-timeout");
  ASSERT_TRUE(node);
  Client client(node->node());
  const uint64_t listen = CreateCep(client, 0x61);
  ASSERT_EQ(Listen(client, listen, kService), Status::SUCCESS);
  const uint64_t requester = CreateCep(client, 0x62);
  // Bad requests first: no path, no timeout.
  EXPECT_EQ(SidrReq(client, requester, kService, 1, 2, 0, 1), Status::INVALID_SETTING);
  EXPECT_EQ(SidrReq(client, requester, kService, 9, 2, 10, 1), Status::INVALID_SETTING);
  ASSERT_EQ(SidrReq(client, requester, kService, 1, 2, 20, 2), Status::SUCCESS);
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, listen, &req));
  ASSERT_EQ(req.event, abi::CepEventType::SIDR_REQ_RECEIVED);
  // The listener keeps quiet: two retries (duplicates the CM absorbs), then the timeout.
  EXPECT_EQ(NextEventType(client, requester), abi::CepEventType::SIDR_REQ_TIMEOUT);
  abi::CepGetEventOut again{};
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{listen}}, again), Status::CANCELED);
  // Abandoned: destroying the new CEP answers "rejected"; nothing is left.
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{req.new_cep.value}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{requester}}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbDestroyCep(client.al(), {{listen}}), Status::SUCCESS);
  EXPECT_EQ(CepsLeft(node->access_layer()), 0u);
}

}  // namespace
}  // namespace softib::testing::cm_sidr_test

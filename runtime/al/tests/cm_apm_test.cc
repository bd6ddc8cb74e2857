// Alternate paths and automatic path migration (IBA 12.8, 17.2.8) between kernel clients on
// two CAs with two ports each, cabled twice (port 1 to port 1, port 2 to port 2): an RC
// connection whose primary path is on port 1 and whose alternate on port 2 comes from the
// REQ or from LAP/APR; port 1 is uncabled while a stream of RDMA writes runs, and every
// write completes, its data intact, the QPs on port 2 and QP_PATH_MIGRATED on both sides.
// The LAP and APR messages are checked at the offsets of the IBA 12.6 tables.
#include <set>
#include <tuple>

#include "cm_client.h"

namespace softib::testing::cm_apm_test {
namespace {

constexpr uint64_t kService = 0x0000000000A1B2C3;
// Local ACK timeout 2^(PacketLifeTime+1) * 4.096 us = 8.4 ms: retries on a dead link run
// out in well under a second, and a loaded machine does not retransmit for nothing.
constexpr uint8_t kLifeTime = 10;

const uint8_t* Msg(const abi::CepGetEventOut& e) { return e.mad + 24; }

struct TwoPathPair {
  explicit TwoPathPair(const char* name) {
    stack::NodeConfig config;
    config.name = name;
    config.cas = {stack::CaConfig(0, 2), stack::CaConfig(0, 2)};
    Status status;
    node = stack::NodeStack::Boot(config, &status);
    EXPECT_EQ(status, Status::SUCCESS);
    if (!node) return;
    guid_a = node->ca_guids()[0];
    guid_b = node->ca_guids()[1];
    EXPECT_EQ(node->CablePorts(guid_a, 2, guid_b, 2), Status::SUCCESS);
  }
  // Builds both sides, learns the four LIDs, takes the QPs to INIT on port 1.
  void Open(Client& client) {
    abi::QueryCaOut ca{};
    std::vector<abi::PortAttributes> ports;
    ASSERT_NO_FATAL_FAILURE(client.Build(guid_a, 0, &a));
    ASSERT_NO_FATAL_FAILURE(client.Build(guid_b, 0, &b));
    ASSERT_EQ(client.QueryCa(a.ca, &ca, &ports), Status::SUCCESS);
    a1 = ports[0].lid;
    a2 = ports[1].lid;
    ASSERT_EQ(ports[1].link_state, 4);
    ASSERT_EQ(client.QueryCa(b.ca, &ca, &ports), Status::SUCCESS);
    b1 = ports[0].lid;
    b2 = ports[1].lid;
    ASSERT_NE(a2, 0);
    ASSERT_NE(b2, 0);
    a.lid = a1;
    b.lid = b1;
    ASSERT_NO_FATAL_FAILURE(InitQp(client, a));
    ASSERT_NO_FATAL_FAILURE(InitQp(client, b));
  }
  std::unique_ptr<stack::NodeStack> node;
  uint64_t guid_a = 0, guid_b = 0;
  uint16_t a1 = 0, a2 = 0, b1 = 0, b2 = 0;
  Side a, b;
};

// REQ (with or without an alternate path), REP, RTU; both QPs to RTS from their CEPs.
void Connect(Client& client, TwoPathPair& pair, bool alternate, uint64_t* active, uint64_t* passive,
             uint64_t* listen) {
  *listen = CreateCep(client, 0x1);
  ASSERT_EQ(Listen(client, *listen, kService), Status::SUCCESS);
  *active = CreateCep(client, 0x2);
  abi::CmReqParams p = ReqParams(kService, pair.a1, pair.b1);
  const auto primary = PathRecordBytes(pair.a1, pair.b1, kLifeTime);
  std::memcpy(p.primary_path, primary.data(), primary.size());
  if (alternate) {
    const auto alt = PathRecordBytes(pair.a2, pair.b2, kLifeTime);
    std::memcpy(p.alternate_path, alt.data(), alt.size());
  }
  ASSERT_EQ(SendReq(client, *active, pair.a.qp, p), Status::SUCCESS);
  abi::CepGetEventOut req{};
  ASSERT_TRUE(NextCepEvent(client, *listen, &req));
  ASSERT_EQ(req.event, abi::CepEventType::REQ_RECEIVED);
  *passive = req.new_cep.value;
  if (alternate) {
    EXPECT_EQ(Be(Msg(req) + 96, 2), pair.a2);      // AlternateLocalPortLID
    EXPECT_EQ(Be(Msg(req) + 98, 2), pair.b2);      // AlternateRemotePortLID
    EXPECT_EQ(Msg(req)[139] >> 3, kLifeTime + 1);  // AlternateLocalACKTimeout
  }
  ASSERT_EQ(SendRep(client, *passive, pair.b.qp, RepParams()), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, *active), abi::CepEventType::REP_RECEIVED);
  abi::QpModifyAttributes rtr{}, rts{};
  ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, *active, pair.a, &rtr, &rts));
  EXPECT_EQ(abi::HasAny(rtr.mask, abi::QpAttrMask::ALT_PATH), alternate);
  EXPECT_EQ(abi::HasAny(rts.mask, abi::QpAttrMask::PATH_MIG_STATE), alternate);
  if (alternate) {
    EXPECT_EQ(rtr.alt_port_num, 2);
    EXPECT_EQ(rtr.alt_av.dlid, pair.b2);
    EXPECT_EQ(rtr.alt_timeout, kLifeTime + 1);
    EXPECT_EQ(rts.path_mig_state, abi::ApmState::REARM);
  }
  ASSERT_EQ(kernel::IbCepSendRtu(client.al(), {{*active}, 0, 0}, {}), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, *passive), abi::CepEventType::RTU_RECEIVED);
  ASSERT_NO_FATAL_FAILURE(ApplyCepAttributes(client, *passive, pair.b, &rtr, &rts));
  if (alternate) {
    EXPECT_EQ(rtr.alt_port_num, 2);
    EXPECT_EQ(rtr.alt_av.dlid, pair.a2);
  }
}

abi::QpAttributes Query(Client& client, const Side& side) {
  abi::QueryQpOut out{};
  EXPECT_EQ(client.QueryQp({{side.qp}}, &out), Status::SUCCESS);
  return out.attributes;
}

// LAP from the active side with the port-2 path, APR(success) from the passive side, both
// QPs loading it RTS -> RTS from their CEPs' RTS attributes.
void LoadAlternateByLap(Client& client, TwoPathPair& pair, uint64_t active, uint64_t passive) {
  abi::CepSendLapIn lap_in{};
  lap_in.cep.value = active;
  const auto alt = PathRecordBytes(pair.a2, pair.b2, kLifeTime);
  std::memcpy(lap_in.alternate_path, alt.data(), alt.size());
  lap_in.remote_cm_response_timeout = 17;
  lap_in.private_data_length = 3;
  ASSERT_EQ(kernel::IbCepSendLap(client.al(), lap_in, Bytes("lap")), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendLap(client.al(), lap_in, Bytes("lap")), Status::INVALID_STATE);

  // LAP (IBA 12.6.12 / 12.8.1).
  abi::CepGetEventOut lap{};
  ASSERT_TRUE(NextCepEvent(client, passive, &lap));
  ASSERT_EQ(lap.event, abi::CepEventType::LAP_RECEIVED);
  EXPECT_EQ(Be(lap.mad + 16, 2), 0x0019u);
  const uint8_t* m = Msg(lap);
  const uint32_t active_id = Be(m + 0, 4);
  const uint32_t passive_id = Be(m + 4, 4);
  EXPECT_NE(active_id, 0u);
  EXPECT_NE(passive_id, 0u);
  EXPECT_EQ(Be(m + 8, 4), 0u);             // reserved
  EXPECT_EQ(Be(m + 12, 3), pair.b.qpn);    // RemoteQPN
  EXPECT_EQ(m[15], 17 << 3);               // RemoteCMResponseTimeout
  EXPECT_EQ(Be(m + 20, 2), pair.a2);       // AlternateLocalPortLID
  EXPECT_EQ(Be(m + 22, 2), pair.b2);       // AlternateRemotePortLID
  EXPECT_EQ(m[61] & 0x3F, 3);              // AlternatePacketRate
  EXPECT_EQ(m[62], 0 << 4 | 1 << 3);       // SL 0, SubnetLocal
  EXPECT_EQ(m[63], (kLifeTime + 1) << 3);  // AlternateLocalACKTimeout
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 64), 3), "lap");

  abi::CepSendAprIn apr_in{};
  apr_in.cep.value = passive;
  apr_in.status = 0;  // success
  apr_in.info_length = 2;
  apr_in.info[0] = 0xAB;
  apr_in.info[1] = 0xCD;
  apr_in.private_data_length = 3;
  ASSERT_EQ(kernel::IbCepSendApr(client.al(), apr_in, Bytes("apr")), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendApr(client.al(), apr_in, Bytes("apr")), Status::INVALID_STATE);

  // APR (IBA 12.6.13 / 12.8.2).
  abi::CepGetEventOut apr{};
  ASSERT_TRUE(NextCepEvent(client, active, &apr));
  ASSERT_EQ(apr.event, abi::CepEventType::APR_RECEIVED);
  EXPECT_EQ(Be(apr.mad + 16, 2), 0x001Au);
  m = Msg(apr);
  EXPECT_EQ(Be(m + 0, 4), passive_id);
  EXPECT_EQ(Be(m + 4, 4), active_id);
  EXPECT_EQ(m[8], 2);  // AdditionalInfoLength
  EXPECT_EQ(m[9], 0);  // APStatus: success
  EXPECT_EQ(m[12], 0xAB);
  EXPECT_EQ(m[13], 0xCD);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m + 84), 3), "apr");

  for (auto [cep, side, dlid] :
       {std::tuple{active, &pair.a, pair.b2}, std::tuple{passive, &pair.b, pair.a2}}) {
    abi::CepGetRtsAttributesOut rts{};
    ASSERT_EQ(kernel::IbCepGetRtsAttributes(client.al(), {{cep}}, rts), Status::SUCCESS);
    EXPECT_EQ(rts.attributes.mask,
              abi::QpAttrMask::STATE | abi::QpAttrMask::ALT_PATH | abi::QpAttrMask::PATH_MIG_STATE);
    EXPECT_EQ(rts.attributes.alt_port_num, 2);
    EXPECT_EQ(rts.attributes.alt_av.dlid, dlid);
    EXPECT_EQ(rts.attributes.path_mig_state, abi::ApmState::REARM);
    ASSERT_EQ(client.ModifyQp({{side->qp}, rts.attributes}), Status::SUCCESS);
  }
}

// Writes 64 messages of 4 KiB from A to B, uncabling port 1 after the first 16: every
// write completes successfully with its data, and both QPs migrate to port 2.
void StreamThroughLinkLoss(Client& client, TwoPathPair& pair) {
  for (const Side* side : {&pair.a, &pair.b}) {
    const abi::QpAttributes q = Query(client, *side);
    EXPECT_EQ(q.path_mig_state, abi::ApmState::ARMED);
    EXPECT_EQ(q.port_num, 1);
    EXPECT_EQ(q.alt_port_num, 2);
  }
  constexpr uint32_t kLength = 4096, kCount = 64, kFirst = 16;
  Pattern(pair.a.buffer, 0, 1 << 16, 7);
  uint32_t posted = 0;
  for (uint32_t i = 0; i < kCount; ++i) {
    if (i == kFirst) {
      ASSERT_EQ(client.PollN(pair.a.cq, kFirst).size(), kFirst);
      ASSERT_EQ(pair.node->UncablePort(pair.guid_a, 1), Status::SUCCESS);
    }
    const uint32_t at = (i % 16) * kLength;
    auto wr = Write(pair.a, at, kLength, pair.b, at, i);
    wr.send_flags = abi::SendFlags::SIGNALED;
    ASSERT_EQ(kernel::IbPostSend(client.al(), pair.a.qp, {&wr, 1}, &posted), Status::SUCCESS);
  }
  const auto done = client.PollN(pair.a.cq, kCount - kFirst);
  ASSERT_EQ(done.size(), kCount - kFirst);
  for (const auto& wc : done) EXPECT_EQ(wc.status, abi::WcStatus::SUCCESS) << wc.wr_id;
  EXPECT_TRUE(std::equal(pair.a.buffer.begin(), pair.a.buffer.end(), pair.b.buffer.begin()));

  // QP_PATH_MIGRATED for each QP.
  std::set<uint64_t> migrated;
  for (int i = 0; i < 12 && migrated.size() < 2; ++i) {
    const abi::AsyncEventRecord r = NextAsync(client, client.al_handle());
    if (r.code == abi::AsyncEventType::QP_PATH_MIGRATED) {
      EXPECT_EQ(r.context, 0x9999u);
      migrated.insert(r.qp.value);
    } else {  // the port events of the cabling and of the loss
      EXPECT_TRUE(r.code == abi::AsyncEventType::PORT_DOWN ||
                  r.code == abi::AsyncEventType::PORT_ACTIVE)
          << static_cast<int>(r.code);
    }
  }
  EXPECT_EQ(migrated, (std::set<uint64_t>{pair.a.qp, pair.b.qp}));
  for (const Side* side : {&pair.a, &pair.b}) {
    const abi::QpAttributes q = Query(client, *side);
    EXPECT_EQ(q.state, abi::QpState::RTS);
    EXPECT_EQ(q.path_mig_state, abi::ApmState::MIGRATED);
    EXPECT_EQ(q.port_num, 2);
    EXPECT_EQ(q.av.dlid, side == &pair.a ? pair.b2 : pair.a2);
  }
  // And back: B writes to A on the migrated path.
  Pattern(pair.b.buffer, 0, kLength, 9);
  auto back = Write(pair.b, 0, kLength, pair.a, 0, 99);
  back.send_flags = abi::SendFlags::SIGNALED;
  ASSERT_EQ(kernel::IbPostSend(client.al(), pair.b.qp, {&back, 1}, &posted), Status::SUCCESS);
  const auto wc = client.PollN(pair.b.cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(HasPattern(pair.a.buffer, 0, kLength, 9));
}

TEST(CmApm, AlternatePathFromTheReqCarriesTrafficThroughTheLossOfPort1) {
  TwoPathPair pair("cm-apm-req");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  uint64_t active = 0, passive = 0, listen = 0;
  ASSERT_NO_FATAL_FAILURE(Connect(client, pair, true, &active, &passive, &listen));
  ASSERT_NO_FATAL_FAILURE(StreamThroughLinkLoss(client, pair));
}

TEST(CmApm, AlternatePathLoadedByLapAprCarriesTrafficThroughTheLossOfPort1) {
  TwoPathPair pair("cm-apm-lap");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  uint64_t active = 0, passive = 0, listen = 0;
  ASSERT_NO_FATAL_FAILURE(Connect(client, pair, false, &active, &passive, &listen));
  EXPECT_EQ(Query(client, pair.a).path_mig_state, abi::ApmState::MIGRATED);  // nothing armed
  ASSERT_NO_FATAL_FAILURE(LoadAlternateByLap(client, pair, active, passive));
  ASSERT_NO_FATAL_FAILURE(StreamThroughLinkLoss(client, pair));
}

Status SendLap(Client& client, uint64_t cep, uint16_t slid, uint16_t dlid,
               uint8_t response_timeout) {
  abi::CepSendLapIn in{};
  in.cep.value = cep;
  const auto path = PathRecordBytes(slid, dlid, kLifeTime);
  std::memcpy(in.alternate_path, path.data(), path.size());
  in.remote_cm_response_timeout = response_timeout;
  return kernel::IbCepSendLap(client.al(), in, {});
}

Status SendApr(Client& client, uint64_t cep, uint8_t status) {
  abi::CepSendAprIn in{};
  in.cep.value = cep;
  in.status = status;
  return kernel::IbCepSendApr(client.al(), in, {});
}

// MRA for a LAP, then a refusing APR: nothing is loaded; a LAP to a LID the peer does not
// have is refused by the peer's CM itself (APR "invalid LID"); an unanswered LAP times out.
TEST(CmLap, MraRefusalUnknownLidAndTimeout) {
  TwoPathPair pair("cm-lap-edges");
  ASSERT_TRUE(pair.node);
  Client client(pair.node->node());
  ASSERT_NO_FATAL_FAILURE(pair.Open(client));
  uint64_t active = 0, passive = 0, listen = 0;
  ASSERT_NO_FATAL_FAILURE(Connect(client, pair, false, &active, &passive, &listen));
  EXPECT_EQ(SendLap(client, active, 0x77, pair.b2, 17), Status::INVALID_SETTING);  // not ours

  // MRA (IBA 12.6.6: MessageMRAed 2 = LAP), then APR "rejected".
  ASSERT_EQ(SendLap(client, active, pair.a2, pair.b2, 17), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, passive), abi::CepEventType::LAP_RECEIVED);
  abi::CepSendMraIn mra_in{};
  mra_in.cep.value = passive;
  mra_in.service_timeout = 20;
  ASSERT_EQ(kernel::IbCepSendMra(client.al(), mra_in, {}), Status::SUCCESS);
  EXPECT_EQ(kernel::IbCepSendMra(client.al(), mra_in, {}), Status::INVALID_STATE);
  abi::CepGetEventOut mra{};
  ASSERT_TRUE(NextCepEvent(client, active, &mra));
  ASSERT_EQ(mra.event, abi::CepEventType::MRA_RECEIVED);
  EXPECT_EQ(Msg(mra)[8] >> 6, 2);
  EXPECT_EQ(Msg(mra)[9] >> 3, 20);
  ASSERT_EQ(SendApr(client, passive, 3), Status::SUCCESS);  // rejected
  abi::CepGetEventOut apr{};
  ASSERT_TRUE(NextCepEvent(client, active, &apr));
  ASSERT_EQ(apr.event, abi::CepEventType::APR_RECEIVED);
  EXPECT_EQ(Msg(apr)[9], 3);
  abi::CepGetRtsAttributesOut rts{};
  ASSERT_EQ(kernel::IbCepGetRtsAttributes(client.al(), {{active}}, rts), Status::SUCCESS);
  EXPECT_FALSE(abi::HasAny(rts.attributes.mask, abi::QpAttrMask::ALT_PATH));

  // A path to a LID B does not have: B's CM answers APR "invalid LID" (7) on its own.
  ASSERT_EQ(SendLap(client, active, pair.a2, 0x77, 17), Status::SUCCESS);
  ASSERT_TRUE(NextCepEvent(client, active, &apr));
  ASSERT_EQ(apr.event, abi::CepEventType::APR_RECEIVED);
  EXPECT_EQ(Msg(apr)[9], 7);
  abi::CepGetEventOut none{};
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{passive}}, none), Status::CANCELED);

  // Nobody answers: the LAP is sent MaxCMRetries (3) more times, then LAP_TIMEOUT; the
  // connection stays up and a new LAP may follow.
  ASSERT_EQ(SendLap(client, active, pair.a2, pair.b2, 8), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, passive), abi::CepEventType::LAP_RECEIVED);
  EXPECT_EQ(NextEventType(client, active), abi::CepEventType::LAP_TIMEOUT);
  EXPECT_EQ(SendApr(client, passive, 0), Status::SUCCESS);  // too late: the active side ignores it
  ASSERT_EQ(SendLap(client, active, pair.a2, pair.b2, 17), Status::SUCCESS);
  ASSERT_EQ(NextEventType(client, passive), abi::CepEventType::LAP_RECEIVED);
  ASSERT_EQ(SendApr(client, passive, 0), Status::SUCCESS);
  EXPECT_EQ(NextEventType(client, active), abi::CepEventType::APR_RECEIVED);
  EXPECT_EQ(kernel::IbCepGetEvent(client.al(), {{active}}, none), Status::CANCELED);
}

}  // namespace
}  // namespace softib::testing::cm_apm_test

// Automatic path migration (IBA 17.2.8) in the device: ModifyQp's alternate path and
// migration state (checks, QueryQp), a requester whose retries on a dead primary path run
// out moving to the alternate, the responder following the first MigReq packet that
// arrives on its alternate path, QP_PATH_MIGRATED on both, and a migration the consumer
// asks for (MIGRATED on an ARMED QP). One port each: a's primary names a LID nobody has
// (the "dead" path), the alternate b's real LID.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "rc_fixture.h"

namespace softib::hca {
namespace {

using abi::ApmState;
using abi::AsyncEventType;
using abi::QpAttrMask;
using abi::QpState;
using abi::WrType;
using testing::RcOptions;
using testing::RcPair;
using testing::RcToState;

using Event = std::pair<AsyncEventType, uint32_t>;

abi::QpModifyAttributes LoadAlternate(uint16_t dlid, ApmState state, uint8_t port = 1) {
  abi::QpModifyAttributes a =
      RcToState(QpState::RTS, QpAttrMask::ALT_PATH | QpAttrMask::PATH_MIG_STATE);
  a.alt_av.dlid = dlid;
  a.alt_port_num = port;
  a.alt_pkey_index = 0;
  a.alt_timeout = 8;
  a.path_mig_state = state;
  return a;
}

abi::QpAttributes Query(testing::RcSide& side) {
  abi::QpAttributes q{};
  EXPECT_EQ(side.hca.QueryQp(side.qpn, &q), abi::Status::SUCCESS);
  return q;
}

TEST(Apm, ModifyQpChecksTheAlternatePathAndArmsIt) {
  RcPair p;
  abi::QpModifyAttributes arm = RcToState(QpState::RTS, QpAttrMask::PATH_MIG_STATE);
  arm.path_mig_state = ApmState::ARMED;
  EXPECT_EQ(p.a.hca.ModifyQp(p.a.qpn, arm), abi::Status::INVALID_SETTING);  // nothing to arm
  EXPECT_EQ(p.a.hca.ModifyQp(p.a.qpn, LoadAlternate(2, ApmState::REARM, 2)),
            abi::Status::INVALID_PORT);  // one port
  abi::QpModifyAttributes bad = LoadAlternate(2, ApmState::REARM);
  bad.alt_pkey_index = 1000;
  EXPECT_EQ(p.a.hca.ModifyQp(p.a.qpn, bad), abi::Status::INVALID_PKEY);
  bad = LoadAlternate(2, static_cast<ApmState>(3));
  EXPECT_EQ(p.a.hca.ModifyQp(p.a.qpn, bad), abi::Status::INVALID_SETTING);
  EXPECT_EQ(Query(p.a).path_mig_state, ApmState::MIGRATED);  // unchanged by the refusals

  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, LoadAlternate(2, ApmState::REARM)), abi::Status::SUCCESS);
  abi::QpAttributes q = Query(p.a);
  EXPECT_EQ(q.path_mig_state, ApmState::ARMED);  // nothing to synchronize: armed at once
  EXPECT_EQ(q.alt_port_num, 1);
  EXPECT_EQ(q.alt_av.dlid, 2);
  EXPECT_EQ(q.alt_av.port_num, 1);
  EXPECT_EQ(q.alt_timeout, 8);
  EXPECT_EQ(q.timeout, 10);
}

TEST(Apm, RetriesExhaustedOnThePrimaryMigrateBothEnds) {
  RcOptions options;
  options.retry_count = 2;
  RcPair p(options);
  std::vector<Event> events_a, events_b;
  p.a.hca.async_events = [&](const DeviceEvent& e) { events_a.emplace_back(e.type, e.object); };
  p.b.hca.async_events = [&](const DeviceEvent& e) { events_b.emplace_back(e.type, e.object); };
  // a's primary leads nowhere (LID 0x99); its alternate is b. b's alternate is a again.
  abi::QpModifyAttributes dead = RcToState(QpState::SQD);
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, dead), abi::Status::SUCCESS);
  abi::QpModifyAttributes repath = RcToState(QpState::SQD, QpAttrMask::AV);
  repath.av.port_num = 1;
  repath.av.dlid = 0x99;
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, repath), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, RcToState(QpState::RTS)), abi::Status::SUCCESS);
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, LoadAlternate(2, ApmState::REARM)), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, LoadAlternate(1, ApmState::REARM)), abi::Status::SUCCESS);

  testing::Fill(p.a.buffer, 0, 3000, 5);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 3000, 0, 7)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  const auto wcs = p.Poll(p.a);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, abi::WcStatus::SUCCESS);
  EXPECT_TRUE(testing::Matches(p.b.buffer, 0, 3000, 5));
  EXPECT_EQ(events_a, (std::vector<Event>{{AsyncEventType::QP_PATH_MIGRATED, p.a.qpn}}));
  EXPECT_EQ(events_b, (std::vector<Event>{{AsyncEventType::QP_PATH_MIGRATED, p.b.qpn}}));
  const abi::QpAttributes qa = Query(p.a);
  EXPECT_EQ(qa.path_mig_state, ApmState::MIGRATED);
  EXPECT_EQ(qa.av.dlid, 2);
  EXPECT_EQ(qa.alt_av.dlid, 0x99);  // the old primary, until a new alternate is loaded
  EXPECT_EQ(qa.timeout, 8);
  EXPECT_EQ(qa.alt_timeout, 10);
  EXPECT_EQ(Query(p.b).path_mig_state, ApmState::MIGRATED);
}

TEST(Apm, TheConsumerMigratesAnArmedQpAndThePeerFollowsItsMigReq) {
  RcPair p;
  std::vector<Event> events_b;
  p.b.hca.async_events = [&](const DeviceEvent& e) { events_b.emplace_back(e.type, e.object); };
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, LoadAlternate(2, ApmState::REARM)), abi::Status::SUCCESS);
  ASSERT_EQ(p.b.hca.ModifyQp(p.b.qpn, LoadAlternate(1, ApmState::REARM)), abi::Status::SUCCESS);
  // Armed, a's packets carry MigReq 0: b stays armed after traffic.
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 100, 0, 1)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(Query(p.b).path_mig_state, ApmState::ARMED);
  EXPECT_TRUE(events_b.empty());
  // a migrates by request; its next packet (MigReq 1) moves b.
  abi::QpModifyAttributes migrate = RcToState(QpState::RTS, QpAttrMask::PATH_MIG_STATE);
  migrate.path_mig_state = ApmState::MIGRATED;
  ASSERT_EQ(p.a.hca.ModifyQp(p.a.qpn, migrate), abi::Status::SUCCESS);
  EXPECT_EQ(Query(p.a).path_mig_state, ApmState::MIGRATED);
  ASSERT_EQ(p.a.hca.PostSend(p.a.qpn, p.Wr(WrType::RDMA_WRITE, 0, 100, 0, 2)),
            abi::Status::SUCCESS);
  ASSERT_TRUE(p.Run());
  EXPECT_EQ(Query(p.b).path_mig_state, ApmState::MIGRATED);
  EXPECT_EQ(events_b, (std::vector<Event>{{AsyncEventType::QP_PATH_MIGRATED, p.b.qpn}}));
  EXPECT_EQ(p.Poll(p.a).size(), 2u);
}

}  // namespace
}  // namespace softib::hca

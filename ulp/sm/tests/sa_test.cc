// The SA's record families against a subnet built from a fabric::Topology (no I/O):
// ComponentMask semantics, Get's one-record rule, status codes, the MAD bytes of answers
// (IBA 15.2.1.1 / 13.6.2.1 / the record tables of 15.2.5), PathRecord with LMC and
// selectors, ServiceRecord leases, MCMemberRecord create/join/leave, InformInfo and the
// trap 64/65 Reports, and the traps of SMAs forwarded to subscribers.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "../src/sa_internal.h"
#include "fabric/topology/generators.h"
#include "sa_query.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "softib/sm/sa.h"
#include "subnet_fixtures.h"

namespace softib::sm {
namespace {

using testing::Decode;
using testing::Hosts;
using testing::Lid;
using testing::Query;
using testing::Routed;

class SaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    subnet_ = Routed(fabric::DefaultTopology());
    sa_.set_subnet(&subnet_);
    hosts_ = Hosts(subnet_);
    ASSERT_EQ(hosts_.size(), 4u);
  }
  Subnet subnet_;
  SubnetAdmin sa_;
  std::vector<EndPort> hosts_;
};

TEST_F(SaTest, NodeRecordMaskSelectsOnlyTheMaskedFields) {
  Query<mad::NodeRecord> all;
  SaResult r = sa_.Query(all.Request(kSaMethodGetTable));
  EXPECT_EQ(r.status, kSaStatusOk);
  EXPECT_EQ(r.records.size(), 7u);  // 3 switches (port 0) + 4 HCA ports

  // A value in an unmasked field is ignored.
  Query<mad::NodeRecord> unmasked;
  unmasked.record.NodeGUID = 0x1234;
  EXPECT_EQ(sa_.Query(unmasked.Request(kSaMethodGetTable)).records.size(), 7u);

  Query<mad::NodeRecord> switches;
  switches.Set("NodeType", &mad::NodeRecord::NodeType, uint8_t{2});
  EXPECT_EQ(sa_.Query(switches.Request(kSaMethodGetTable)).records.size(), 3u);

  const EndPort h = hosts_[1];
  Query<mad::NodeRecord> by_lid;
  by_lid.Set("LID", &mad::NodeRecord::LID, Lid(subnet_, h));
  r = sa_.Query(by_lid.Request(kSaMethodGet));
  ASSERT_EQ(r.status, kSaStatusOk);
  ASSERT_EQ(r.records.size(), 1u);
  const auto rec = Decode<mad::NodeRecord>(r.records[0]);
  EXPECT_EQ(rec.LID, Lid(subnet_, h));
  EXPECT_EQ(rec.NodeGUID, subnet_.node(h.node).guid);
  EXPECT_EQ(rec.PortGUID, subnet_.node(h.node).ports[h.port].guid);
  EXPECT_EQ(rec.LocalPortNum, h.port);
  EXPECT_EQ(rec.NodeType, 1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(rec.NodeString.data())),
            subnet_.node(h.node).description);
}

TEST_F(SaTest, GetNeedsExactlyOneRecord) {
  Query<mad::NodeRecord> none;
  none.Set("LID", &mad::NodeRecord::LID, uint16_t{999});
  EXPECT_EQ(sa_.Query(none.Request(kSaMethodGet)).status, kSaStatusNoRecords);
  // GetTable with no match is a success with no records.
  SaResult t = sa_.Query(none.Request(kSaMethodGetTable));
  EXPECT_EQ(t.status, kSaStatusOk);
  EXPECT_TRUE(t.records.empty());
  Query<mad::NodeRecord> many;
  many.Set("NodeType", &mad::NodeRecord::NodeType, uint8_t{1});
  EXPECT_EQ(sa_.Query(many.Request(kSaMethodGet)).status, kSaStatusTooManyRecords);
}

TEST_F(SaTest, MethodAndAttributeErrors) {
  Query<mad::NodeRecord> q;
  EXPECT_EQ(sa_.Query(q.Request(kSaMethodSet)).status, kMadStatusAttributeUnsupported);
  EXPECT_EQ(sa_.Query(q.Request(kSaMethodDelete)).status, kMadStatusAttributeUnsupported);
  SaRequest unknown = q.Request(kSaMethodGet);
  unknown.attribute = 0x00EE;
  EXPECT_EQ(sa_.Query(unknown).status, kMadStatusAttributeUnsupported);
  SubnetAdmin idle;  // no sweep yet
  EXPECT_EQ(idle.Query(q.Request(kSaMethodGetTable)).status, kSaStatusNoResources);
}

// The request/answer MAD bytes (IBA 15.2.1.1: SA header, 13.6.2.1: RMPP header).
MadBytes SaMad(uint8_t method, uint16_t attribute, uint64_t mask) {
  MadBytes m{};
  m[0] = 1;
  m[1] = kClassSubnAdm;
  m[2] = kSaClassVersion;
  m[3] = method;
  for (int i = 0; i < 8; ++i)
    m[8 + i] = static_cast<uint8_t>(0x0102030405060708ull >> (56 - 8 * i));
  m[16] = static_cast<uint8_t>(attribute >> 8);
  m[17] = static_cast<uint8_t>(attribute);
  for (int i = 0; i < 8; ++i) m[48 + i] = static_cast<uint8_t>(mask >> (56 - 8 * i));
  return m;
}

TEST_F(SaTest, GetAnswerBytes) {
  const EndPort h = hosts_[0];
  const uint16_t lid = Lid(subnet_, h);
  MadBytes req = SaMad(kSaMethodGet, 0x0011, 1);  // NodeRecord, component 0 = LID
  req[56] = static_cast<uint8_t>(lid >> 8);
  req[57] = static_cast<uint8_t>(lid);
  MadAddress from;
  from.lid = lid;
  from.qpn = 1;
  const auto out = sa_.Handle(req, from, 0);
  ASSERT_EQ(out.size(), 1u);
  const MadBytes& m = out[0].mad;
  EXPECT_EQ(m[1], 0x03);
  EXPECT_EQ(m[2], 2);
  EXPECT_EQ(m[3], 0x81);                         // GetResp
  EXPECT_EQ(m[4] << 8 | m[5], 0);                // status
  EXPECT_EQ(std::memcmp(&m[8], &req[8], 8), 0);  // TID echoed
  EXPECT_EQ(m[16] << 8 | m[17], 0x0011);
  EXPECT_EQ(m[44] << 8 | m[45], 14);  // AttributeOffset: 108 bytes -> 112 / 8
  // NodeRecord (15.2.5.2): LID @0, NodeInfo @4 (NodeType @6, NumPorts @7, NodeGUID @16,
  // PortGUID @24, LocalPortNum @40), NodeDescription @44.
  const uint8_t* d = &m[56];
  EXPECT_EQ(d[0] << 8 | d[1], lid);
  EXPECT_EQ(d[4], 1);  // BaseVersion
  EXPECT_EQ(d[6], 1);  // CA
  EXPECT_EQ(d[7], subnet_.node(h.node).num_ports);
  uint64_t port_guid = 0;
  for (int i = 0; i < 8; ++i) port_guid = port_guid << 8 | d[24 + i];
  EXPECT_EQ(port_guid, subnet_.node(h.node).ports[h.port].guid);
  EXPECT_EQ(d[40], h.port);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d + 44)), subnet_.node(h.node).description);
  EXPECT_EQ(out[0].to.lid, lid);
  EXPECT_EQ(out[0].to.qpn, 1u);
  EXPECT_EQ(out[0].to.qkey, 0x80010000u);
  EXPECT_EQ(out[0].to.length, 0);  // the whole MAD
}

TEST_F(SaTest, GetTableAnswerIsOneRmppSegmentOfWholeRecords) {
  const MadBytes req = SaMad(kSaMethodGetTable, 0x0011, 0);
  const auto out = sa_.Handle(req, MadAddress{1, 1, 0, 0, 0}, 0);
  ASSERT_EQ(out.size(), 1u);
  const MadBytes& m = out[0].mad;
  EXPECT_EQ(m[3], 0x92);                                         // GetTableResp
  EXPECT_EQ(m[24], 1);                                           // RMPPVersion
  EXPECT_EQ(m[25], 1);                                           // DATA
  EXPECT_EQ(m[26] & 0x7, 0x7);                                   // Active | First | Last
  EXPECT_EQ(m[28] << 24 | m[29] << 16 | m[30] << 8 | m[31], 1);  // SegmentNumber
  // 7 NodeRecords exist; one 112-byte stride fits the 200 bytes of SAData.
  EXPECT_EQ(m[32] << 24 | m[33] << 16 | m[34] << 8 | m[35], 20 + 112);
  EXPECT_EQ(out[0].to.length, 56 + 112);
  EXPECT_EQ(sa_.stats().truncated_tables, 1u);
  EXPECT_EQ(sa_.stats().records_dropped, 6u);

  // LinkRecords are 6 bytes (stride 8): 25 fit; the default fabric has 8 links = 16 records.
  const auto links = sa_.Handle(SaMad(kSaMethodGetTable, 0x0020, 0), MadAddress{1, 1, 0, 0, 0}, 0);
  EXPECT_EQ(links[0].mad[45], 1);
  EXPECT_EQ(links[0].to.length, 56 + 16 * 8);

  // Every path of the fabric (no end named): three 64-byte PathRecords fit.
  const auto paths = sa_.Handle(SaMad(kSaMethodGetTable, 0x0035, 0), MadAddress{1, 1, 0, 0, 0}, 0);
  EXPECT_EQ(paths[0].mad[4] << 8 | paths[0].mad[5], 0);
  EXPECT_EQ(paths[0].to.length, 56 + 3 * 64);
}

TEST_F(SaTest, HeaderErrors) {
  MadBytes bad = SaMad(kSaMethodGet, 0x0011, 0);
  bad[2] = 1;  // SA class version 2 only
  auto out = sa_.Handle(bad, MadAddress{}, 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].mad[4] << 8 | out[0].mad[5], kMadStatusBadVersion);
  out = sa_.Handle(SaMad(0x03 /* Send */, 0x0011, 0), MadAddress{}, 0);
  EXPECT_EQ(out[0].mad[4] << 8 | out[0].mad[5], kMadStatusMethodUnsupported);
  // Responses (RMPP ACKs, answers) are not answered.
  EXPECT_TRUE(sa_.Handle(SaMad(0x92, 0x0011, 0), MadAddress{}, 0).empty());
}

TEST_F(SaTest, PortInfoRecordCapabilityMaskIsBitwise) {
  subnet_.node(subnet_.sm_node).ports[0].info.CapabilityMask |= 0x2;  // IsSM
  Query<mad::PortInfoRecord> is_sm;
  is_sm.Set("CapabilityMask", &mad::PortInfoRecord::CapabilityMask, uint32_t{0x2});
  const SaResult r = sa_.Query(is_sm.Request(kSaMethodGetTable));
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(Decode<mad::PortInfoRecord>(r.records[0]).EndportLID,
            subnet_.node(subnet_.sm_node).ports[0].lid);
  Query<mad::PortInfoRecord> all;
  std::size_t ports = 0;
  for (const SmNode& n : subnet_.nodes())
    for (uint8_t p = n.is_switch() ? 0 : 1; p <= n.num_ports; ++p) ports += n.ports[p].known;
  EXPECT_EQ(sa_.Query(all.Request(kSaMethodGetTable)).records.size(), ports);
}

TEST_F(SaTest, SwitchLinkAndLftRecords) {
  Query<mad::SwitchInfoRecord> swi;
  EXPECT_EQ(sa_.Query(swi.Request(kSaMethodGetTable)).records.size(), 3u);
  Query<mad::LinkRecord> lr;
  EXPECT_EQ(sa_.Query(lr.Request(kSaMethodGetTable)).records.size(), 2 * subnet_.LinkCount());
  const NodeId sw = subnet_.sm_node;
  Query<mad::LinearForwardingTableRecord> lft;
  lft.Set("LID", &mad::LinearForwardingTableRecord::LID, subnet_.node(sw).ports[0].lid);
  const SaResult r = sa_.Query(lft.Request(kSaMethodGet));
  ASSERT_EQ(r.status, kSaStatusOk);
  const auto rec = Decode<mad::LinearForwardingTableRecord>(r.records[0]);
  for (std::size_t lid = 0; lid < subnet_.node(sw).lft.size(); ++lid)
    EXPECT_EQ(rec.Port[lid], subnet_.node(sw).lft[lid]) << lid;
  EXPECT_EQ(rec.Port[63], kNoPort);
}

TEST_F(SaTest, PathRecordBetweenHostsBehindDifferentLeaves) {
  const EndPort a = hosts_.front(), b = hosts_.back();
  Query<mad::PathRecord> q;
  q.Set("SLID", &mad::PathRecord::SLID, Lid(subnet_, a));
  q.Set("DLID", &mad::PathRecord::DLID, Lid(subnet_, b));
  const SaResult r = sa_.Query(q.Request(kSaMethodGet));
  ASSERT_EQ(r.status, kSaStatusOk);
  const auto pr = Decode<mad::PathRecord>(r.records[0]);
  EXPECT_EQ(pr.SGID, sa_.GidOf(a));
  EXPECT_EQ(pr.DGID, sa_.GidOf(b));
  EXPECT_TRUE(pr.Reversible);
  EXPECT_EQ(pr.P_Key, 0xFFFF);
  EXPECT_EQ(pr.MTU, 5);   // 4096 on every link
  EXPECT_EQ(pr.Rate, 7);  // 4x QDR = 40 Gb/s
  // Bytes (15.2.5.16): DLID @40, SLID @42, Reversible|NumbPath @49, MTU @54, Rate @55.
  const auto& d = r.records[0];
  EXPECT_EQ(d[40] << 8 | d[41], Lid(subnet_, b));
  EXPECT_EQ(d[42] << 8 | d[43], Lid(subnet_, a));
  EXPECT_EQ(d[49], 0x80);
  EXPECT_EQ(d[54], 0x85);  // selector "exactly", 4096
  EXPECT_EQ(d[55], 0x87);  // selector "exactly", 40 Gb/s
  EXPECT_EQ(d[56], 0x92);  // selector "exactly", lifetime 18

  // The same path asked by GIDs.
  Query<mad::PathRecord> by_gid;
  by_gid.Set("SGID", &mad::PathRecord::SGID, sa_.GidOf(a));
  by_gid.Set("DGID", &mad::PathRecord::DGID, sa_.GidOf(b));
  const SaResult g = sa_.Query(by_gid.Request(kSaMethodGet));
  ASSERT_EQ(g.status, kSaStatusOk);
  EXPECT_EQ(g.records[0], r.records[0]);

  Query<mad::PathRecord> unknown;
  unknown.Set("DGID", &mad::PathRecord::DGID, MakeGid(0xfe80000000000000ull, 0xdead));
  EXPECT_EQ(sa_.Query(unknown.Request(kSaMethodGet)).status, kSaStatusInvalidGid);
}

TEST_F(SaTest, PathRecordSelectors) {
  const EndPort a = hosts_.front(), b = hosts_.back();
  auto ask = [&](std::string_view sel_name, auto sel_member, uint8_t sel, std::string_view name,
                 auto member, uint8_t value) {
    Query<mad::PathRecord> q;
    q.Set("SLID", &mad::PathRecord::SLID, Lid(subnet_, a));
    q.Set("DLID", &mad::PathRecord::DLID, Lid(subnet_, b));
    q.Set(sel_name, sel_member, sel);
    q.Set(name, member, value);
    return sa_.Query(q.Request(kSaMethodGetTable)).records.size();
  };
  using PR = mad::PathRecord;
  EXPECT_EQ(ask("MTUSelector", &PR::MTUSelector, 0, "MTU", &PR::MTU, 4), 1u);  // > 2048
  EXPECT_EQ(ask("MTUSelector", &PR::MTUSelector, 0, "MTU", &PR::MTU, 5), 0u);  // > 4096
  EXPECT_EQ(ask("MTUSelector", &PR::MTUSelector, 2, "MTU", &PR::MTU, 5), 1u);
  EXPECT_EQ(ask("RateSelector", &PR::RateSelector, 1, "Rate", &PR::Rate, 7), 0u);   // < 40
  EXPECT_EQ(ask("RateSelector", &PR::RateSelector, 1, "Rate", &PR::Rate, 10), 1u);  // < 120
  EXPECT_EQ(ask("RateSelector", &PR::RateSelector, 3, "Rate", &PR::Rate, 0), 1u);   // largest
  // A partition other than the default has no path unless both ends hold its P_Key.
  Query<PR> pkey;
  pkey.Set("SLID", &PR::SLID, Lid(subnet_, a));
  pkey.Set("DLID", &PR::DLID, Lid(subnet_, b));
  pkey.Set("P_Key", &PR::P_Key, uint16_t{0x8001});
  EXPECT_EQ(sa_.Query(pkey.Request(kSaMethodGet)).status, kSaStatusNoRecords);
  subnet_.node(a.node).ports[a.port].pkeys = {0xFFFF, 0x8001};
  EXPECT_EQ(sa_.Query(pkey.Request(kSaMethodGet)).status, kSaStatusNoRecords);  // b lacks it
  subnet_.node(b.node).ports[b.port].pkeys = {0xFFFF, 0x0001};                  // limited
  const auto answer = sa_.Query(pkey.Request(kSaMethodGet));
  ASSERT_EQ(answer.status, kSaStatusOk);
  ASSERT_EQ(answer.records.size(), 1u);
  EXPECT_EQ(Decode<PR>(answer.records[0]).P_Key, 0x8001);
}

TEST(SaPath, LmcGivesAPathPerLidPairAndNumbPathLimits) {
  Subnet subnet = Routed(fabric::DefaultTopology(), 1);
  SubnetAdmin sa;
  sa.set_subnet(&subnet);
  const auto hosts = Hosts(subnet);
  const EndPort a = hosts.front(), b = hosts.back();
  Query<mad::PathRecord> q;
  q.Set("SGID", &mad::PathRecord::SGID, sa.GidOf(a));
  q.Set("DGID", &mad::PathRecord::DGID, sa.GidOf(b));
  SaResult r = sa.Query(q.Request(kSaMethodGetTable));
  ASSERT_EQ(r.records.size(), 4u);  // 2 SLIDs x 2 DLIDs
  // The diagonal comes first: base with base, base+1 with base+1.
  const uint16_t sa_lid = subnet.node(a.node).ports[a.port].lid;
  const uint16_t db_lid = subnet.node(b.node).ports[b.port].lid;
  EXPECT_EQ(Decode<mad::PathRecord>(r.records[0]).SLID, sa_lid);
  EXPECT_EQ(Decode<mad::PathRecord>(r.records[0]).DLID, db_lid);
  EXPECT_EQ(Decode<mad::PathRecord>(r.records[1]).SLID, sa_lid + 1);
  EXPECT_EQ(Decode<mad::PathRecord>(r.records[1]).DLID, db_lid + 1);
  q.Set("NumbPath", &mad::PathRecord::NumbPath, uint8_t{2});
  r = sa.Query(q.Request(kSaMethodGetTable));
  EXPECT_EQ(r.records.size(), 2u);
}

TEST_F(SaTest, ServiceRecordSetGetDeleteAndLease) {
  const Gid gid = sa_.GidOf(hosts_[0]);
  using SR = mad::ServiceRecord;
  Query<SR> set;
  set.Set("ServiceID", &SR::ServiceID, uint64_t{0x1000});
  EXPECT_EQ(sa_.Query(set.Request(kSaMethodSet)).status, kSaStatusInsufficientComponents);
  set.Set("ServiceGID", &SR::ServiceGID, gid);
  set.Set("ServiceLease", &SR::ServiceLease, uint32_t{10});
  std::memcpy(set.record.ServiceName.data(), "svc", 3);
  set.mask |= sa::ComponentBit(SR::Desc(), "ServiceName");
  SaResult r = sa_.Query(set.Request(kSaMethodSet, 0, 100.0));
  ASSERT_EQ(r.status, kSaStatusOk);
  EXPECT_EQ(sa_.services().size(), 1u);
  // Registering again refreshes, it does not duplicate.
  EXPECT_EQ(sa_.Query(set.Request(kSaMethodSet, 0, 100.0)).status, kSaStatusOk);
  EXPECT_EQ(sa_.services().size(), 1u);

  Query<SR> by_name;
  std::memcpy(by_name.record.ServiceName.data(), "svc", 3);
  by_name.mask = sa::ComponentBit(SR::Desc(), "ServiceName");
  r = sa_.Query(by_name.Request(kSaMethodGet, 0, 104.0));
  ASSERT_EQ(r.status, kSaStatusOk);
  EXPECT_EQ(Decode<SR>(r.records[0]).ServiceLease, 6u);  // seconds left
  Query<SR> other;
  std::memcpy(other.record.ServiceName.data(), "nope", 4);
  other.mask = by_name.mask;
  EXPECT_EQ(sa_.Query(other.Request(kSaMethodGet, 0, 104.0)).status, kSaStatusNoRecords);
  // The lease runs out.
  EXPECT_EQ(sa_.Query(by_name.Request(kSaMethodGet, 0, 111.0)).status, kSaStatusNoRecords);

  set.record.ServiceLease = 0xFFFFFFFF;
  ASSERT_EQ(sa_.Query(set.Request(kSaMethodSet, 0, 200.0)).status, kSaStatusOk);
  EXPECT_EQ(sa_.Query(by_name.Request(kSaMethodGet, 0, 1e9)).status, kSaStatusOk);
  EXPECT_EQ(sa_.Query(set.Request(kSaMethodDelete, 0, 1e9)).status, kSaStatusOk);
  EXPECT_TRUE(sa_.services().empty());
  EXPECT_EQ(sa_.Query(set.Request(kSaMethodDelete, 0, 1e9)).status, kSaStatusNoRecords);

  Query<SR> stranger;  // a GID nobody has
  stranger.Set("ServiceID", &SR::ServiceID, uint64_t{1});
  stranger.Set("ServiceGID", &SR::ServiceGID, MakeGid(0xfe80000000000000ull, 0xbad));
  EXPECT_EQ(sa_.Query(stranger.Request(kSaMethodSet)).status, kSaStatusInvalidGid);
}

TEST_F(SaTest, McMemberCreateJoinLeave) {
  using MC = mad::MCMemberRecord;
  Query<MC> create;
  create.Set("MGID", &MC::MGID, Gid{});
  create.Set("PortGID", &MC::PortGID, sa_.GidOf(hosts_[0]));
  create.Set("JoinState", &MC::JoinState, uint8_t{1});
  EXPECT_EQ(sa_.Query(create.Request(kSaMethodSet)).status, kSaStatusInsufficientComponents);
  create.Set("Q_Key", &MC::Q_Key, uint32_t{0x11111111});
  create.Set("P_Key", &MC::P_Key, uint16_t{0xFFFF});
  create.Set("SL", &MC::SL, uint8_t{0});
  create.Set("FlowLabel", &MC::FlowLabel, uint32_t{0});
  create.Set("TClass", &MC::TClass, uint8_t{0});
  create.Set("RateSelector", &MC::RateSelector, uint8_t{1});  // less than 40 Gb/s
  create.Set("Rate", &MC::Rate, uint8_t{7});
  SaResult r = sa_.Query(create.Request(kSaMethodSet));
  ASSERT_EQ(r.status, kSaStatusOk);
  const MC group = Decode<MC>(r.records[0]);
  EXPECT_EQ(group.MLID, 0xC000);
  EXPECT_EQ(group.MGID[0], 0xff);
  EXPECT_EQ(group.MGID[1], 0x12);
  EXPECT_EQ(group.MTU, 5);
  EXPECT_EQ(group.Rate, 4);  // 30 Gb/s: the largest below 40
  EXPECT_EQ(group.JoinState, 1);

  Query<MC> join;
  join.Set("MGID", &MC::MGID, group.MGID);
  join.Set("PortGID", &MC::PortGID, sa_.GidOf(hosts_[1]));
  join.Set("JoinState", &MC::JoinState, uint8_t{1});
  join.Set("Q_Key", &MC::Q_Key, uint32_t{0x22222222});  // not the group's
  EXPECT_EQ(sa_.Query(join.Request(kSaMethodSet)).status, kSaStatusReqInvalid);
  join.record.Q_Key = 0x11111111;
  join.Set("MTUSelector", &MC::MTUSelector, uint8_t{2});
  join.Set("MTU", &MC::MTU, uint8_t{5});
  r = sa_.Query(join.Request(kSaMethodSet));
  ASSERT_EQ(r.status, kSaStatusOk);
  EXPECT_EQ(Decode<MC>(r.records[0]).MLID, 0xC000);
  Query<MC> members;
  members.Set("MGID", &MC::MGID, group.MGID);
  EXPECT_EQ(sa_.Query(members.Request(kSaMethodGetTable)).records.size(), 2u);

  // Leave: both members; the group goes with the last one.
  Query<MC> leave = join;
  EXPECT_EQ(sa_.Query(leave.Request(kSaMethodDelete)).status, kSaStatusOk);
  EXPECT_EQ(sa_.groups().at(group.MGID).members.size(), 1u);
  leave.record.PortGID = sa_.GidOf(hosts_[0]);
  EXPECT_EQ(sa_.Query(leave.Request(kSaMethodDelete)).status, kSaStatusOk);
  EXPECT_TRUE(sa_.groups().empty());
  EXPECT_EQ(sa_.Query(leave.Request(kSaMethodDelete)).status, kSaStatusReqInvalid);
}

// An InformInfo subscription to generic traps (any type, QP1).
mad::InformInfo GenericSubscription(uint16_t trap, uint32_t producer, uint16_t lid_begin,
                                    uint16_t lid_end) {
  mad::InformInfo info;
  info.LIDRangeBegin = lid_begin;
  info.LIDRangeEnd = lid_end;
  info.IsGeneric = 1;
  info.Subscribe = 1;
  info.Type = 0xFFFF;
  info.TrapNumberDeviceID = trap;
  info.QPN = 1;
  info.ProducerTypeVendorID = producer;
  return info;
}

// SubnAdmSet(InformInfo) from `lid`; `data` holds the record while the request is used.
SaRequest InformSet(const mad::InformInfo& info, uint16_t lid,
                    std::array<uint8_t, kSaDataBytes>& data) {
  info.Pack(std::span<uint8_t>(data).first(mad::InformInfo::kSize));
  SaRequest r;
  r.method = kSaMethodSet;
  r.attribute = kSaAttrInformInfo;
  r.data = data;
  r.requester_lid = lid;
  return r;
}

TEST_F(SaTest, InformInfoSubscriptionAndTrap64Report) {
  const EndPort subscriber = hosts_[0];
  const uint16_t lid = Lid(subnet_, subscriber);
  mad::InformInfo info = GenericSubscription(64, 0xFFFFFF, 0xFFFF, 0);
  std::array<uint8_t, kSaDataBytes> data{};
  SaRequest r = InformSet(info, lid, data);
  ASSERT_EQ(sa_.Query(r).status, kSaStatusOk);
  ASSERT_EQ(sa_.subscriptions().size(), 1u);
  Query<mad::InformInfoRecord> iir;
  const SaResult records = sa_.Query(iir.Request(kSaMethodGetTable));
  ASSERT_EQ(records.records.size(), 1u);
  EXPECT_EQ(Decode<mad::InformInfoRecord>(records.records[0]).SubscriberGID, sa_.GidOf(subscriber));

  // The previous sweep lacked the last host: it came into service.
  Subnet before = subnet_;
  const EndPort newcomer = hosts_.back();
  before.node(newcomer.node).ports[newcomer.port].known = false;
  const auto reports = sa_.NoticesForChanges(before);
  ASSERT_EQ(reports.size(), 1u);
  const MadBytes& m = reports[0].mad;
  EXPECT_EQ(m[1], kClassSubnAdm);
  EXPECT_EQ(m[3], kSaMethodReport);
  EXPECT_EQ(m[17], kSaAttrNotice);
  mad::Notice notice;
  ASSERT_TRUE(
      notice.Unpack(std::span<const uint8_t>(m).subspan(kSaHeaderBytes, mad::Notice::kSize)));
  EXPECT_EQ(notice.IsGeneric, 1);
  EXPECT_EQ(notice.TrapNumberDeviceID, 64);
  mad::Trap64_65Details details;
  ASSERT_TRUE(details.Unpack(notice.DataDetails));
  EXPECT_EQ(details.GIDADDR, sa_.GidOf(newcomer));
  EXPECT_EQ(reports[0].to.lid, lid);
  // Trap 65 (the other way round) is not subscribed.
  Subnet after_loss = subnet_;
  sa_.set_subnet(&after_loss);
  after_loss.node(newcomer.node).ports[newcomer.port].known = false;
  EXPECT_TRUE(sa_.NoticesForChanges(subnet_).empty());
  sa_.set_subnet(&subnet_);

  info.Subscribe = 0;
  info.Pack(std::span<uint8_t>(data).first(mad::InformInfo::kSize));
  EXPECT_EQ(sa_.Query(r).status, kSaStatusOk);
  EXPECT_TRUE(sa_.subscriptions().empty());
  EXPECT_EQ(sa_.Query(r).status, kSaStatusReqInvalid);
}

// Traps from SMAs go on as Report(Notice) to the subscribers whose InformInfo matches
// (IBA 13.4.8.3): one Report per matching subscription, none for the others. The SmpNotice
// bytes are written from the spec's Notice table (13.4.8.2), not from the codec.
TEST_F(SaTest, TrapsFromSmasAreForwardedToMatchingSubscribers) {
  const auto subscribe = [&](const EndPort& who, uint16_t trap, uint32_t producer,
                             uint16_t lid_begin, uint16_t lid_end) {
    std::array<uint8_t, kSaDataBytes> data{};
    const mad::InformInfo info = GenericSubscription(trap, producer, lid_begin, lid_end);
    ASSERT_EQ(sa_.Query(InformSet(info, Lid(subnet_, who), data)).status, kSaStatusOk);
  };
  const EndPort issuer = hosts_[2];
  const uint16_t issuer_lid = Lid(subnet_, issuer);
  subscribe(hosts_[0], 256, 0xFFFFFF, 0xFFFF, 0);  // every bad M_Key
  subscribe(hosts_[1], 0xFFFF, 1, issuer_lid, 0);  // anything a CA at that LID says
  subscribe(hosts_[3], 257, 0xFFFFFF, 0xFFFF, 0);  // another trap number
  subscribe(hosts_[3], 0xFFFF, 2, 0xFFFF, 0);      // switches only
  subscribe(hosts_[3], 0xFFFF, 0xFFFFFF, issuer_lid + 1, issuer_lid + 3);  // other LIDs
  ASSERT_EQ(sa_.subscriptions().size(), 5u);

  // Trap 256 from a CA port: IsGeneric 1 | Type 2, ProducerType 1, TrapNumber 256,
  // IssuerLID, NoticeCount 1, details from byte 10 (here: LIDADDR at detail byte 2).
  std::array<uint8_t, 64> trap{};
  trap[0] = 0x82;
  trap[3] = 1;
  trap[4] = 0x01;
  trap[5] = 0x00;
  trap[6] = static_cast<uint8_t>(issuer_lid >> 8);
  trap[7] = static_cast<uint8_t>(issuer_lid);
  trap[9] = 1;
  trap[12] = trap[6];
  trap[13] = trap[7];
  const auto reports = sa_.ForwardTrap(trap);
  ASSERT_EQ(reports.size(), 2u);
  std::set<uint16_t> to;
  std::set<uint64_t> tids;
  for (const SaOutgoing& r : reports) {
    to.insert(r.to.lid);
    const MadBytes& m = r.mad;
    EXPECT_EQ(m[1], kClassSubnAdm);
    EXPECT_EQ(m[2], 2);
    EXPECT_EQ(m[3], kSaMethodReport);
    EXPECT_EQ(m[16] << 8 | m[17], kSaAttrNotice);
    uint64_t tid = 0;
    for (int b = 0; b < 8; ++b) tid = tid << 8 | m[8 + b];
    tids.insert(tid);
    EXPECT_EQ(r.to.qpn, 1u);
    EXPECT_EQ(r.to.qkey, 0x80010000u);
    // The Notice: the trap's 64 bytes unchanged, then IssuerGID (the issuer's port GID).
    EXPECT_TRUE(std::equal(trap.begin(), trap.end(), m.begin() + kSaHeaderBytes));
    const Gid gid = sa_.GidOf(issuer);
    EXPECT_TRUE(std::equal(gid.begin(), gid.end(), m.begin() + kSaHeaderBytes + 64));
  }
  EXPECT_EQ(to, (std::set<uint16_t>{Lid(subnet_, hosts_[0]), Lid(subnet_, hosts_[1])}));
  EXPECT_EQ(tids.size(), 2u) << "a TID per Report";

  // A vendor-specific notice (IsGeneric 0) matches none of these generic subscriptions.
  trap[0] = 0x02;
  EXPECT_TRUE(sa_.ForwardTrap(trap).empty());
  EXPECT_TRUE(sa_.ForwardTrap(std::span<const uint8_t>(trap).first(10)).empty()) << "too short";
}

// Garbage in every attribute, method and mask: one well-formed answer each, never a crash
// and never a change the answer does not report.
TEST_F(SaTest, RandomRequestsGetWellFormedAnswers) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  const uint16_t attributes[] = {0x0001, 0x0003, 0x0011, 0x0012, 0x0014, 0x0015, 0x0020, 0x0030,
                                 0x0031, 0x0033, 0x0035, 0x0038, 0x003A, 0x00F3, 0x0099};
  const uint8_t methods[] = {0x01, 0x02, 0x03, 0x12, 0x14, 0x15};
  unsigned answers = 0, errors = 0;
  for (uint16_t attribute : attributes)
    for (uint8_t method : methods)
      for (int round = 0; round < 50; ++round) {
        MadBytes m = SaMad(method, attribute, round % 3 == 0 ? 0 : next());
        for (std::size_t i = kSaHeaderBytes; i < m.size(); i += 8) {
          const uint64_t v = round % 2 ? next() : 0;
          std::memcpy(&m[i], &v, std::min<std::size_t>(8, m.size() - i));
        }
        const auto out =
            sa_.Handle(m, MadAddress{Lid(subnet_, hosts_[round % 4]), 1, 0, 0, 0}, round);
        ASSERT_EQ(out.size(), 1u);
        const MadBytes& r = out[0].mad;
        EXPECT_TRUE(r[3] & 0x80);
        EXPECT_EQ(std::memcmp(&r[8], &m[8], 8), 0);
        EXPECT_LE(out[0].to.length, kMadBytes);
        ++answers;
        errors += (r[4] << 8 | r[5]) != 0;
      }
  EXPECT_EQ(answers, std::size(attributes) * std::size(methods) * 50);
  EXPECT_GT(errors, 0u);
  EXPECT_LT(errors, answers);
}

TEST(SaMatch, ComponentsCompareOnlyMaskedBits) {
  mad::PortInfoRecord a, b;
  a.LMC = 1;
  b.LMC = 2;
  a.PortNum = b.PortNum = 3;
  const auto& d = mad::PortInfoRecord::Desc();
  EXPECT_TRUE(sa::ComponentsMatch(d, sa::ComponentBit(d, "PortNum"), a.Pack(), b.Pack()));
  EXPECT_FALSE(sa::ComponentsMatch(d, sa::ComponentBit(d, "LMC"), a.Pack(), b.Pack()));
  EXPECT_TRUE(sa::ComponentsMatch(d, 0, a.Pack(), b.Pack()));
  EXPECT_EQ(sa::RateCode(2, 4), 7);      // 4x QDR
  EXPECT_EQ(sa::RateCode(1, 1), 2);      // 1x SDR
  EXPECT_EQ(sa::RateCode(8, 2), 8);      // 12x DDR = 60
  EXPECT_EQ(sa::RateCode(3, 1), 0);      // not a width
  EXPECT_EQ(sa::RateCode(2, 0, 2), 16);  // 4x EDR = 100
}

}  // namespace
}  // namespace softib::sm

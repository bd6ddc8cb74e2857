// The SM's subnet prefix (SmOptions::subnet_prefix, OpenSM's subnet_prefix): every heavy
// sweep writes it to PortInfo:GIDPrefix of every end port, a second SM with another prefix
// taking over an Active subnet rewrites it (the ports' GID_CHANGE), and the SA answers with
// the GIDs the ports hold and refuses the old ones. Against the in-memory fabric.
#include <gtest/gtest.h>

#include "fabric/topology/generators.h"
#include "fake_fabric.h"
#include "sa_query.h"
#include "softib/sm/subnet_manager.h"

namespace softib::sm::prefix_test {
namespace {

using testing::Decode;
using testing::FakeFabric;
using testing::Hosts;
using testing::Query;

constexpr uint64_t kPrefixP = 0xfec0000000000001ull;  // site-local, subnet 1
constexpr uint64_t kPrefixQ = 0xfec0000000000002ull;  // site-local, subnet 2

SmOptions Options(uint64_t prefix, bool fast = false) {
  SmOptions options;
  options.subnet_prefix = prefix;
  options.fast_bringup = fast;
  options.log = nullptr;
  options.tx.timeout_ms = 50;  // the fake answers at once; a lost SMP is a bug
  options.tx.retries = 0;
  return options;
}

uint64_t PortGuid(const Subnet& s, EndPort e) { return s.node(e.node).ports[e.port].guid; }

// A PathRecord Get from `a` to `b` by their GIDs with `prefix`.
SaResult PathByGids(SubnetAdmin& sa, const Subnet& s, EndPort a, EndPort b, uint64_t prefix) {
  Query<mad::PathRecord> q;
  q.Set("SGID", &mad::PathRecord::SGID, MakeGid(prefix, PortGuid(s, a)));
  q.Set("DGID", &mad::PathRecord::DGID, MakeGid(prefix, PortGuid(s, b)));
  return sa.Query(q.Request(kSaMethodGet));
}

// Every end port of the fabric holds `prefix`, and so does the SM's model of it (its nodes
// numbered in discovery order).
void ExpectPrefixEverywhere(const FakeFabric& fabric, const SubnetManager& sm, uint64_t prefix) {
  for (const EndPort& e : fabric.nodes().EndPorts()) {
    const SmNode& node = fabric.nodes().node(e.node);
    EXPECT_EQ(fabric.port_info(e.node, e.port).GIDPrefix, prefix)
        << node.description << " port " << int{e.port};
    const auto modelled = sm.subnet().Find(node.guid);
    ASSERT_TRUE(modelled) << node.description;
    EXPECT_EQ(sm.subnet().node(*modelled).ports[e.port].info.GIDPrefix, prefix)
        << node.description << " port " << int{e.port};
  }
}

unsigned LinkedPorts(const Subnet& s) { return static_cast<unsigned>(2 * s.LinkCount()); }

// The SA's GIDs: a PathRecord asked by GIDs with the ports' prefix answers those GIDs, one
// asked by LIDs answers them too; `stale` (another SM's prefix) names no port.
void ExpectSaGids(SubnetManager& sm, uint64_t prefix, uint64_t stale) {
  const Subnet& s = sm.subnet();
  const std::vector<EndPort> hosts = Hosts(s);
  ASSERT_GE(hosts.size(), 2u);
  const EndPort a = hosts.front(), b = hosts.back();
  const SaResult by_gid = PathByGids(sm.sa(), s, a, b, prefix);
  ASSERT_EQ(by_gid.status, kSaStatusOk);
  const auto pr = Decode<mad::PathRecord>(by_gid.records.at(0));
  EXPECT_EQ(pr.SGID, MakeGid(prefix, PortGuid(s, a)));
  EXPECT_EQ(pr.DGID, MakeGid(prefix, PortGuid(s, b)));
  // Bytes (15.2.5.16): DGID @8, SGID @24, the prefix first, big-endian.
  EXPECT_EQ(by_gid.records[0][8], prefix >> 56);
  EXPECT_EQ(by_gid.records[0][31], static_cast<uint8_t>(prefix));

  Query<mad::PathRecord> by_lid;
  by_lid.Set("SLID", &mad::PathRecord::SLID, testing::Lid(s, a));
  by_lid.Set("DLID", &mad::PathRecord::DLID, testing::Lid(s, b));
  const SaResult l = sm.sa().Query(by_lid.Request(kSaMethodGet));
  ASSERT_EQ(l.status, kSaStatusOk);
  EXPECT_EQ(l.records.at(0), by_gid.records[0]);

  EXPECT_EQ(PathByGids(sm.sa(), s, a, b, stale).status, kSaStatusInvalidGid);
  // Link-local GIDs name the subnet's ports whatever its prefix (IBA 4.1.1); the answer
  // carries the subnet's.
  const SaResult link_local = PathByGids(sm.sa(), s, a, b, kDefaultSubnetPrefix);
  ASSERT_EQ(link_local.status, kSaStatusOk);
  EXPECT_EQ(link_local.records.at(0), by_gid.records[0]);

  // A join names its port by GID too: the IPoIB broadcast group of the default partition.
  using MC = mad::MCMemberRecord;
  Query<MC> join;
  join.Set("MGID", &MC::MGID, MakeGid(0xff12401bffff0000ull, 0x00000000ffffffffull));
  join.Set("PortGID", &MC::PortGID, MakeGid(stale, PortGuid(s, a)));
  join.Set("JoinState", &MC::JoinState, uint8_t{1});
  EXPECT_EQ(sm.sa().Query(join.Request(kSaMethodSet)).status, kSaStatusInvalidGid);
  join.record.PortGID = MakeGid(prefix, PortGuid(s, a));
  const SaResult joined = sm.sa().Query(join.Request(kSaMethodSet));
  ASSERT_EQ(joined.status, kSaStatusOk);
  EXPECT_EQ(Decode<MC>(joined.records.at(0)).PortGID, join.record.PortGID);
}

TEST(SubnetPrefix, ASweepWritesItToEveryEndPortAndTheSaAnswersWithIt) {
  FakeFabric fabric(fabric::DefaultTopology());
  const std::vector<EndPort> hosts = Hosts(fabric.nodes());
  ASSERT_EQ(hosts.size(), 4u);
  for (const EndPort& e : fabric.nodes().EndPorts())
    ASSERT_EQ(fabric.port_info(e.node, e.port).GIDPrefix, kDefaultSubnetPrefix);
  auto port = fabric.Attach(hosts[0].node, hosts[0].port);
  SubnetManager sm(*port, Options(kPrefixP));
  const SweepReport report = sm.Sweep();
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(report.role, SmState::kMaster);
  EXPECT_EQ(report.configure.activated, LinkedPorts(fabric.nodes()));
  ExpectPrefixEverywhere(fabric, sm, kPrefixP);
  ExpectSaGids(sm, kPrefixP, kPrefixQ);
}

class SubnetPrefixTakeover : public ::testing::TestWithParam<bool> {};

// The new master finds every port Active with the LID it would give it: the LID Set phase
// still writes each end port once, with its prefix and its own LID as MasterSMLID.
TEST_P(SubnetPrefixTakeover, ASecondSmWithAnotherPrefixRewritesEveryPort) {
  const bool fast = GetParam();
  FakeFabric fabric(fabric::DefaultTopology());
  const std::vector<EndPort> hosts = Hosts(fabric.nodes());
  auto port_a = fabric.Attach(hosts[0].node, hosts[0].port);
  SubnetManager first(*port_a, Options(kPrefixP, fast));
  ASSERT_TRUE(first.Sweep().ok());
  ExpectPrefixEverywhere(fabric, first, kPrefixP);

  std::vector<std::pair<EndPort, unsigned>> sets_before;
  std::vector<uint16_t> lids_before;
  for (const EndPort& e : fabric.nodes().EndPorts()) {
    sets_before.emplace_back(e, fabric.port_info_sets(e.node, e.port));
    lids_before.push_back(fabric.port_info(e.node, e.port).LID);
  }
  auto port_b = fabric.Attach(hosts[2].node, hosts[2].port);
  SubnetManager second(*port_b, Options(kPrefixQ, fast));
  const SweepReport report = second.Sweep(/*take_over=*/true);
  ASSERT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(report.role, SmState::kMaster);
  EXPECT_EQ(report.configure.activated, 0u);  // nothing to activate: only the Sets differ
  EXPECT_EQ(report.lids.kept, 7u);
  ExpectPrefixEverywhere(fabric, second, kPrefixQ);
  const uint16_t second_lid = fabric.port_info(hosts[2].node, hosts[2].port).LID;
  for (std::size_t i = 0; i < sets_before.size(); ++i) {
    const auto& [e, sets] = sets_before[i];
    const mad::PortInfo& pi = fabric.port_info(e.node, e.port);
    EXPECT_EQ(fabric.port_info_sets(e.node, e.port), sets + 1) << i;
    EXPECT_EQ(pi.LID, lids_before[i]) << i;
    EXPECT_EQ(pi.MasterSMLID, second_lid) << i;
    EXPECT_EQ(pi.PortState, kPortActive) << i;
  }
  ExpectSaGids(second, kPrefixQ, kPrefixP);
}

INSTANTIATE_TEST_SUITE_P(DirectedAndFast, SubnetPrefixTakeover, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Fast" : "Directed"; });

TEST(SubnetPrefix, LegalForms) {
  EXPECT_EQ(SubnetPrefixError(kDefaultSubnetPrefix), "");
  EXPECT_EQ(SubnetPrefixError(0xfec0000000000000ull), "");
  EXPECT_EQ(SubnetPrefixError(0xfec000000000ffffull), "");  // site-local, subnet 0xffff
  EXPECT_EQ(SubnetPrefixError(0x20010db800000001ull), "");  // global
  EXPECT_NE(SubnetPrefixError(0), "");
  EXPECT_NE(SubnetPrefixError(0xff12401bffff0000ull), "");  // multicast
  EXPECT_NE(SubnetPrefixError(0xfe80000000000001ull), "");  // link-local, not zero-filled
  EXPECT_NE(SubnetPrefixError(0xfebf000000000000ull), "");  // fe80::/10 too
  EXPECT_NE(SubnetPrefixError(0xfec0000000010000ull), "");  // site-local beyond 16 bits
}

}  // namespace
}  // namespace softib::sm::prefix_test

// The partition file parser (good files, and bad ones with their line numbers), the P_Key
// table plan (membership bits, index 0 the default partition, SELF always full, switch
// ports that enforce), and joins that partitions allow or refuse. No I/O.
#include <gtest/gtest.h>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"
#include "softib/sm/partitions.h"
#include "softib/sm/sa.h"

namespace softib::sm {
namespace {

PartitionConfig Parse(std::string_view text) {
  PartitionConfig config;
  std::string error;
  EXPECT_TRUE(ParsePartitions(text, &config, &error)) << error;
  return config;
}

std::string ParseError(std::string_view text) {
  PartitionConfig config;
  std::string error;
  EXPECT_FALSE(ParsePartitions(text, &config, &error)) << text;
  return error;
}

TEST(PartitionFile, OpenSmSubset) {
  const PartitionConfig c = Parse(
      "# OpenSM-style\n"
      "storage=0x8002, ipoib, mtu=5, rate=7, sl=1 :\n"
      "   0x0002c90300a00010=full,\n"
      "   0x0002c90300a00020 ;   # limited by default\n"
      "Default=0x7fff,ipoib : ALL=limited, SELF=full ;\n"
      "mgmt=0x10,defmember=full : ALL_SWITCHES, ALL_CAS=limited;\n"
      "empty=0x11 : ;\n");
  ASSERT_EQ(c.partitions.size(), 4u);
  const Partition& def = c.partitions[0];  // the default partition comes first
  EXPECT_EQ(def.name, "Default");
  EXPECT_EQ(def.pkey, 0x7FFF);
  EXPECT_TRUE(def.ipoib);
  ASSERT_EQ(def.members.size(), 2u);
  EXPECT_EQ(def.members[0].kind, PartitionMember::Kind::kAll);
  EXPECT_FALSE(def.members[0].full);
  EXPECT_EQ(def.members[1].kind, PartitionMember::Kind::kSelf);
  EXPECT_TRUE(def.members[1].full);
  const Partition& storage = c.partitions[1];
  EXPECT_EQ(storage.pkey, 0x0002);  // bit 15 is the membership, not the key
  EXPECT_EQ(storage.line, 2);
  EXPECT_EQ(storage.mtu, 5);
  EXPECT_EQ(storage.rate, 7);
  EXPECT_EQ(storage.sl, 1);
  ASSERT_EQ(storage.members.size(), 2u);
  EXPECT_EQ(storage.members[0].guid, 0x0002c90300a00010ull);
  EXPECT_TRUE(storage.members[0].full);
  EXPECT_FALSE(storage.members[1].full);
  const Partition& mgmt = c.partitions[2];
  EXPECT_EQ(mgmt.members[0].kind, PartitionMember::Kind::kAllSwitches);
  EXPECT_TRUE(mgmt.members[0].full);  // defmember=full
  EXPECT_FALSE(mgmt.members[1].full);
  EXPECT_TRUE(c.partitions[3].members.empty());
}

TEST(PartitionFile, DefaultPartitionAddedWhenMissing) {
  const PartitionConfig c = Parse("a=0x1 : ALL ;");
  ASSERT_EQ(c.partitions.size(), 2u);
  EXPECT_EQ(c.partitions[0].pkey, kDefaultPKey);
  EXPECT_TRUE(c.partitions[0].members[0].full);
  const PartitionConfig none = Parse("# nothing\n\n");
  ASSERT_EQ(none.partitions.size(), 1u);
}

TEST(PartitionFile, ErrorsNameTheLine) {
  EXPECT_EQ(ParseError("a=0x1 : ALL ;\n\nb=0x0 : ALL ;"),
            "line 3: P_Key '0x0' is not a number in 0x0001..0x7fff");
  EXPECT_EQ(ParseError("a=0x1 : ALL ;\nb=0x2 : ALL"), "line 2: definition not ended by ';'");
  EXPECT_EQ(ParseError("a=0x1 ALL ;"), "line 1: expected 'Name=PKey : members ;'");
  EXPECT_EQ(ParseError("\n0x1 : ALL ;"), "line 2: expected Name=PKey before ':'");
  EXPECT_EQ(ParseError("a=0x1,jumbo : ALL ;"),
            "line 1: unknown or bad flag 'jumbo' (ipoib, mtu=1..5, rate=2..22, sl=0..15, "
            "defmember=full|limited)");
  EXPECT_EQ(ParseError("a=0x1,mtu=9 : ALL ;").substr(0, 28), "line 1: unknown or bad flag ");
  EXPECT_EQ(ParseError("a=0x1 : EVERYONE ;"),
            "line 1: member 'EVERYONE' is not ALL, SELF, ALL_CAS, ALL_SWITCHES or a port GUID");
  EXPECT_EQ(ParseError("a=0x1 : ALL=half ;"),
            "line 1: membership 'half' is not full, limited or both");
  EXPECT_EQ(ParseError("a=0x1 : ALL ;\n# c\nb=0x8001 : ALL ;"),
            "line 3: partition 'b' repeats a name or P_Key defined before");
  EXPECT_EQ(ParseError("a=0x1 : ALL ;\na=0x2 : ALL ;").substr(0, 7), "line 2:");
  EXPECT_EQ(ParseError("a=zz : ALL ;").substr(0, 16), "line 1: P_Key 'z");
}

// OpenSM's `mgid=` lines: one group per line (flags after commas), members before, between
// and after them; IP groups take the partition's P_Key and Q_Key 0x0b1b; scope= repeats.
TEST(PartitionFile, MulticastGroupLines) {
  const PartitionConfig c = Parse(
      "Default=0x7fff,ipoib:\n"
      "  mgid=ff12:401b::0707,sl=1   # an IPv4 group\n"
      "  mgid = ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=6,mtu=2,TClass=7,FlowLabel=0x12345\n"
      "  ALL=full;\n"
      "storage=0x0002,ipoib,mtu=5 : 0x10=full,\n"
      "  mgid=ff12:601b::16,scope=2,scope=5\n"
      "  0x11 ;\n");
  ASSERT_EQ(c.partitions.size(), 2u);
  const Partition& def = c.partitions[0];
  ASSERT_EQ(def.members.size(), 1u);
  EXPECT_TRUE(def.members[0].full);
  ASSERT_EQ(def.groups.size(), 2u);
  // ff12:401b:ffff::707: the default partition's full P_Key in bytes 4-5.
  const std::array<uint8_t, 16> ipv4{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0,    0,
                                     0,    0,    0,    0,    0,    0,    0x07, 0x07};
  EXPECT_EQ(def.groups[0].mgid, ipv4);
  EXPECT_EQ(def.groups[0].qkey, 0x0B1Bu);
  EXPECT_EQ(def.groups[0].sl, 1);
  EXPECT_EQ(def.groups[0].rate, 3);
  EXPECT_EQ(def.groups[0].mtu, 4);
  const std::array<uint8_t, 16> plain{0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
  EXPECT_EQ(def.groups[1].mgid, plain);  // not an IP group: no P_Key put in
  EXPECT_EQ(def.groups[1].qkey, 0xDEADBEEFu);
  EXPECT_EQ(def.groups[1].rate, 6);
  EXPECT_EQ(def.groups[1].mtu, 2);
  EXPECT_EQ(def.groups[1].tclass, 7);
  EXPECT_EQ(def.groups[1].flow_label, 0x12345u);

  const Partition& storage = c.partitions[1];
  ASSERT_EQ(storage.members.size(), 2u);
  EXPECT_EQ(storage.members[0].guid, 0x10u);
  EXPECT_EQ(storage.members[1].guid, 0x11u);
  ASSERT_EQ(storage.groups.size(), 2u);  // one per scope
  EXPECT_EQ(storage.groups[0].mgid[1], 0x12);
  EXPECT_EQ(storage.groups[1].mgid[1], 0x15);
  EXPECT_EQ(storage.groups[0].mgid[4], 0x80);  // 0x8002
  EXPECT_EQ(storage.groups[0].mgid[5], 0x02);
  EXPECT_EQ(storage.groups[0].mtu, 5);  // the partition's
  EXPECT_EQ(storage.groups[0].qkey, 0x0B1Bu);
}

TEST(PartitionFile, MulticastGroupErrorsNameTheirLine) {
  EXPECT_EQ(ParseError("a=0x1 :\n ALL,\n mgid=fe80::1\n ;"),
            "line 3: mgid 'fe80::1' is not a multicast GID (ff..)");
  EXPECT_EQ(ParseError("a=0x1 : mgid=ff12::zz ;"),
            "line 1: mgid 'ff12::zz' is not a multicast GID (ff..)");
  EXPECT_EQ(ParseError("a=0x1 :\n mgid=ff12:401b:8003::1\n ;"),
            "line 2: mgid 'ff12:401b:8003::1' carries another partition's P_Key");
  EXPECT_EQ(ParseError("a=0x1,mtu=5 :\n\n mgid=ff12:401b::1,mtu=4\n ;"),
            "line 3: IP group 'ff12:401b::1' must have its partition's rate and mtu");
  EXPECT_EQ(ParseError("a=0x1 : mgid=ff12::1,sl=16 ;").substr(0, 41),
            "line 1: unknown or bad group flag 'sl=16'");
  EXPECT_EQ(ParseError("a=0x1 : mgid=ff12::1 ;\nb=0x2 : mgid=ff12::1 ;"),
            "line 2: partition 'b' repeats a multicast group (mgid) defined before");
  // Two scopes that name the same group.
  EXPECT_EQ(ParseError("a=0x1 : mgid=ff12::1,scope=2 ;\nb=0x2 : mgid=ff15::1,scope=2 ;"),
            "line 2: partition 'b' repeats a multicast group (mgid) defined before");
}

Subnet DefaultSubnet() {
  // The SM on host-0001's port, as softib-sm runs under ibsim-run.
  const fabric::Topology topology = fabric::DefaultTopology();
  fabric::NodeIndex host = 0;
  for (fabric::NodeIndex i = 0; i < topology.nodes().size(); ++i)
    if (!topology.nodes()[i].is_switch()) {
      host = i;
      break;
    }
  Subnet subnet = SubnetFromTopology(topology, host, 1);
  EXPECT_TRUE(AssignLids(subnet, 0, nullptr).ok());
  for (SmNode& n : subnet.nodes())
    if (n.is_switch()) n.switch_info.PartitionEnforcementCap = 32;
  return subnet;
}

TEST(PKeyPlan, TablesFromMembership) {
  Subnet subnet = DefaultSubnet();
  std::vector<EndPort> cas;
  for (const EndPort& e : subnet.EndPorts())
    if (!subnet.node(e.node).is_switch()) cas.push_back(e);
  ASSERT_EQ(cas.size(), 4u);
  const uint64_t second = subnet.node(cas[1].node).ports[cas[1].port].guid;
  char text[256];
  std::snprintf(text, sizeof text,
                "Default=0x7fff : ALL=limited, SELF=full ;\n"
                "storage=0x0002 : 0x%016llx=full, SELF ;\n"
                "sw=0x0003 : ALL_SWITCHES=full ;\n",
                static_cast<unsigned long long>(second));
  const PKeyPlan plan = PlanPKeyTables(subnet, Parse(text));
  const EndPort self{subnet.sm_node, subnet.sm_port};
  EXPECT_EQ(plan.tables.at(self), (std::vector<uint16_t>{0xFFFF, 0x0002}));  // SELF full
  EXPECT_EQ(plan.tables.at(cas[1]), (std::vector<uint16_t>{0x7FFF, 0x8002}));
  EXPECT_EQ(plan.tables.at(cas[2]), (std::vector<uint16_t>{0x7FFF}));
  for (const EndPort& e : subnet.EndPorts()) {
    if (subnet.node(e.node).is_switch()) {
      EXPECT_EQ(plan.tables.at(e), (std::vector<uint16_t>{0x7FFF, 0x8003}));
    }
  }
  // Each host's leaf port enforces the host's keys.
  EXPECT_EQ(plan.enforce.size(), 4u);
  const SmPort& cable = subnet.node(cas[1].node).ports[cas[1].port];
  EXPECT_EQ(plan.tables.at({cable.peer, cable.peer_port}), (std::vector<uint16_t>{0x7FFF, 0x8002}));

  // No room on the switches: no enforcement; a table bigger than PartitionCap is cut.
  for (SmNode& n : subnet.nodes()) {
    if (n.is_switch()) n.switch_info.PartitionEnforcementCap = 0;
    n.node_info.PartitionCap = 1;
  }
  const PKeyPlan small = PlanPKeyTables(subnet, Parse(text));
  EXPECT_TRUE(small.enforce.empty());
  EXPECT_EQ(small.tables.at(cas[1]), (std::vector<uint16_t>{0x7FFF}));
  EXPECT_FALSE(small.warnings.empty());
}

TEST(PKeyPlan, HoldsPKey) {
  EXPECT_TRUE(HoldsPKey({0xFFFF}, 0x7FFF));
  EXPECT_TRUE(HoldsPKey({0x7FFF}, 0xFFFF));
  EXPECT_FALSE(HoldsPKey({0x7FFF}, 0xFFFF, true));
  EXPECT_FALSE(HoldsPKey({0xFFFF, 0}, 0x8002));
  EXPECT_FALSE(HoldsPKey({0, 0}, 0x0000));
}

// MCMemberRecord joins: a port may create or join a group only on a P_Key it holds.
TEST(PKeyPlan, JoinsRespectPartitions) {
  Subnet subnet = DefaultSubnet();
  std::vector<EndPort> cas;
  for (const EndPort& e : subnet.EndPorts())
    if (!subnet.node(e.node).is_switch()) cas.push_back(e);
  subnet.node(cas[0].node).ports[cas[0].port].pkeys = {0xFFFF, 0x8002};
  subnet.node(cas[1].node).ports[cas[1].port].pkeys = {0xFFFF};
  SubnetAdmin sa;
  sa.set_subnet(&subnet);
  auto join = [&](const EndPort& who, uint16_t pkey) {
    mad::MCMemberRecord rec;
    rec.MGID = MakeGid(0xff12401b80020000ull, 0x12345678ull);
    rec.PortGID = sa.GidOf(who);
    rec.Q_Key = 0x1234;
    rec.P_Key = pkey;
    rec.JoinState = 1;
    SaRequest r;
    r.method = kSaMethodSet;
    r.attribute = mad::MCMemberRecord::kAttributeId;
    // ComponentMask bits of 15.2.5.17: MGID 0, PortGID 1, Q_Key 2, TClass 6, P_Key 7, SL 12,
    // FlowLabel 13, JoinState 16.
    for (unsigned bit : {0, 1, 2, 6, 7, 12, 13, 16}) r.component_mask |= uint64_t{1} << bit;
    std::array<uint8_t, kSaDataBytes> data{};
    rec.Pack(std::span<uint8_t>(data).first(mad::MCMemberRecord::kSize));
    r.data = data;
    return sa.Query(r).status;
  };
  EXPECT_EQ(join(cas[1], 0x8002), kSaStatusReqInvalid);  // creator not in the partition
  EXPECT_EQ(sa.mcast_changes(), 0u);
  const uint64_t before = sa.mcast_changes();
  EXPECT_EQ(join(cas[0], 0x8002), kSaStatusOk);
  EXPECT_EQ(sa.mcast_changes(), before + 1);
  EXPECT_EQ(join(cas[1], 0x8002), kSaStatusReqInvalid);  // joiner not in it either
  const auto members = sa.McastMembers();
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members.begin()->second, std::vector<EndPort>{cas[0]});
}

}  // namespace
}  // namespace softib::sm

// The ibnetdiscover reader on hand-written dumps: every value asserted, and ibsim's own
// forms (Hca/Rt, w=/s= options, GUID counters).
#include <gtest/gtest.h>

#include <string>

#include "fabric/topology/ibnetdiscover_reader.h"

namespace softib::fabric {
namespace {

// What `ibnetdiscover` prints for two 36-port QDR leaf switches joined by two cables, and
// four hosts; one host is dual-ported and cabled on port 2 only, at 1xDDR. It has every
// annotation form: header comments, vendid/devid/sysimgguid, switchguid=G(portguid),
// enhanced and base port 0, CA port lines with "lid N lmc M", remote port GUIDs in
// parentheses, "-f" rate details (s= w= v=) after the rate, and a '#' line inside a record.
constexpr const char* kTwoSwitchDump = R"(#
# Topology file: generated on Tue Nov 24 10:12:01 2026
#
# Initiated from node 0002c90300a1b2c0 port 0002c90300a1b2c1

vendid=0x2c9
devid=0xbd36
sysimgguid=0x2c902004b7ef3
switchguid=0x2c902004b7ef0(2c902004b7ef0)
Switch	36 "S-0002c902004b7ef0"		# "MF0;sw-leaf-a:IS5030/U1" enhanced port 0 lid 3 lmc 0
[1]	"H-0002c90300a1b2c0"[1](2c90300a1b2c1) 		# "node001 HCA-1" lid 5 4xQDR
[2]	"H-0002c90300a1b2d0"[1](2c90300a1b2d1) 		# "node002 HCA-1" lid 6 4xQDR
[35]	"S-0002c902004b7f10"[35]		# "MF0;sw-leaf-b:IS5030/U1" lid 4 4xQDR
[36]	"S-0002c902004b7f10"[36]		# "MF0;sw-leaf-b:IS5030/U1" lid 4 4xQDR

vendid=0x2c9
devid=0xbd36
sysimgguid=0x2c902004b7f13
switchguid=0x2c902004b7f10(2c902004b7f10)
Switch	36 "S-0002c902004b7f10"		# "MF0;sw-leaf-b:IS5030/U1" base port 0 lid 4 lmc 0
[1]	"H-0002c90300a1b2e0"[1](2c90300a1b2e8) 		# "node003 HCA-1" lid 7 4xQDR s=4 w=2 v=4
# a comment inside the record
[3]	"H-0002c90300a1b2f0"[2](2c90300a1b2f2) 		# "node004 HCA-1" lid 8 1xDDR
[35]	"S-0002c902004b7ef0"[35]		# "MF0;sw-leaf-a:IS5030/U1" lid 3 4xQDR
[36]	"S-0002c902004b7ef0"[36]		# "MF0;sw-leaf-a:IS5030/U1" lid 3 4xQDR

vendid=0x2c9
devid=0x673c
sysimgguid=0x2c90300a1b2c3
caguid=0x2c90300a1b2c0
Ca	2 "H-0002c90300a1b2c0"		# "node001 HCA-1"
[1](2c90300a1b2c1) 	"S-0002c902004b7ef0"[1]		# lid 5 lmc 0 "MF0;sw-leaf-a:IS5030/U1" lid 3 4xQDR

vendid=0x2c9
devid=0x673c
sysimgguid=0x2c90300a1b2d3
caguid=0x2c90300a1b2d0
Ca	2 "H-0002c90300a1b2d0"		# "node002 HCA-1"
[1](2c90300a1b2d1) 	"S-0002c902004b7ef0"[2]		# lid 6 lmc 0 "MF0;sw-leaf-a:IS5030/U1" lid 3 4xQDR

vendid=0x2c9
devid=0x673c
sysimgguid=0x2c90300a1b2e3
caguid=0x2c90300a1b2e0
Ca	1 "H-0002c90300a1b2e0"		# "node003 HCA-1"
[1](2c90300a1b2e8) 	"S-0002c902004b7f10"[1]		# lid 7 lmc 0 "MF0;sw-leaf-b:IS5030/U1" lid 4 4xQDR s=4 w=2 v=4

vendid=0x15b3
devid=0x1003
sysimgguid=0x2c90300a1b2f3
caguid=0x2c90300a1b2f0
Ca	2 "H-0002c90300a1b2f0"		# "node004 HCA-1"
[2](2c90300a1b2f2) 	"S-0002c902004b7f10"[3]		# lid 8 lmc 1 "MF0;sw-leaf-b:IS5030/U1" lid 4 1xDDR
)";

NodeIndex Find(const Topology& t, const std::string& name) {
  auto i = t.FindByName(name);
  EXPECT_TRUE(i.has_value()) << name;
  return i.value_or(0);
}

TEST(IbnetdiscoverReader, TwoSwitchDumpNodes) {
  ReadResult r = ReadIbnetdiscover(kTwoSwitchDump, "dump");
  ASSERT_TRUE(r.ok()) << r.error;
  const Topology& t = *r.topology;
  ASSERT_EQ(t.nodes().size(), 6u);
  EXPECT_EQ(t.Count(NodeType::kSwitch), 2u);
  EXPECT_EQ(t.Count(NodeType::kCa), 4u);
  EXPECT_EQ(t.links().size(), 6u);

  const Node& a = t.node(0);
  EXPECT_EQ(a.type, NodeType::kSwitch);
  EXPECT_EQ(a.name, "S-0002c902004b7ef0");
  EXPECT_EQ(a.description, "MF0;sw-leaf-a:IS5030/U1");
  EXPECT_EQ(a.guid, 0x0002c902004b7ef0u);
  EXPECT_EQ(a.system_image_guid, 0x0002c902004b7ef3u);
  EXPECT_EQ(a.vendor_id, 0x2c9u);
  EXPECT_EQ(a.device_id, 0xbd36u);
  EXPECT_EQ(a.num_ports, 36);
  EXPECT_TRUE(a.enhanced_port0);
  EXPECT_EQ(a.ports[0], (NodePort{0x0002c902004b7ef0u, 3, 0}));

  const Node& b = t.node(1);
  EXPECT_EQ(b.description, "MF0;sw-leaf-b:IS5030/U1");
  EXPECT_FALSE(b.enhanced_port0);
  EXPECT_EQ(b.ports[0].lid, 4);

  const Node& n1 = t.node(2);
  EXPECT_EQ(n1.type, NodeType::kCa);
  EXPECT_EQ(n1.name, "H-0002c90300a1b2c0");
  EXPECT_EQ(n1.description, "node001 HCA-1");
  EXPECT_EQ(n1.guid, 0x0002c90300a1b2c0u);
  EXPECT_EQ(n1.system_image_guid, 0x0002c90300a1b2c3u);
  EXPECT_EQ(n1.device_id, 0x673cu);
  EXPECT_EQ(n1.num_ports, 2);
  EXPECT_EQ(n1.ports[1], (NodePort{0x0002c90300a1b2c1u, 5, 0}));
  EXPECT_EQ(n1.ports[2], (NodePort{0x0002c90300a1b2c2u, 0, 0}));  // not cabled: default

  // The file gives node003's port GUID; it is not node GUID + 1.
  const Node& n3 = t.node(Find(t, "H-0002c90300a1b2e0"));
  EXPECT_EQ(n3.num_ports, 1);
  EXPECT_EQ(n3.ports[1], (NodePort{0x0002c90300a1b2e8u, 7, 0}));

  const Node& n4 = t.node(Find(t, "H-0002c90300a1b2f0"));
  EXPECT_EQ(n4.vendor_id, 0x15b3u);
  EXPECT_EQ(n4.device_id, 0x1003u);
  EXPECT_EQ(n4.ports[2], (NodePort{0x0002c90300a1b2f2u, 8, 1}));
  EXPECT_EQ(n4.ports[1], (NodePort{0x0002c90300a1b2f1u, 0, 0}));
}

TEST(IbnetdiscoverReader, TwoSwitchDumpLinks) {
  ReadResult r = ReadIbnetdiscover(kTwoSwitchDump, "dump");
  ASSERT_TRUE(r.ok()) << r.error;
  const Topology& t = *r.topology;
  const NodeIndex a = Find(t, "S-0002c902004b7ef0"), b = Find(t, "S-0002c902004b7f10");
  const NodeIndex n1 = Find(t, "H-0002c90300a1b2c0"), n2 = Find(t, "H-0002c90300a1b2d0");
  const NodeIndex n3 = Find(t, "H-0002c90300a1b2e0"), n4 = Find(t, "H-0002c90300a1b2f0");

  EXPECT_EQ(t.Peer({a, 1}), (PortRef{n1, 1}));
  EXPECT_EQ(t.Peer({a, 2}), (PortRef{n2, 1}));
  EXPECT_EQ(t.Peer({a, 35}), (PortRef{b, 35}));
  EXPECT_EQ(t.Peer({a, 36}), (PortRef{b, 36}));
  EXPECT_EQ(t.Peer({b, 1}), (PortRef{n3, 1}));
  EXPECT_EQ(t.Peer({b, 3}), (PortRef{n4, 2}));
  EXPECT_EQ(t.Peer({n4, 2}), (PortRef{b, 3}));
  EXPECT_FALSE(t.Peer({n4, 1}).has_value());
  EXPECT_FALSE(t.Peer({b, 2}).has_value());
  EXPECT_FALSE(t.Peer({a, 34}).has_value());

  const Link* isl = t.LinkAt({b, 36});
  ASSERT_NE(isl, nullptr);
  EXPECT_EQ(isl->width, LinkWidth::k4x);
  EXPECT_EQ(isl->speed, LinkSpeed::kQdr);
  const Link* slow = t.LinkAt({n4, 2});
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->width, LinkWidth::k1x);
  EXPECT_EQ(slow->speed, LinkSpeed::kDdr);
  EXPECT_EQ(t.FindByGuid(0x0002c90300a1b2f0u), n4);
}

// ibsim's own dialect: Hca/Rt headers, unquoted descriptions, no GUID lines (counters from
// 0x100000 for CAs and 0x200000 for switches; a CA takes ports+1 GUIDs, a switch one),
// rtguid=, w=/s= options, a missing remote [port] meaning 1, width=/speed= defaults.
TEST(IbnetdiscoverReader, IbsimDialect) {
  const char* text = R"(# ibsim style
width=3
speed=7
Switch	8 "Switch1"
[1]	"Hca1"[1]
[2]	"Hca2"	w=1
[3]	"Switch2"[3]	s=1
[4]	"Router1"[1]

Switch	8 "Switch2" # second switch lid 9 lmc 0
[3]	"Switch1"[3]	# "Switch1" lid 0 4xSDR

Hca	2 "Hca1"
[1]	"Switch1"[1]

Hca 1 "Hca2"	# "host two"
[1]	"Switch1"[2]	w=3

rtguid=0x300000
Rt	1 "Router1"
[1]	"Switch1"[4]
)";
  ReadResult r = ReadIbnetdiscover(text, "ibsim.net");
  ASSERT_TRUE(r.ok()) << r.error;
  const Topology& t = *r.topology;
  ASSERT_EQ(t.nodes().size(), 5u);
  EXPECT_EQ(t.node(0).guid, 0x200000u);
  EXPECT_EQ(t.node(0).description, "Switch1");  // no '#': the node id
  EXPECT_EQ(t.node(1).guid, 0x200001u);
  EXPECT_EQ(t.node(1).description, "second switch");
  EXPECT_EQ(t.node(1).ports[0].lid, 9);
  EXPECT_EQ(t.node(2).guid, 0x100000u);
  EXPECT_EQ(t.node(2).ports[1].guid, 0x100001u);
  EXPECT_EQ(t.node(2).ports[2].guid, 0x100002u);
  EXPECT_EQ(t.node(3).guid, 0x100003u);  // after 2 ports + 1
  EXPECT_EQ(t.node(3).description, "host two");
  EXPECT_EQ(t.node(4).type, NodeType::kRouter);
  EXPECT_EQ(t.node(4).guid, 0x300000u);

  // width=3 (1x|4x) and speed=7 are the defaults: Switch1-Hca1 runs 4x QDR.
  const Link* l = t.LinkAt({0, 1});
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->width, LinkWidth::k4x);
  EXPECT_EQ(l->speed, LinkSpeed::kQdr);
  // w=1 on one end and w=3 on the other: 1x.
  l = t.LinkAt({0, 2});
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->width, LinkWidth::k1x);
  // s=1 against a "4xSDR" annotation: SDR.
  l = t.LinkAt({0, 3});
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->speed, LinkSpeed::kSdr);
  EXPECT_EQ(l->width, LinkWidth::k4x);
  EXPECT_EQ(t.Peer({0, 4}), (PortRef{4, 1}));
}

TEST(IbnetdiscoverReader, GroupingFormsAndRelativeGuids) {
  // ibnetdiscover -g prints Chassis lines and [ext n] groups; switchguid+N is relative.
  const char* text = R"(
Chassis 1 (guid 0x2c902004b7ef0)
switchguid=0x1000
switchguid+5
Switch	4 "S-a"		# "a" base port 0 lid 1 lmc 0
[1][ext 1]	"H-b"[1]		# "b" lid 2 4xEDR
caguid=0x2000
Ca	1 "H-b"		# "b"
[1](2001) 	"S-a"[1][ext 1]		# lid 2 lmc 0 "a" lid 1 4xEDR
)";
  ReadResult r = ReadIbnetdiscover(text, "g");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.topology->node(0).guid, 0x1005u);
  EXPECT_EQ(r.topology->node(0).ports[0].guid, 0x1005u);
  EXPECT_EQ(r.topology->links()[0].speed, LinkSpeed::kEdr);
}

// "# lid 3 4xQDR" on a CA line: ibsim reads lid 3 as the port's LID and 4xQDR as the rate.
TEST(IbnetdiscoverReader, CaLineWithOnlyLidAndRate) {
  const char* text =
      "Switch 4 \"S-1\"\n[1] \"H-2\"[1] # lid 3 1xDDR\n"
      "Ca 1 \"H-2\"\n[1] \"S-1\"[1] # lid 3 1xDDR\n";
  ReadResult r = ReadIbnetdiscover(text, "t");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.topology->node(1).ports[1].lid, 3);
  EXPECT_EQ(r.topology->links()[0].width, LinkWidth::k1x);
  EXPECT_EQ(r.topology->links()[0].speed, LinkSpeed::kDdr);
}

TEST(IbnetdiscoverReader, CrLfAndMissingFile) {
  const char* text =
      "switchguid=0x10\r\nSwitch 2 \"S-1\" # \"s\"\r\n[1] \"H-2\"[1] # \"h\" lid 0 4xQDR\r\n"
      "caguid=0x20\r\nCa 1 \"H-2\" # \"h\"\r\n[1](21) \"S-1\"[1] # lid 0 lmc 0 \"s\" lid 0 "
      "4xQDR\r\n";
  ReadResult r = ReadIbnetdiscover(text, "crlf");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.topology->links().size(), 1u);

  ReadResult missing = ReadIbnetdiscoverFile("/nonexistent/softib-topo.net");
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.error, "/nonexistent/softib-topo.net: cannot open: No such file or directory");
}

}  // namespace
}  // namespace softib::fabric

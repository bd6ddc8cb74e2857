// The writer: exact text for a small topology, and read(write(t)) == t.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

namespace softib::fabric {
namespace {

Topology OneSwitchTwoHosts() {
  Topology t;
  Node sw = MakeNode(NodeType::kSwitch, "S-0002c90200400001", "leaf-01", 0x0002c90200400001, 8);
  sw.vendor_id = 0x2c9;
  sw.device_id = 0xbd36;
  sw.enhanced_port0 = true;
  sw.ports[0].lid = 1;
  t.AddNode(sw);
  Node h1 = MakeNode(NodeType::kCa, "H-0002c90300a00010", "host-0001 HCA-1", 0x0002c90300a00010, 2);
  h1.vendor_id = 0x2c9;
  h1.device_id = 0x673c;
  h1.ports[1].lid = 2;
  t.AddNode(h1);
  Node h2 = MakeNode(NodeType::kCa, "H-0002c90300a00020", "host-0002 HCA-1", 0x0002c90300a00020, 1);
  h2.system_image_guid = 0x0002c90300a000ff;
  h2.ports[1].lid = 4;
  h2.ports[1].lmc = 1;
  t.AddNode(h2);
  t.AddLink({{0, 1}, {1, 1}, LinkWidth::k4x, LinkSpeed::kQdr});
  t.AddLink({{2, 1}, {0, 3}, LinkWidth::k12x, LinkSpeed::kEdr});
  return t;
}

TEST(IbnetdiscoverWriter, ExactText) {
  const WriteResult w = WriteIbnetdiscover(OneSwitchTwoHosts());
  ASSERT_TRUE(w.ok()) << w.error;
  EXPECT_EQ(
      w.text,
      "#\n# Topology file: written by softib (ibnetdiscover format)\n#\n"
      "# 1 switches, 2 CAs, 0 routers, 2 links\n"
      "\nvendid=0x2c9\ndevid=0xbd36\nsysimgguid=0x2c90200400001\n"
      "switchguid=0x2c90200400001(2c90200400001)\n"
      "Switch\t8 \"S-0002c90200400001\"\t\t# \"leaf-01\" enhanced port 0 lid 1 lmc 0\n"
      "[1]\t\"H-0002c90300a00010\"[1](2c90300a00011) \t\t# \"host-0001 HCA-1\" lid 2 4xQDR\n"
      "[3]\t\"H-0002c90300a00020\"[1](2c90300a00021) \t\t# \"host-0002 HCA-1\" lid 4 12xEDR\n"
      "\nvendid=0x2c9\ndevid=0x673c\nsysimgguid=0x2c90300a00010\n"
      "caguid=0x2c90300a00010\n"
      "Ca\t2 \"H-0002c90300a00010\"\t\t# \"host-0001 HCA-1\"\n"
      "[1](2c90300a00011) \t\"S-0002c90200400001\"[1]\t\t# lid 2 lmc 0 \"leaf-01\" lid 1 4xQDR\n"
      "\nvendid=0x0\ndevid=0x0\nsysimgguid=0x2c90300a000ff\n"
      "caguid=0x2c90300a00020\n"
      "Ca\t1 \"H-0002c90300a00020\"\t\t# \"host-0002 HCA-1\"\n"
      "[1](2c90300a00021) \t\"S-0002c90200400001\"[3]\t\t# lid 4 lmc 1 \"leaf-01\" lid 1 "
      "12xEDR\n");
}

TEST(IbnetdiscoverWriter, RoundTripSmall) {
  Topology t = OneSwitchTwoHosts();
  ASSERT_EQ(t.Validate(), "");
  const WriteResult w = WriteIbnetdiscover(t);
  ASSERT_TRUE(w.ok());
  ReadResult r = ReadIbnetdiscover(w.text, "written");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.topology == t);
  // And the text is a fixed point.
  EXPECT_EQ(WriteIbnetdiscover(*r.topology).text, w.text);
}

TEST(IbnetdiscoverWriter, CaToCaLinkAndRouter) {
  Topology t;
  t.AddNode(MakeNode(NodeType::kCa, "H-1", "a", 0x10, 1));
  t.AddNode(MakeNode(NodeType::kCa, "H-2", "b", 0x20, 1));
  Node rt = MakeNode(NodeType::kRouter, "R-3", "router", 0x30, 2);
  t.AddNode(rt);
  t.AddLink({{0, 1}, {1, 1}, LinkWidth::k1x, LinkSpeed::kSdr});
  ASSERT_EQ(t.Validate(), "");
  const WriteResult w = WriteIbnetdiscover(t);
  ASSERT_TRUE(w.ok());
  EXPECT_NE(w.text.find("[1](11) \t\"H-2\"[1](21) \t\t# lid 0 lmc 0 \"b\" lid 0 1xSDR\n"),
            std::string::npos)
      << w.text;
  EXPECT_NE(w.text.find("rtguid=0x30\nRt\t2 \"R-3\"\t\t# \"router\"\n"), std::string::npos);
  ReadResult r = ReadIbnetdiscover(w.text);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.topology == t);
}

TEST(IbnetdiscoverWriter, RoundTripHandDumpAfterNormalising) {
  // A real-looking dump read, written, read again: the same topology.
  const char* dump =
      "vendid=0x2c9\ndevid=0xbd36\nsysimgguid=0x2c902004b7ef3\n"
      "switchguid=0x2c902004b7ef0(2c902004b7ef0)\n"
      "Switch\t36 \"S-0002c902004b7ef0\"\t\t# \"MF0;sw:IS5030/U1\" enhanced port 0 lid 3 lmc 0\n"
      "[1]\t\"H-0002c90300a1b2c0\"[1](2c90300a1b2c9) \t\t# \"node001 HCA-1\" lid 5 4xFDR\n"
      "\nvendid=0x2c9\ndevid=0x673c\nsysimgguid=0x2c90300a1b2c3\ncaguid=0x2c90300a1b2c0\n"
      "Ca\t2 \"H-0002c90300a1b2c0\"\t\t# \"node001 HCA-1\"\n"
      "[1](2c90300a1b2c9) \t\"S-0002c902004b7ef0\"[1]\t\t# lid 5 lmc 2 \"MF0;sw:IS5030/U1\" lid 3 "
      "4xFDR\n";
  ReadResult first = ReadIbnetdiscover(dump, "dump");
  ASSERT_TRUE(first.ok()) << first.error;
  const WriteResult w = WriteIbnetdiscover(*first.topology);
  ReadResult second = ReadIbnetdiscover(w.text, "rewritten");
  ASSERT_TRUE(second.ok()) << second.error;
  EXPECT_TRUE(*first.topology == *second.topology);
  EXPECT_EQ(second.topology->node(1).ports[1], (NodePort{0x2c90300a1b2c9, 5, 2}));
}

TEST(IbnetdiscoverWriter, InvalidTopologyIsNotWritten) {
  Topology t = OneSwitchTwoHosts();
  t.mutable_node(1).description = "";
  const WriteResult w = WriteIbnetdiscover(t);
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(w.text, "");
  EXPECT_EQ(w.error, "node H-0002c90300a00010: empty node description");
}

TEST(IbnetdiscoverWriter, FileRoundTrip) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("softib-topo-writer-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "small.net").string();
  Topology t = OneSwitchTwoHosts();
  ASSERT_EQ(WriteIbnetdiscoverFile(t, path), "");
  ReadResult r = ReadIbnetdiscoverFile(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(*r.topology == t);
  EXPECT_EQ(WriteIbnetdiscoverFile(t, (dir / "no/such/dir.net").string()),
            (dir / "no/such/dir.net").string() + ": cannot create: No such file or directory");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace softib::fabric

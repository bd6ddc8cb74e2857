// Malformed topology files: each gives exactly one "source:line: message" and no topology.
#include <gtest/gtest.h>

#include <string>

#include "fabric/topology/ibnetdiscover_reader.h"

namespace softib::fabric {
namespace {

// A valid two-node file the cases below break one way each (lines 1..6).
constexpr const char* kSwitchHead =
    "switchguid=0x10\nSwitch\t4 \"S-1\"\t\t# \"sw\" base port 0 lid 1 lmc 0\n";
constexpr const char* kCaRecord =
    "caguid=0x20\nCa\t1 \"H-2\"\t\t# \"host\"\n"
    "[1](21) \t\"S-1\"[1]\t\t# lid 2 lmc 0 \"sw\" lid 1 4xQDR\n";
constexpr const char* kSwitchPort = "[1]\t\"H-2\"[1](21) \t\t# \"host\" lid 2 4xQDR\n";

std::string Valid() { return std::string(kSwitchHead) + kSwitchPort + kCaRecord; }

struct Case {
  const char* name;
  std::string text;
  std::string error;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ReaderErrors : public ::testing::TestWithParam<Case> {};

TEST_P(ReaderErrors, GivesLineAndMessage) {
  const Case& c = GetParam();
  ReadResult r = ReadIbnetdiscover(c.text, "t.net");
  EXPECT_FALSE(r.topology.has_value());
  EXPECT_EQ(r.error, c.error);
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

const Case kCases[] = {
    {"Empty", "", "t.net: no nodes (expected Switch/Ca/Hca/Rt records)"},
    {"OnlyComments", "# nothing\n\n", "t.net: no nodes (expected Switch/Ca/Hca/Rt records)"},
    {"UnknownStatement", "Swtich 4 \"S-1\"\n", "t.net:1: unknown statement 'Swtich'"},
    {"PortOutsideNode", "[1] \"H-2\"[1]\n",
     "t.net:1: port line outside a node record (a Switch/Ca header must come first)"},
    {"HeaderNoPorts", "Switch \"S-1\"\n", "t.net:1: node header needs a port count"},
    {"HeaderTooManyPorts", "Switch 255 \"S-1\"\n", "t.net:1: port count 255 out of range 1..254"},
    {"HeaderNoName", "Switch 4 S-1\n", "t.net:1: node header without a quoted node id"},
    {"HeaderUnterminated", "Switch 4 \"S-1\n", "t.net:1: unterminated quoted string"},
    {"HeaderJunk", "Switch 4 \"S-1\" junk\n", "t.net:1: unexpected text 'junk' after the node id"},
    {"NameWithHash", "Switch 4 \"S#1\"\n",
     "t.net:1: bad node id 'S#1' (1..64 characters, no # or @)"},
    {"EmptyDescription", "Switch 4 \"S-1\" # \"\"\n", "t.net:1: empty node description"},
    {"LongDescription", "Switch 4 \"S-1\" # \"" + std::string(65, 'd') + "\"\n",
     "t.net:1: node description is 65 bytes; at most 64"},
    {"BadSwitchLid", Replace(Valid(), "lid 1 lmc 0\n", "lid 49152 lmc 0\n"),
     "t.net:2: LID 49152 is not a unicast LID"},
    {"BadLmc", Replace(Valid(), "lid 2 lmc 0", "lid 2 lmc 8"), "t.net:6: LMC 8 out of range 0..7"},
    {"BadGuid", "switchguid=0xzz\n", "t.net:1: switchguid: bad number '0xzz'"},
    {"GuidMissingEquals", "caguid 0x20\n", "t.net:1: caguid: missing '=' or '+'"},
    {"VendidTooWide", "vendid=0x1000000\n", "t.net:1: vendid 0x1000000 does not fit in 24 bits"},
    {"PortOutOfRange", Replace(Valid(), "[1]\t\"H-2\"", "[5]\t\"H-2\""),
     "t.net:3: port 5 out of range: S-1 has 4 ports"},
    {"PortZero", Replace(Valid(), "[1]\t\"H-2\"", "[0]\t\"H-2\""),
     "t.net:3: port 0 cannot be cabled"},
    {"PortTwice", std::string(kSwitchHead) + kSwitchPort + kSwitchPort + kCaRecord,
     "t.net:4: port 1 of S-1 described twice (first on line 3)"},
    {"BadPortNumber", Replace(Valid(), "[1]\t\"H-2\"", "[x]\t\"H-2\""),
     "t.net:3: bad port number 'x]\t\"H-2\"[1](21) \t\t# \"host\" lid 2 4xQDR'"},
    {"NoRemote", Replace(Valid(), "[1]\t\"H-2\"[1](21)", "[1]\tH-2"),
     "t.net:3: port line without a quoted remote node id"},
    {"UnknownRemote", Replace(Valid(), "[1]\t\"H-2\"", "[1]\t\"H-9\""),
     "t.net:3: S-1 port 1 goes to unknown node \"H-9\""},
    {"RemotePortOutOfRange", Replace(Valid(), "\"H-2\"[1](21)", "\"H-2\"[2](21)"),
     "t.net:3: S-1 port 1 goes to port 2 of H-2, which has ports 1..1"},
    {"OneSided", Replace(Valid(), "\"S-1\"[1]\t", "\"S-1\"[2]\t"),
     "t.net:3: asymmetric link: S-1 port 1 goes to H-2 port 1, but H-2 port 1 (line 6) goes to S-1 "
     "port 2"},
    {"NotDescribedBack", std::string(kSwitchHead) + kSwitchPort + "[2]\t\"H-2\"[1]\n" + kCaRecord,
     "t.net:4: asymmetric link: S-1 port 2 goes to H-2 port 1, but H-2 port 1 (line 7) goes to S-1 "
     "port 1"},
    {"MissingBackLine",
     std::string(kSwitchHead) + kSwitchPort + "caguid=0x20\nCa\t1 \"H-2\"\t\t# \"host\"\n",
     "t.net:3: asymmetric link: S-1 port 1 goes to H-2 port 1, but there is no line for H-2 port "
     "1"},
    {"RateMismatch", Replace(Valid(), "\"sw\" lid 1 4xQDR", "\"sw\" lid 1 1xQDR"),
     "t.net:3: asymmetric link: S-1 port 1 says 4xQDR but H-2 port 1 (line 6) says 1xQDR"},
    {"UnknownSpeed", Replace(Valid(), "\"host\" lid 2 4xQDR", "\"host\" lid 2 4xXDR"),
     "t.net:3: unknown link speed 'XDR'"},
    {"UnknownWidth", Replace(Valid(), "\"host\" lid 2 4xQDR", "\"host\" lid 2 3xQDR"),
     "t.net:3: unknown link width '3x'"},
    {"BadWidthOption", Replace(Valid(), "[1]\t\"H-2\"[1](21) ", "[1]\t\"H-2\"[1](21) w=32 "),
     "t.net:3: bad width 32 (mask 1..31)"},
    {"NoCommonWidth", "Switch 4 \"S-1\"\n[1] \"H-2\"[1] w=1\nCa 1 \"H-2\"\n[1] \"S-1\"[1] w=2\n",
     "t.net:2: no common link width between S-1 port 1 and H-2 port 1"},
    {"JunkOnPortLine", Replace(Valid(), "[1]\t\"H-2\"[1](21) ", "[1]\t\"H-2\"[1](21) fast "),
     "t.net:3: unexpected text 'fast' on a port line"},
    {"RemoteGuidMismatch", Replace(Valid(), "\"H-2\"[1](21)", "\"H-2\"[1](22)"),
     "t.net:3: port GUID 0x22 given for H-2 port 1 differs from 0x21 (line 6)"},
    {"DuplicateName", "Switch 4 \"S-1\"\nSwitch 4 \"S-1\"\n",
     "t.net:2: duplicate node id 'S-1' (first on line 1)"},
    {"DuplicateGuid", "switchguid=0x10\nSwitch 4 \"S-1\"\nswitchguid=0x10\nSwitch 4 \"S-2\"\n",
     "t.net:4: duplicate node GUID 0x10 (first on line 2)"},
    {"DuplicatePortGuid", Replace(Replace(Valid(), "(21)", "(10)"), "(21)", "(10)"),
     "t.net:5: node H-2 port 1: duplicate port GUID 0x0000000000000010 (also a port of S-1)"},
    {"CabledToItself", "Switch 4 \"S-1\"\n[1] \"S-1\"[1]\n",
     "t.net:2: S-1 port 1 is cabled to itself"},
    {"Alias", "Switch 4 \"S-1\"\n@1 \"x\"\n",
     "t.net:2: port aliases ('@' lines) are not supported"},
    {"Include", "include \"other.net\"\n",
     "t.net:1: 'include' (an ibsim extension) is not supported"},
    {"RouterGuidZero", "Rt 1 \"R-1\"\n", "t.net:1: node R-1: node GUID is 0"},
};

INSTANTIATE_TEST_SUITE_P(Table, ReaderErrors, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(ReaderErrorsTable, HasEnoughCases) { EXPECT_GE(std::size(kCases), 15u); }

TEST(ReaderErrorsTable, BaseFileIsValid) {
  ReadResult r = ReadIbnetdiscover(Valid(), "t.net");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.topology->links().size(), 1u);
}

}  // namespace
}  // namespace softib::fabric
